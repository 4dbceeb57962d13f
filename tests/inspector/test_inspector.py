"""The accumulator inspector, against librdkafka's mock cluster and a real broker.

Waiting is always "until the condition holds or a generous deadline passes": no
assertion depends on how fast anything is.
"""

from __future__ import annotations

import collections
import io
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import cykafka
from cykafka import Producer
from cykafka.inspector import (
    PARTITION_STATES,
    AccumulatorSnapshot,
    inspector_of,
)
from cykafka.testing import MockCluster
from support.librdkafka import stuck_config

# librdkafka's mock cluster (in this process) or a real broker: not a unit test.
pytestmark = pytest.mark.broker

DEADLINE_S = 60.0


def wait_for(
    producer: Producer, cond: Callable[[AccumulatorSnapshot], bool], what: str
) -> AccumulatorSnapshot:
    """The first snapshot for which ``cond`` holds; fails with the last one after a
    generous deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        snap = producer.accumulator()
        try:
            ok = snap.stats_age_s is not None and cond(snap)
        except KeyError:
            # Statistics emitted before librdkafka knew the partition do not list it:
            # not yet, rather than a failure.
            ok = False
        if ok:
            return snap
        if time.monotonic() > deadline:
            pytest.fail(f"never saw {what}; last snapshot: {json.dumps(snap.to_dict())}")
        time.sleep(0.02)


def fresh(
    producer: Producer, cond: Callable[[AccumulatorSnapshot], bool], what: str
) -> AccumulatorSnapshot:
    """Like wait_for, but only from statistics emitted after this call."""
    start = producer.accumulator().stats_count
    return wait_for(producer, lambda s: s.stats_count > start + 1 and cond(s), what)


@pytest.fixture
def cluster() -> Iterator[Any]:
    with MockCluster(num_brokers=3) as mc:
        yield mc


@pytest.fixture
def quiet_librdkafka() -> Iterator[None]:
    # A downed mock broker makes librdkafka log connection refusals: expected here.
    logger = logging.getLogger("cykafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


def mock_producer(cluster: Any, **config: Any) -> Producer:
    conf = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "linger.ms": 5,
        "batch.num.messages": 10,
        **config,
    }
    return Producer(conf, inspect_interval_ms=50)


def warm_up(p: Producer, topic: str, partitions: int) -> None:
    """Connect to every leader before the test slows the brokers down."""
    for part in range(partitions):
        p.produce(topic, b"warm-up", partition=part)
    assert p.flush(30) == 0


def test_waiting_messages_show_as_queued_and_in_flight(cluster: Any) -> None:
    topic = cluster.create_topic("slow", partitions=3)
    with mock_producer(cluster, **{"max.in.flight": 1}) as p:
        warm_up(p, topic, 3)
        leaders = {
            k[1]: ps.leader
            for k, ps in wait_for(
                p,
                lambda s: (
                    len(s.partitions) == 3 and all(ps.leader >= 0 for ps in s.partitions.values())
                ),
                "leaders",
            ).partitions.items()
        }
        for b in (1, 2, 3):
            cluster.set_rtt(b, 2000)
        produced = {0: 100, 1: 40}
        for part, n in produced.items():
            p.produce_batch(topic, [b"v%d" % i for i in range(n)], partitions=[part] * n)

        def both_waiting(s: AccumulatorSnapshot) -> bool:
            # Statistics are emitted on librdkafka's timer: a snapshot taken from ones
            # emitted while produce_batch was still handing over counts only part of
            # the batch (enqueued), so wait for statistics that saw all of it.
            return all(
                s.partitions[(topic, part)].enqueued >= n + 1
                and s.partitions[(topic, part)].in_flight_msgs > 0
                and s.partitions[(topic, part)].waiting_msgs > 0
                for part, n in produced.items()
            )

        snap = wait_for(p, both_waiting, "messages waiting behind an in-flight request")
        for part, n in produced.items():
            ps = snap.partitions[(topic, part)]
            # Every message of the partition is accounted for: done, waiting or in flight.
            assert ps.delivered + ps.failed - 1 + ps.unfinished_msgs == n, ps
            assert ps.in_flight_msgs <= 20  # max.in.flight=1: one request out, one built
            # messages wait while the leader's only in-flight slot is taken
            assert ps.state == "muted", ps
            broker = snap.brokers[leaders[part]]
            assert broker.max_in_flight == 1
            assert broker.in_flight_requests == 1
            assert broker.in_flight_msgs > 0
            assert (topic, part) in broker.partitions
        idle = snap.partitions[(topic, 2)]
        assert idle.unfinished_msgs == 0 and idle.state == "idle"
        if leaders[2] not in (leaders[0], leaders[1]):
            assert snap.brokers[leaders[2]].in_flight_requests == 0
        assert snap.failed == 0
        assert snap.pending == sum(produced.values()) - (snap.delivered - 3)
        json.dumps(snap.to_dict())

        for b in (1, 2, 3):
            cluster.set_rtt(b, 0)
        assert p.flush(60) == 0
        done = fresh(p, lambda s: s.queued_msgs == 0 and s.in_flight_msgs == 0, "empty queues")
        assert done.pending == 0 and done.failed == 0
        assert done.delivered == done.produced == sum(produced.values()) + 3
        assert done.queued_bytes == 0 and done.msgs_fill == 0.0
        for (_, part), ps in done.partitions.items():
            assert (ps.queued_msgs, ps.queued_bytes, ps.xmit_msgs, ps.in_flight_msgs) == (
                0,
                0,
                0,
                0,
            )
            assert ps.state == "idle"
            assert ps.delivered == produced.get(part, 0) + 1
            assert ps.last_acked_offset == ps.delivered - 1
        for b in done.brokers.values():
            assert b.in_flight_requests == 0 and b.waiting_requests == 0


def _only(s: AccumulatorSnapshot, topic: str, busy: int, state: str) -> bool:
    """``busy`` is in ``state`` and the topic's other partitions are idle (the
    snapshot knows all three)."""
    mine = {part: ps.state for (t, part), ps in s.partitions.items() if t == topic}
    return (
        len(mine) == 3
        and mine[busy] == state
        and all(st == "idle" for part, st in mine.items() if part != busy)
    )


def test_state_accumulating_while_linger_holds_a_partial_batch(cluster: Any) -> None:
    topic = cluster.create_topic("linger", partitions=3)
    with mock_producer(cluster, **{"linger.ms": 20000, "batch.num.messages": 1000}) as p:
        warm_up(p, topic, 3)
        p.produce_batch(topic, [b"a"] * 5, partitions=[1] * 5)
        snap = wait_for(
            p, lambda s: _only(s, topic, 1, "accumulating"), "accumulating on partition 1"
        )
        ps = snap.partitions[(topic, 1)]
        # five messages wait for the batch to fill or linger.ms to pass; none sent
        assert ps.waiting_msgs == 5 and ps.in_flight_msgs == 0 and ps.delivered == 1, ps
        assert ps.oldest_age_s is not None and ps.oldest_age_s < 20.0
        assert snap.brokers[ps.leader].in_flight_requests == 0
        t0 = time.monotonic()
        assert p.flush(30) == 0  # flush() does not wait for linger.ms
        assert time.monotonic() - t0 < 15
        assert p.accumulator().partitions[(topic, 1)].delivered == 6


def test_state_ready_when_full_batches_wait_for_a_slow_broker(cluster: Any) -> None:
    # A flood into one partition through a slow broker (RTT 50 ms) with the in-flight
    # window not full: complete batches (batch.num.messages=10) pile up faster than
    # the broker thread sends them.
    topic = cluster.create_topic("flood", partitions=3)
    with mock_producer(cluster, **{"queue.buffering.max.messages": 1000000}) as p:
        warm_up(p, topic, 3)
        for b in (1, 2, 3):
            cluster.set_rtt(b, 50)
        for _ in range(20):
            p.produce_batch(topic, [b"v" * 100] * 10000, partitions=[1] * 10000)
        snap = wait_for(p, lambda s: _only(s, topic, 1, "ready"), "ready on partition 1")
        ps = snap.partitions[(topic, 1)]
        broker = snap.brokers[ps.leader]
        assert ps.waiting_msgs >= 10, ps  # at least a full batch
        assert broker.in_flight_requests < broker.max_in_flight  # not muted
        assert broker.state == "UP"
        for b in (1, 2, 3):
            cluster.set_rtt(b, 0)
        assert p.flush(60) == 0
        assert p.accumulator().partitions[(topic, 1)].delivered == 200001


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_batch_handed_to_its_partition_is_counted_there(cluster: Any, partitions: int) -> None:
    """produce_batch hands messages whose partition is decided (the topic's only one, or
    a key the partitioner hashes) to that partition itself, and librdkafka's "msgs"
    statistic leaves them out: the inspector still shows each one on its partition,
    unfinished while the broker is slow (not an idle partition), and delivered after."""
    from cykafka.partitioning import partition_for

    topic = cluster.create_topic(f"direct{partitions}", partitions=partitions)
    n = 3000
    keys = None if partitions == 1 else [b"key-%d" % (i % 11) for i in range(n)]
    per_part = collections.Counter(
        [0] * n
        if keys is None
        else [partition_for("consistent_random", k, partitions) for k in keys]
    )
    w = collections.Counter({partition_for("consistent_random", b"w", partitions): 300})
    with mock_producer(cluster) as p:
        warm_up(p, topic, partitions)
        # The partition count is read (and kept for a second) by the batch path's own
        # metadata request, which the slow broker below would time out.
        assert p.produce_batch(topic, [b"w"] * 300, [b"w"] * 300).result(30).ok
        for b in (1, 2, 3):
            cluster.set_rtt(b, 3000)
        p.produce_batch(topic, [b"v%d" % i for i in range(n)], keys)
        snap = wait_for(
            p,
            lambda s: all(
                s.partitions[(topic, q)].unfinished_msgs == per_part[q] for q in per_part
            ),
            "every message unfinished on its partition",
        )
        for q, m in per_part.items():
            ps = snap.partitions[(topic, q)]
            assert ps.enqueued == m + 1 + w[q] and ps.state != "idle", ps  # + the warm-ups
        for b in (1, 2, 3):
            cluster.set_rtt(b, 0)
        assert p.flush(60) == 0
        done = wait_for(
            p,
            lambda s: all(
                s.partitions[(topic, q)].delivered == m + 1 + w[q] for q, m in per_part.items()
            ),
            "every message delivered",
        )
        assert all(done.partitions[(topic, q)].unfinished_msgs == 0 for q in per_part)


@pytest.mark.parametrize("partitions", [1, 3])
def test_produced_messages_handed_to_their_partition_are_counted_there(
    cluster: Any, partitions: int
) -> None:
    """produce() hands its staged messages to their partition itself when every one's
    is decided (the topic's only one, or keys the partitioner hashes, in runs), so
    librdkafka's "msgs" statistic leaves them out: the inspector still counts each one
    on its partition, enqueued and delivered."""
    from cykafka.partitioning import partition_for

    topic = cluster.create_topic(f"staged{partitions}", partitions=partitions)
    n = 3000
    keys = [None] * n if partitions == 1 else [b"key-%d" % (i // 300) for i in range(n)]
    per_part = collections.Counter(
        [0] * n if partitions == 1 else [partition_for("consistent_random", k, 3) for k in keys]
    )
    with mock_producer(cluster) as p:
        warm_up(p, topic, partitions)
        futures = [p.produce(topic, b"v%d" % i, k) for i, k in enumerate(keys)]
        assert p.flush(60) == 0
        assert [f.result().partition for f in futures[:: n // 10]] == [
            0 if k is None else partition_for("consistent_random", k, 3) for k in keys[:: n // 10]
        ]
        # Statistics emitted after every hand-over: counts final, direct counts in.
        done = fresh(
            p,
            lambda s: all(s.partitions[(topic, q)].delivered == m + 1 for q, m in per_part.items()),
            "every message delivered",
        )
        for q, m in per_part.items():
            ps = done.partitions[(topic, q)]
            assert ps.enqueued == m + 1 and ps.unfinished_msgs == 0, ps  # + the warm-up
        # Handed over with their partition: not in "msgs", counted by cykafka.
        direct = p._last_stats()[3] or {}
        assert sum(v for (t, _), v in direct.items() if t == topic) > 0, direct


def test_state_in_flight_while_a_request_awaits_its_response(cluster: Any) -> None:
    topic = cluster.create_topic("rtt", partitions=3)
    with mock_producer(cluster) as p:
        warm_up(p, topic, 3)
        for b in (1, 2, 3):
            cluster.set_rtt(b, 3000)
        p.produce_batch(topic, [b"f"] * 5, partitions=[2] * 5)
        # librdkafka counts a partition's messages in flight once their ProduceRequest
        # is built, before the broker thread writes it: statistics taken in between
        # show the request awaiting transmission (outbuf_cnt), not a response.
        snap = wait_for(
            p,
            lambda s: (
                _only(s, topic, 2, "in_flight")
                and s.brokers[s.partitions[(topic, 2)].leader].in_flight_requests >= 1
            ),
            "in_flight on partition 2 with its request sent",
        )
        ps = snap.partitions[(topic, 2)]
        assert ps.in_flight_msgs == 5 and ps.waiting_msgs == 0 and ps.delivered == 1, ps
        assert (topic, 2) in snap.brokers[ps.leader].partitions
        for b in (1, 2, 3):
            cluster.set_rtt(b, 0)
        assert p.flush(30) == 0


def test_partition_of_a_down_leader_keeps_its_messages(
    cluster: Any, quiet_librdkafka: None
) -> None:
    topic = cluster.create_topic("down", partitions=3)
    with mock_producer(cluster, **{"message.timeout.ms": 300000}) as p:
        warm_up(p, topic, 3)
        # Leaders come from the statistics: the rows an idle producer gets from its
        # exact counters alone (leader -1) would satisfy a bare count of partitions.
        snap = wait_for(
            p,
            lambda s: (
                len(s.partitions) == 3 and all(ps.leader >= 0 for ps in s.partitions.values())
            ),
            "partitions with their leaders",
        )
        victim = snap.partitions[(topic, 0)].leader
        others = [part for part in (1, 2) if snap.partitions[(topic, part)].leader != victim]
        cluster.set_broker_down(victim)
        p.produce_batch(topic, [b"x"] * 30, partitions=[0] * 30)
        for part in others:
            p.produce_batch(topic, [b"y"] * 5, partitions=[part] * 5)

        stuck = wait_for(
            p,
            lambda s: (
                s.partitions[(topic, 0)].state in ("no_leader", "backing_off")
                and s.partitions[(topic, 0)].unfinished_msgs == 30
                and all(s.partitions[(topic, o)].delivered == 6 for o in others)
            ),
            "the partition of the downed leader stuck, the others delivered",
        )
        ps = stuck.partitions[(topic, 0)]
        assert ps.delivered == 1 and ps.failed == 0
        assert stuck.failed == 0 and stuck.pending == 30  # queued, not lost
        assert ps.oldest_age_s is not None
        assert "no_leader" in stuck.log_line() or "backing_off" in stuck.log_line()

        cluster.set_broker_up(victim)
        assert p.flush(120) == 0
        done = p.accumulator()
        assert done.failed == 0 and done.delivered == done.produced == 33 + 5 * len(others)
        assert done.partitions[(topic, 0)].delivered == 31


def test_idempotence_state_is_reported(cluster: Any) -> None:
    topic = cluster.create_topic("eos", partitions=1)
    with mock_producer(cluster, **{"enable.idempotence": True}) as p:
        warm_up(p, topic, 1)
        p.produce_batch(topic, [b"e"] * 20)
        assert p.flush(30) == 0
        snap = fresh(
            p,
            lambda s: s.eos is not None and s.partitions[(topic, 0)].next_ack_seq == 21,
            "eos figures",
        )
        assert snap.eos is not None
        assert snap.eos.producer_id >= 0 and snap.eos.producer_epoch >= 0
        assert snap.eos.idempotence_state == "Assigned"
        assert snap.partitions[(topic, 0)].acked_msgid == 21
        json.dumps(snap.to_dict())


def test_counts_agree_with_what_the_broker_holds(
    broker: Any, topic: Callable[..., str], read_back: Callable[..., Any]
) -> None:
    name = topic(partitions=3)
    with Producer({"bootstrap.servers": broker.bootstrap_servers}, inspect_interval_ms=100) as p:
        p.produce_batch(
            name, [b"m%d" % i for i in range(300)], keys=[b"%d" % i for i in range(300)]
        ).result(60)
        assert p.flush(30) == 0
        snap = fresh(
            p,
            lambda s: len(s.partitions) == 3 and s.in_flight_msgs == 0 and s.queued_msgs == 0,
            "a settled snapshot",
        )
    records = read_back(broker.bootstrap_servers, name, expected=300)
    assert snap.delivered == snap.produced == 300 and snap.pending == 0
    for part, recs in records.items():
        ps = snap.partitions[(name, part)]
        assert ps.delivered == len(recs)
        assert ps.last_acked_offset == (recs[-1].offset if recs else -1)
    data = json.loads(json.dumps(snap.to_dict()))
    assert set(data["partitions"]) == {f"{name}[{i}]" for i in range(3)}
    assert all(ps.state in PARTITION_STATES for ps in snap.partitions.values())


def test_live_view_renders_partition_rows(broker: Any, topic: Callable[..., str]) -> None:
    from rich.console import Console

    name = topic(partitions=2)
    console = Console(record=True, width=200, force_terminal=True, file=io.StringIO())
    with Producer({"bootstrap.servers": broker.bootstrap_servers}, inspect_interval_ms=50) as p:
        with p.inspect_live(0.05, console=console):
            p.produce_batch(name, [b"x"] * 50, partitions=[0, 1] * 25).result(60)
            fresh(p, lambda s: len(s.partitions) == 2, "both partitions")
        text = console.export_text()
        static = Console(record=True, width=200, file=io.StringIO())
        static.print(p.accumulator().table())
        table = static.export_text()
    for out in (text, table):
        assert f"{name}[0]" in out and f"{name}[1]" in out
        assert "partitions" in out and "brokers" in out
    row = next(line for line in table.splitlines() if f"{name}[1]" in line)
    assert "idle" in row and "25" in row  # state and delivered count of that row


def test_live_view_degrades_to_lines_off_a_terminal(broker: Any, topic: Callable[..., str]) -> None:
    name = topic(partitions=1)
    out = io.StringIO()  # not a terminal
    with Producer({"bootstrap.servers": broker.bootstrap_servers}, inspect_interval_ms=50) as p:
        with p.inspect_live(0.05, file=out, log_interval=0.05):
            p.produce_batch(name, [b"x"] * 10).result(60)
            fresh(p, lambda s: (name, 0) in s.partitions, "the partition")
        pname = p.name
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith(f"{pname}: pending") for line in lines)
    assert "delivered 10" in lines[-1]
    assert "\x1b[" not in out.getvalue()  # no terminal control codes


def test_user_stats_cb_keeps_its_own_interval(broker: Any) -> None:
    calls: list[str] = []
    with Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "statistics.interval.ms": 400},
        stats_cb=calls.append,
        inspect_interval_ms=50,
    ) as p:
        assert p.config["statistics.interval.ms"] == "50"
        deadline = time.monotonic() + DEADLINE_S
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        emitted = p.accumulator().stats_count
    assert len(calls) >= 3
    assert all(json.loads(c)["type"] == "producer" for c in calls)
    assert emitted > 2 * len(calls)  # the inspector got (many) more emits than the user


def test_no_statistics_still_gives_exact_counters(broker: Any, topic: Callable[..., str]) -> None:
    name = topic(partitions=1)
    with Producer({"bootstrap.servers": broker.bootstrap_servers}, inspect_interval_ms=0) as p:
        assert "statistics.interval.ms" not in p.config
        p.produce_batch(name, [b"x"] * 7).result(60)
        snap = p.accumulator()
        assert snap.stats_age_s is None
        assert snap.delivered == 7 and snap.pending == 0
        # Without statistics the partition's row holds only exact figures.
        ((key, ps),) = snap.partitions.items()
        assert key == (name, 0) and ps.state == "idle" and ps.leader == -1
        assert (ps.delivered, ps.failed, ps.last_acked_offset) == (7, 0, 6)
        json.dumps(snap.to_dict())


def test_metrics_use_java_names(broker: Any, topic: Callable[..., str]) -> None:
    name = topic(partitions=2)
    with Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20}, inspect_interval_ms=50
    ) as p:
        p.accumulator()
        p.produce_batch(name, [b"x" * 100] * 500).result(60)
        fresh(p, lambda s: len(s.partitions) == 2, "stats after the batch")
        m = p.metrics()
        prom = p.metrics_prometheus()
    for key in (
        "buffer-available-bytes",
        "requests-in-flight",
        "record-send-rate",
        "record-error-rate",
        "record-send-total",
        "buffer-total-bytes",
    ):
        assert key in m, key
    # Java's record-send-total counts retries too (a busy broker made 274 here): the
    # records sent once each are the total less the retries.
    assert m["record-send-total"] - m["record-retry-total"] == 500, m
    assert m["record-error-total"] == 0
    assert m["buffer-available-bytes"] <= m["buffer-total-bytes"]
    for line in prom.splitlines():
        if not line.startswith("#"):
            metric, value = line.rsplit(" ", 1)
            float(value)
            assert metric.replace("_", "a").split("{")[0].isalnum(), line
    assert "kafka_producer_record_send_total{" in prom
    assert f'cykafka_partition_waiting_messages{{client_id="{p.name}",topic="{name}"' in prom


def test_metrics_names_are_there_from_the_first_call(cluster: Any) -> None:
    # Dashboards key on the names: the Java client reports an average without samples
    # as NaN, not by dropping the metric, and a rate from the first call.
    cluster.create_topic("fresh", 1, 3)
    with mock_producer(cluster) as p:
        p.produce("fresh", b"x").result(30)
        m = p.metrics()
    for key in (
        "buffer-available-bytes",
        "record-queue-time-avg",
        "requests-in-flight",
        "batch-size-avg",
        "record-send-rate",
        "record-error-rate",
    ):
        assert key in m, key
    assert m["record-send-rate"] > 0 and m["record-error-rate"] == 0


@pytest.mark.parametrize(
    "config", [{"enable.idempotence": True}, {"transactional.id": "inspect-tx"}]
)
def test_in_flight_limit_is_the_one_librdkafka_runs_with(
    cluster: Any, config: dict[str, Any]
) -> None:
    # librdkafka lowers max.in.flight to 5 for idempotence when the user did not set it
    # (CONFIGURATION.md, enable.idempotence); the broker rows and the `muted` state must
    # use that limit, not the 1,000,000 default of a plain producer.
    cluster.create_topic("limits", 1, 3)
    with mock_producer(cluster, **config) as p:
        if "transactional.id" in config:
            p.init_transactions(30)
        else:
            p.produce("limits", b"x").result(30)
        snap = wait_for(p, lambda s: bool(s.brokers), "broker rows")
    assert inspector_of(p).max_in_flight == 5
    assert all(b.max_in_flight == 5 for b in snap.brokers.values())


def test_cykafka_top_runs_a_script_with_the_view(
    tmp_path: Path, broker: Any, topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    from cykafka.cli import main

    name = topic(partitions=1)
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from cykafka import Producer\n"
        "with Producer({'bootstrap.servers': sys.argv[1]}) as p:\n"
        "    p.produce_batch(sys.argv[2], [b'x'] * 12).result(60)\n"
        "    assert p.config['statistics.interval.ms'] == '100'\n"
        "sys.exit(3)\n"
    )
    code = main(
        [
            "top",
            "--interval",
            "0.05",
            "--log-interval",
            "0.05",
            "--stats-interval-ms",
            "100",
            str(script),
            broker.bootstrap_servers,
            name,
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "delivered 12" in out.splitlines()[-1]
    # outside `top`, producers get the default interval again
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        assert p.config["statistics.interval.ms"] == "1000"


def test_backing_off_while_a_retry_waits_out_retry_backoff(cluster: Any) -> None:
    """A batch refused with a retriable error goes back to the partition and waits
    retry.backoff.ms (1.5 s here) before it is sent again: the partition is
    backing_off then, not ready."""
    topic = cluster.create_topic("backoff", partitions=1)
    with mock_producer(cluster, **{"retry.backoff.ms": 1500, "retry.backoff.max.ms": 1500}) as p:
        warm_up(p, topic, 1)
        cluster.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"])
        p.produce_batch(topic, [b"r"] * 10, partitions=[0] * 10)
        snap = wait_for(
            p,
            lambda s: (topic, 0) in s.partitions and s.partitions[(topic, 0)].state != "idle",
            "the batch waiting",
        )
        # From the first statistics that saw the failed request until the retry is sent,
        # the partition is backing off.
        seen = set()
        while p.accumulator().delivered < 11 and snap.stats_count < 200:
            snap = p.accumulator()
            seen.add(snap.partitions[(topic, 0)].state)
            time.sleep(0.05)
        assert "backing_off" in seen and "ready" not in seen, seen
        assert p.flush(30) == 0


def test_snapshot_after_flush_is_reconciled_with_exact_counters(cluster: Any) -> None:
    """Statistics lag the exact counters: after flush() returns 0 the last statistics
    may still show the batch in flight.  The snapshot reconciles them: nothing is
    queued or in flight, every partition is idle, and the statistics' age is given."""
    topic = cluster.create_topic("lag", partitions=2)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5}
    with Producer(conf, inspect_interval_ms=300) as p:
        warm_up(p, topic, 2)
        for b in (1, 2, 3):
            cluster.set_rtt(b, 2000)
        p.produce_batch(topic, [b"m"] * 1000, partitions=[0, 1] * 500)
        wait_for(p, lambda s: s.in_flight_msgs == 1000, "the batch in flight")
        assert p.flush(30) == 0
        snap = p.accumulator()
        assert snap.pending == 0 and snap.delivered == 1002
        for ps in snap.partitions.values():
            assert ps.state == "idle" and ps.in_flight_msgs == 0 and ps.waiting_msgs == 0, ps
            assert ps.delivered == 501 and ps.age_s >= 0
        assert snap.stats_age_s is not None and snap.queued_bytes == 0
        for bs in snap.brokers.values():
            assert bs.in_flight_msgs == 0 and bs.in_flight_requests == 0, bs


def test_averages_survive_idle_statistics_intervals(cluster: Any) -> None:
    """Java keeps two 30 s windows: an average is NaN only after a minute without
    samples, not after one statistics interval without traffic."""
    cluster.create_topic("idle", 1, 1)
    with mock_producer(cluster) as p:
        p.produce_batch("idle", [b"x" * 100] * 200).result(30)
        fresh(p, lambda s: s.pending == 0, "statistics after the batch")
        time.sleep(0.3)  # several 50 ms intervals without traffic
        fresh(p, lambda s: True, "idle statistics")
        m = p.metrics()
    for name in ("record-queue-time-avg", "request-latency-avg", "batch-size-avg"):
        assert not math.isnan(m[name]), (name, m)
    assert m["record-queue-time-max"] >= m["record-queue-time-avg"] >= 0


#: Metrics fed by librdkafka's window statistics (averages and maxima): NaN only while
#: their windows hold no sample.
WINDOW_METRICS = (
    "record-queue-time-avg",
    "record-queue-time-max",
    "request-latency-avg",
    "request-latency-max",
    "produce-throttle-time-avg",
    "produce-throttle-time-max",
    "batch-size-avg",
    "batch-size-max",
    "records-per-request-avg",
    "record-size-avg",
    "compression-rate-avg",
)


@pytest.mark.parametrize("where", ["broker", "mock"])
def test_every_metric_is_a_number_after_a_flushed_round(
    broker: Any, topic: Callable[..., str], cluster: Any, where: str
) -> None:
    """librdkafka resets its window statistics (int_latency, rtt, batchsize...) at every
    emit, so the emit after the traffic holds its samples and the next ones hold none.
    Every emit's samples count, as Java keeps its samples for two 30 s windows: right
    after flush() and for the seconds after, every metric is a number, not only those
    read from counters.  Against the session broker and librdkafka's mock cluster."""
    from cykafka.inspector.metrics import DOCS

    if where == "broker":
        servers, name = broker.bootstrap_servers, topic()
    else:
        servers, name = cluster.bootstrap_servers, cluster.create_topic("rounds", 1, 1)
    with Producer({"bootstrap.servers": servers, "statistics.interval.ms": 200}) as p:
        before = p.metrics()
        # No record yet: no sample, so NaN (Java's value without samples).
        assert all(math.isnan(before[k]) for k in WINDOW_METRICS), before
        for rnd in (1, 2):
            futs = [p.produce(name, b"x" * 100) for _ in range(100)]
            assert p.flush(30) == 0 and all(f.exception(0) is None for f in futs)
            start = time.monotonic()
            for at in (0.0, 0.5, 1.0, 2.5):
                time.sleep(max(0.0, start + at - time.monotonic()))
                m = p.metrics()
                missing = sorted(k for k, v in m.items() if not math.isfinite(v))
                assert missing == [], (rnd, at, missing)
                assert set(m) <= set(DOCS), set(m) - set(DOCS)  # each says where from
                assert m["record-send-total"] == 100 * rnd
                assert m["request-latency-max"] >= m["request-latency-avg"] > 0, m
                assert m["record-queue-time-max"] >= m["record-queue-time-avg"] >= 0, m
                assert m["batch-size-max"] >= m["batch-size-avg"] > 0, m
                assert 1 <= m["records-per-request-avg"] <= 100, m
                assert m["record-size-avg"] == 100, m
                # Nothing throttled this producer: every response said 0 ms.
                assert m["produce-throttle-time-avg"] == m["produce-throttle-time-max"] == 0


def test_metrics_in_a_delivery_callback_does_not_wait_for_its_own_thread(
    broker: Any, topic: Callable[..., str]
) -> None:
    """Right after traffic, metrics() waits for the statistics emit that carries its
    samples; the event thread serves that emit, so on it (a callback) there is no wait,
    which would stall every delivery for a statistics interval."""
    name = topic()
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    took: list[float] = []

    def on_delivery(err: Any, msg: Any) -> None:
        start = time.monotonic()
        p.metrics()
        took.append(time.monotonic() - start)

    with Producer(conf, inspect_interval_ms=10000) as p:
        p.produce(name, b"x", on_delivery=on_delivery).result(30)
        assert p.flush(30) == 0
    # Far below the 10 s interval it would otherwise wait; generous for a loaded machine.
    assert len(took) == 1 and took[0] < 5.0, took


def test_record_retry_total_counts_record_retries(cluster: Any) -> None:
    """10 records in one batch, refused 3 times with a retriable error, then written:
    30 record retries (Java counts records, not requests)."""
    cluster.create_topic("retry", 1, 1)
    with mock_producer(cluster, **{"linger.ms": 100, "retry.backoff.ms": 10}) as p:
        warm_up(p, "retry", 1)
        cluster.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 3)
        p.produce_batch("retry", [b"r"] * 10).result(30)
        fresh(p, lambda s: True, "statistics after the retries")
        m = p.metrics()
    assert m["record-retry-total"] == 30, m
    assert m["record-send-total"] == 41  # warm-up + 4 transmissions of 10
    assert m["record-retry-rate"] > 0 and m["record-error-total"] == 0


def test_record_send_rate_is_java_s_windowed_rate(cluster: Any) -> None:
    """Java's Rate divides by the sampled windows' span, at least one full 30 s window
    more than the current one: 1000 records sent in the first second read as about
    1000/31 per second, not 1000."""
    cluster.create_topic("rate", 1, 1)
    with mock_producer(cluster) as p:
        p.produce_batch("rate", [b"x"] * 1000).result(30)
        fresh(p, lambda s: True, "statistics after the batch")
        m = p.metrics()
        elapsed = time.monotonic() - p._started_at
    assert m["record-send-total"] == 1000
    assert 1000 / (30 + elapsed + 1) <= m["record-send-rate"] <= 1000 / 30, m


def test_size_compression_flush_and_transaction_metrics(cluster: Any) -> None:
    cluster.create_topic("sizes", 1, 1)
    conf = {"compression.type": "gzip", "transactional.id": "metrics-tx", "linger.ms": 20}
    with mock_producer(cluster, **conf) as p:
        p.init_transactions(30)
        with p.transaction():
            p.produce_batch("sizes", [b"a" * 200] * 500)
        assert p.flush(30) == 0
        fresh(p, lambda s: True, "statistics after the transaction")
        m = p.metrics()
        points = p.metrics_opentelemetry()
        prom = p.metrics_prometheus()
    assert m["record-size-avg"] == 200
    assert 0 < m["compression-rate-avg"] < 0.2, m  # 200 identical bytes compress well
    assert m["flush-time-ns-total"] > 0
    for call in ("init", "begin", "commit"):
        assert m[f"txn-{call}-time-ns-total"] > 0, call
    assert m["txn-abort-time-ns-total"] == 0
    names = {pt["name"]: pt for pt in points}
    assert names["org.apache.kafka.producer.record.send.total"]["monotonic"]
    assert names["org.apache.kafka.producer.record.size.avg"]["value"] == 200
    assert "kafka_producer_compression_rate_avg{" in prom


def test_waiting_threads_counts_threads_blocked_for_room() -> None:
    import threading

    with Producer(stuck_config(**{"max.block.ms": 1500}), inspect_interval_ms=0) as p:
        p.produce("t", b"fills the queue")
        outcome: list[BaseException] = []

        def blocked() -> None:
            try:
                p.produce("t", b"waits for room")
            except cykafka.QueueFullError as e:
                outcome.append(e)

        th = threading.Thread(target=blocked)
        th.start()
        seen = 0.0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not seen:
            seen = p.metrics()["waiting-threads"]
        th.join(10)
        after = p.metrics()
        p.close(0)
    assert seen == 1 and len(outcome) == 1
    assert after["waiting-threads"] == 0 and after["buffer-exhausted-total"] == 1


def test_record_size_max_is_the_largest_key_plus_value(
    broker: Any, topic: Callable[..., str]
) -> None:
    """Java's record-size-max: the largest record (here key + value bytes) produced in the
    sampled windows, from produce(), produce_batch() and produce_many() alike."""
    name = topic(partitions=1)
    with Producer({"bootstrap.servers": broker.bootstrap_servers}, inspect_interval_ms=0) as p:
        assert math.isnan(p.metrics()["record-size-max"])  # no record yet: Java's NaN
        p.produce(name, b"v" * 300, key=b"k" * 20).result(30)
        p.produce(name, b"v" * 10).result(30)
        assert p.metrics()["record-size-max"] == 320
        p.produce_batch(name, [b"a" * 50, b"b" * 700, b"c"], keys=[b"k", b"kk", None]).result(30)
        assert p.metrics()["record-size-max"] == 702
        p.produce_many([(b"k" * 5, b"z" * 1000), b"y"], name).result(30)
        m = p.metrics()
        assert m["record-size-max"] == 1005
        # Older samples expire with Java's two 30 s windows.
        ins = inspector_of(p)
        later = time.monotonic() + 2 * 30 + 1
        snap = ins.snapshot()
        assert math.isnan(ins.java.values(snap, {}, 0, {}, later)["record-size-max"])
