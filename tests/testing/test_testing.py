"""cykafka.testing against librdkafka's mock cluster: the harness itself, the
re-measured in-flight=1 claim, and the presets/explainer checked by measurement.

Everything here runs in-process (no broker needed).  Timings matter: faults are
scheduled between produce() calls, and the harness waits for a connected
producer (warm-up record) before the first one.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import cykafka
from cykafka import presets
from cykafka.explain import explain
from cykafka.testing import (
    API_KEYS,
    MockCluster,
    OrderingReport,
    RawRecord,
    committed_view,
    error_code,
    read_log,
    read_raw_log,
    verify_ordering,
)

# librdkafka's mock cluster (in this process) or a real broker: not a unit test.
pytestmark = pytest.mark.broker

# -- helpers -------------------------------------------------------------------


def every_nth_fails(n: int = 7, error: str = "NOT_ENOUGH_REPLICAS", cycles: int = 150) -> list[str]:
    """A repeating pattern for the Produce error stack: n-1 successes, 1 error."""
    return (["NO_ERROR"] * (n - 1) + [error]) * cycles


def paced(seconds: float):
    """A fault callable that only sleeps: produce() calls keep arriving during retries."""
    return lambda mock, n: time.sleep(seconds)


def rtt_all(ms: int):
    def act(mock: MockCluster) -> None:
        for b in mock.broker_ids:
            mock.set_rtt(b, ms)

    return act


def sleep(s: float):
    return lambda mock: time.sleep(s)


#: An RTT spike longer than the client's socket.timeout.ms (SPIKED_CLIENT): the
#: request times out client-side after the mock has already appended it.
def timeout_spike(at: int = 100, until: int = 300) -> list[tuple[int, Any]]:
    return [(at, rtt_all(3000)), (at, sleep(0.1)), (until, sleep(2.0)), (until, rtt_all(0))]


#: The producer settings timeout_spike is made for.  CONFIGURATION.md: "ProduceRequests
#: will use the lesser value of socket.timeout.ms and remaining message.timeout.ms".
#: Metrics push off: a new connection sends GetTelemetrySubscriptions (KIP-714) right
#: after its first Produce; when the spike caught that request in flight, it was the one
#: that timed out, and with max.in.flight=1 the Produce behind it was never sent before
#: the spike ended ("Timed out in queue"): no retry, no duplicate (1 run in 15 on a
#: loaded machine, debug=protocol).
SPIKED_CLIENT = {"socket.timeout.ms": 1000, "enable.metrics.push": False}


JAVA_INFLIGHT1 = {
    "acks": "all",
    "max.in.flight.requests.per.connection": 1,
    "batch.num.messages": 10,
}


def retry_copies(entries: Sequence[RawRecord]) -> tuple[int, list[str]]:
    """Extra copies of a record value in a raw log (control records and the harness's
    warm-up records left out), and the copies that a real broker would NOT have
    dropped: those whose (producer id, epoch, sequence) differs from the first copy's
    or that carry no sequence.  A real broker answers a batch whose producer id, epoch
    and sequence it already appended with DUPLICATE_SEQUENCE_NUMBER instead of
    appending it again (KIP-98); librdkafka's mock does not (see
    test_mock_does_not_dedupe_idempotent_retries)."""
    first: dict[bytes, RawRecord] = {}
    extra = 0
    not_droppable: list[str] = []
    for e in sorted(entries, key=lambda x: (x.partition, x.offset)):
        if e.control is not None or e.value is None or e.value == b"warmup":
            continue
        orig = first.setdefault(e.value, e)
        if orig is e:
            continue
        extra += 1
        ident = (e.producer_id, e.producer_epoch, e.sequence)
        if (
            e.sequence < 0
            or ident != (orig.producer_id, orig.producer_epoch, orig.sequence)
            or e.partition != orig.partition
        ):
            not_droppable.append(
                f"{e.value!r}: [{orig.partition}]@{orig.offset} pid/epoch/seq "
                f"{(orig.producer_id, orig.producer_epoch, orig.sequence)} vs "
                f"[{e.partition}]@{e.offset} {ident}"
            )
    return extra, not_droppable


def assert_duplicates_are_retries(mock: MockCluster, r: OrderingReport) -> int:
    """The harness's split of extra copies agrees with an independent read of the raw
    log: same-(producer id, epoch, sequence) copies, which a real broker's idempotence
    check drops, are mock_duplicates; the rest are duplicates.  Returns the mock ones."""
    extra, bad = retry_copies(
        read_raw_log(mock, r.topic, sorted(p for p in r.partitions if p >= 0))
    )
    assert extra == r.duplicates + r.mock_duplicates, (extra, str(r))
    assert len(bad) == r.duplicates, "duplicates a real broker would keep:\n" + "\n".join(bad[:10])
    return r.mock_duplicates


@pytest.fixture
def mock():
    with MockCluster(3) as m:
        yield m


# -- MockCluster API -------------------------------------------------------------


def test_mock_cluster_basics() -> None:
    with MockCluster(3) as m:
        assert m.num_brokers == 3 and m.broker_ids == [1, 2, 3]
        assert len(m.bootstrap_servers.split(",")) == 3
        m.create_topic("t7", partitions=7, replication_factor=3)
        with pytest.raises(cykafka.KafkaError, match="TOPIC_ALREADY_EXISTS|already exists"):
            m.create_topic("t7", 7)
        m.set_partition_leader("t7", 0, 2)
        m.set_rtt(1, 5)
        m.set_broker_down(3)
        m.set_broker_up(3)
        m.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS", 0, cykafka.ErrorCode.NO_ERROR])
        m.push_request_errors(API_KEYS["Metadata"], ["_TRANSPORT"])
        m.clear_request_errors("Metadata")
        m.heal()
        with pytest.raises(ValueError, match="broker 4"):
            m.set_broker_down(4)
        with pytest.raises(ValueError, match="replication_factor"):
            m.create_topic("x", 1, 4)
        assert "3 brokers" in repr(m)
    assert m.closed
    m.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        m.create_topic("late", 1)


def test_error_and_api_names() -> None:
    assert error_code("NOT_ENOUGH_REPLICAS") == int(cykafka.ErrorCode.NOT_ENOUGH_REPLICAS) == 19
    assert error_code("_TRANSPORT") == int(cykafka.ErrorCode.LOCAL_TRANSPORT)
    assert error_code("no_error") == 0 and error_code(6) == 6
    with MockCluster(1) as m:
        with pytest.raises(ValueError) as ei:
            m.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS", "NOT_A_THING", "ALSO_BAD"])
        assert "'NOT_A_THING'" in str(ei.value) and "'ALSO_BAD'" in str(ei.value)
        with pytest.raises(ValueError, match="Frobnicate"):
            m.push_request_errors("Frobnicate", ["NO_ERROR"])
        m.push_request_errors("produce", [])  # case-insensitive, empty is fine
        m.push_request_errors(0, "NO_ERROR")  # a single name


def test_unclosed_mock_warns() -> None:
    m = MockCluster(1)
    with pytest.warns(ResourceWarning, match="unclosed cykafka mock cluster"):
        del m
        import gc

        gc.collect()


# -- the harness on a clean run ------------------------------------------------------


def test_clean_run_is_ok_and_offsets_match(mock: MockCluster) -> None:
    r = verify_ordering({}, mock, messages=500, keys=5, partitions=3, preset="ordered")
    assert isinstance(r, OrderingReport)
    assert r.ok and r.written == 500 and r.failed == 0 and r.misreported_offsets == 0
    assert sum(p.produced for p in r.partitions.values()) == 500
    assert "OrderingReport OK" in str(r)


def test_harness_sees_loss_that_delivery_reports_hide(mock: MockCluster) -> None:
    # at_most_once (acks=0): the mock drops the failed requests, the client is
    # never told -> the explainer's silent_loss_possible, measured.  Not healed: a heal
    # clears the errors not yet met, and on a loaded machine the producer had sent
    # nothing yet when the last message was queued (0 losses, 1 run in 3).
    push = [(0, lambda m: m.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 3))]
    r = verify_ordering(
        {"batch.num.messages": 10},
        mock,
        messages=300,
        preset="at_most_once",
        faults=push,
        heal=False,
    )
    # Each dropped request loses its whole batch: up to 10 messages, fewer when a loaded
    # machine produces slower than batches fill.  Every loss is silent (no failed report).
    assert r.failed == 0 and not r.ok
    assert 3 <= r.losses <= 30 and r.written + r.losses == 300, r
    g = explain({}, preset="at_most_once")
    assert g.silent_loss_possible and not g.duplicates_possible


# -- the in-flight=1 claim, re-measured --------------------------------------------


def _claim_run(mock: MockCluster, cfg: dict[str, Any], pace: bool) -> OrderingReport:
    mock.clear_request_errors("Produce")
    mock.push_request_errors("Produce", every_nth_fails(7))
    return verify_ordering(
        cfg,
        mock,
        messages=2000,
        keys=1,
        faults=paced(0.005) if pace else None,
        fault_every=10,
    )


def _inflight1_warning() -> str:
    g = explain(JAVA_INFLIGHT1)
    return next(w for w in g.warnings if "NOT an ordering guarantee" in w)


def _stated_range() -> tuple[int, int]:
    """The inversion range the explainer's warning states, read from its text."""
    m = re.search(r"between (\d+) and (\d+) per run of 2000", _inflight1_warning())
    assert m, _inflight1_warning()
    return int(m.group(1)), int(m.group(2))


def test_inflight1_without_idempotence_reorders_measured(mock: MockCluster) -> None:
    """The in-flight=1 claim, re-measured, against what the explainer's warning says:
    non-idempotent, in-flight=1, acks=all, 1 partition, batch.num.messages=10, every
    7th Produce fails with NOT_ENOUGH_REPLICAS, 2000 messages.  Measured so far
    (librdkafka 2.16.0 mock): 9-10 inversions with produce() calls arriving
    throughout (10 messages every 5 ms), 10-12 with 5 in flight, 0 or 1 with all
    2000 queued at once, 0 with idempotence.  The test asserts the range the
    warning states (both ends), not a constant of its own."""
    lo, hi = _stated_range()
    results = {}
    for name, cfg in (
        ("inflight1", JAVA_INFLIGHT1),
        ("inflight5", {**JAVA_INFLIGHT1, "max.in.flight.requests.per.connection": 5}),
        ("idempotent", {**JAVA_INFLIGHT1, "enable.idempotence": True}),
    ):
        for pace in (True, False):
            r = _claim_run(mock, cfg, pace)
            results[(name, pace)] = r
            print(
                f"{name} paced={pace}: inversions={r.inversions} "
                f"reordered={r.reordered_messages} duplicates={r.duplicates} "
                f"losses={r.losses} failed={r.failed}"
            )
            # Every message arrives exactly once in all configs; only order differs.
            assert r.written == 2000 and r.failed == 0 and r.losses == 0 and r.duplicates == 0
    # "every run had order inversions, between lo and hi per run of 2000 ... as many
    # with 5 in flight, fewer than lo when all 2000 were queued at once, and 0 with
    # enable.idempotence=true"
    assert lo <= results[("inflight1", True)].inversions <= hi, (lo, hi)
    assert lo <= results[("inflight5", True)].inversions <= hi, (lo, hi)
    assert results[("inflight1", False)].inversions < lo
    assert results[("idempotent", True)].inversions == 0
    assert results[("idempotent", False)].inversions == 0
    # Each inversion is one whole failed batch of 10 landing after the next one.
    r = results[("inflight1", True)]
    assert r.reordered_messages == 10 * r.inversions


def test_explainer_states_the_measured_figure() -> None:
    g = explain({"max.in.flight.requests.per.connection": 1, "acks": "all"})
    w = next(w for w in g.warnings if "NOT an ordering guarantee" in w)
    assert "cykafka.testing.verify_ordering" in w and "2000" in w
    lo, hi = _stated_range()
    # A claim, not a shrug: inversions in every run (lo >= 1), and no more than the
    # pattern's failed Produce requests can cause (one in 7 of ~230 requests).
    assert 1 <= lo < hi <= 33
    assert g.ordering == "none" and g.duplicates_possible


# -- ordered / strict_ordered under random faults -----------------------------------

RETRIABLE = [
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NOT_LEADER_OR_FOLLOWER",
    "LEADER_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT",
    "_TRANSPORT",
]

MESSAGES = 400


@st.composite
def fault_plans(draw: Any) -> list[tuple[int, tuple]]:
    """A list of (after_n_messages, fault) with faults as plain data (so
    hypothesis can print and shrink them)."""
    n = draw(st.integers(1, 5))
    plan = []
    for _ in range(n):
        at = draw(st.integers(0, MESSAGES))
        kind = draw(st.sampled_from(["errors", "down", "leader", "rtt", "pause"]))
        if kind == "errors":
            errs = draw(
                st.lists(st.sampled_from(RETRIABLE + ["NO_ERROR"] * 3), min_size=1, max_size=12)
            )
            plan.append((at, ("errors", tuple(errs))))
        elif kind == "down":
            plan.append((at, ("down", draw(st.integers(1, 3)), draw(st.sampled_from([0.05, 0.3])))))
        elif kind == "leader":
            plan.append((at, ("leader", draw(st.integers(0, 1)), draw(st.integers(1, 3)))))
        elif kind == "rtt":
            # Spikes below socket.timeout.ms: see test_mock_does_not_dedupe... for longer ones.
            plan.append((at, ("rtt", draw(st.integers(1, 3)), draw(st.sampled_from([50, 250])))))
        else:
            plan.append((at, ("pause", draw(st.sampled_from([0.01, 0.1])))))
    return plan


def _materialise(plan: list[tuple[int, tuple]], topic_holder: dict[str, str]):
    out = []
    for at, fault in plan:
        kind = fault[0]
        if kind == "errors":
            out.append((at, lambda m, e=fault[1]: m.push_request_errors("Produce", e)))
        elif kind == "down":
            b, secs = fault[1], fault[2]

            def down(m: MockCluster, b: int = b, secs: float = secs) -> None:
                m.set_broker_down(b)
                time.sleep(secs)
                m.set_broker_up(b)

            out.append((at, down))
        elif kind == "leader":
            out.append(
                (
                    at,
                    lambda m, p=fault[1], b=fault[2]: m.set_partition_leader(
                        topic_holder["topic"], p, b
                    ),
                )
            )
        elif kind == "rtt":
            out.append((at, lambda m, b=fault[1], ms=fault[2]: m.set_rtt(b, ms)))
        else:
            out.append((at, lambda m, s=fault[1]: time.sleep(s)))
    return out


def _check_ordered_under(preset: str, plan: list[tuple[int, tuple]]) -> OrderingReport:
    with MockCluster(3) as m:
        topic = f"prop-{preset}-{time.monotonic_ns()}"
        holder = {"topic": topic}
        r = verify_ordering(
            {"batch.num.messages": 20, "linger.ms": 2},
            m,
            messages=MESSAGES,
            keys=4,
            topic=topic,
            partitions=2,
            faults=_materialise(plan, holder),
            preset=preset,
            flush_timeout=60,
        )
        assert r.inversions == 0, r
        # A broker going down drops requests the mock has already appended; librdkafka
        # retries them with the same producer id, epoch and sequence, which a real
        # broker drops (DUPLICATE_SEQUENCE_NUMBER) but librdkafka 2.16's mock appends
        # again (pinned by test_mock_does_not_dedupe_idempotent_retries).  So a
        # duplicate is allowed only where a real broker would have dropped it.
        dups = assert_duplicates_are_retries(m, r)
        assert r.duplicates == 0, r
        if not any(action[0] == "down" for _, action in plan):
            assert dups == 0, r  # nothing else has produced a mock duplicate so far
    assert r.losses == 0, r
    assert r.failed == 0, r  # every fault is retriable; nothing may fail within the timeout
    assert r.misreported_offsets == 0, r
    return r


#: Different fault plans run over time (not derandomized), from one seed per test
#: session: printed in pytest's header (tests/conftest.py); rerun a CI failure with
#: CYKAFKA_PROPERTY_SEED=<it>.  A failing plan is also printed by hypothesis.
PROPERTY_SEED = int(os.environ.get("CYKAFKA_PROPERTY_SEED") or random.randrange(2**32))

PROPERTY_SETTINGS = settings(
    max_examples=12,
    # A run is seconds (faults pause, flush waits); per-example deadlines would only
    # flake.  The suite's time budget bounds max_examples instead.
    deadline=None,
    derandomize=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@seed(PROPERTY_SEED)
@PROPERTY_SETTINGS
@given(plan=fault_plans())
def test_ordered_never_inverts_duplicates_or_loses(plan: list[tuple[int, tuple]]) -> None:
    _check_ordered_under("ordered", plan)


@seed(PROPERTY_SEED + 1)
@PROPERTY_SETTINGS
@given(plan=fault_plans())
def test_strict_ordered_never_inverts_duplicates_or_loses(plan: list[tuple[int, tuple]]) -> None:
    _check_ordered_under("strict_ordered", plan)


def test_ordered_under_the_claim_pattern(mock: MockCluster) -> None:
    # The explicit worst case from the in-flight=1 measurement, for both presets.
    for preset in ("ordered", "strict_ordered"):
        mock.clear_request_errors("Produce")
        mock.push_request_errors("Produce", every_nth_fails(7))
        r = verify_ordering(
            {"batch.num.messages": 10},
            mock,
            messages=2000,
            keys=3,
            partitions=2,
            faults=paced(0.005),
            fault_every=10,
            preset=preset,
        )
        assert r.ok and r.failed == 0, r


def test_mock_does_not_dedupe_idempotent_retries(mock: MockCluster) -> None:
    """A mock-cluster limitation, pinned: when a Produce request times out
    client-side (RTT 3000 ms > socket.timeout.ms 1000) after the mock appended
    it, librdkafka retries with the SAME producer id, epoch and base sequence
    (visible with debug=msg), which a real broker answers from its sequence
    cache; librdkafka 2.16's mock appends it again.  So the property tests keep
    RTT spikes below socket.timeout.ms.  Order is still never inverted and
    nothing is lost."""
    r = verify_ordering(
        {"batch.num.messages": 10, **SPIKED_CLIENT},
        mock,
        messages=1000,
        faults=timeout_spike(),
        preset="ordered",
    )
    print(r)
    assert r.inversions == 0 and r.losses == 0 and r.failed == 0
    # The limitation is still there (if a librdkafka upgrade fixes the mock, this
    # fails: then drop the allowance in _check_ordered_under), and the harness tells
    # these same-(producer id, epoch, sequence) re-appends from real duplicates: the
    # report is OK and names them as mock artefacts.
    assert r.mock_duplicates > 0 and r.duplicates == 0 and r.ok, r
    assert "mock artefacts" in str(r)
    assert assert_duplicates_are_retries(mock, r) == r.mock_duplicates


# -- a permanent error on one batch: strict_ordered stops, ordered leaves a gap -------


def _gap_run(preset: str) -> tuple[list[Any], list[int], list[Exception]]:
    """120 messages in batches of 10, produced 10 at a time with 20 ms between, so
    each batch is its own Produce request; the 4th Produce request (the 3rd after
    the warm-up) fails with the non-retriable INVALID_RECORD.  Returns every
    future's outcome (None: delivered, else the exception), the indices written to
    the log, and what on_error received."""
    errors: list[Exception] = []
    with MockCluster(1) as m:
        topic = m.create_topic(f"gap-{preset}-{time.monotonic_ns()}", 1, 1)
        cfg = {
            "bootstrap.servers": m.bootstrap_servers,
            "batch.num.messages": 10,
            "linger.ms": 5,
            "log_level": 0,
        }
        with cykafka.Producer(cfg, preset=preset, on_error=errors.append) as p:
            p.produce(topic, b"warmup").result(30)
            m.push_request_errors("Produce", ["NO_ERROR", "NO_ERROR", "INVALID_RECORD"])
            futs = []
            for i in range(120):
                try:
                    futs.append(p.produce(topic, str(i).encode()))
                except cykafka.KafkaError as e:  # the producer is already fatal
                    futs.append(e)
                if i % 10 == 9:
                    time.sleep(0.02)
            p.flush(30)
            outcomes = [f if isinstance(f, Exception) else f.exception(10) for f in futs]
        written = [
            int(r.value)
            for r in read_raw_log(m, topic, 1)
            if r.value is not None and r.value != b"warmup"
        ]
    return outcomes, written, errors


@pytest.mark.parametrize("preset", ["strict_ordered", "ordered"])
def test_permanent_error_gap_behaviour_matches_explainer(preset: str) -> None:
    """explain()'s gap_behaviour, measured: one batch fails permanently amid others."""
    outcomes, written, errors = _gap_run(preset)
    failed = [i for i, o in enumerate(outcomes) if o is not None]
    names = sorted({getattr(o, "name", type(o).__name__) for o in outcomes if o is not None})
    print(
        preset,
        "failed",
        len(failed),
        names,
        "written",
        len(written),
        "on_error",
        [str(e) for e in errors],
    )
    assert failed, "the permanent error failed nothing"
    first_gap = failed[0]
    assert written == sorted(written) and len(set(written)) == len(written)
    assert not set(written) & set(failed), "a message reported failed was written"
    gap = explain({}, preset=preset).gap_behaviour
    fatal = [e for e in errors if getattr(e, "fatal", False)]
    if preset == "strict_ordered":
        assert gap == "fatal error"
        # librdkafka raises _GAPLESS_GUARANTEE; the producer stops: nothing after the
        # failed batch is written, and everything from it on is reported failed.
        assert any(e.name == "_GAPLESS_GUARANTEE" for e in fatal), errors
        # the failed batch with its own error, every later message with the fatal one
        assert outcomes[first_gap].name == "INVALID_RECORD", outcomes[first_gap]
        assert "_GAPLESS_GUARANTEE" in names, names
        assert set(names) <= {"INVALID_RECORD", "_GAPLESS_GUARANTEE", "_FATAL"}, names
        assert all(i < first_gap for i in written), (first_gap, written[-5:])
        assert failed == list(range(first_gap, 120)), failed
    else:
        assert gap.startswith("skip")
        # The failed batch is reported failed (INVALID_RECORD, per message), no fatal
        # error, and later messages are written: a gap in the partition.
        assert not fatal, errors
        assert names == ["INVALID_RECORD"], names
        assert len(failed) == 10 and failed == list(range(first_gap, first_gap + 10))
        assert max(written) == 119 and len(written) == 110, written


# -- the explainer's claims vs measurement, preset by preset ------------------------


def _reorder_pattern(mock: MockCluster, cfg: dict[str, Any], preset: Any) -> OrderingReport:
    mock.clear_request_errors("Produce")
    mock.push_request_errors("Produce", every_nth_fails(3, cycles=300))
    return verify_ordering(
        cfg, mock, messages=1000, keys=1, faults=paced(0.005), fault_every=10, preset=preset
    )


def _duplicate_pattern(mock: MockCluster, cfg: dict[str, Any], preset: Any) -> OrderingReport:
    return verify_ordering(
        {**cfg, **SPIKED_CLIENT},
        mock,
        messages=1000,
        faults=timeout_spike(),
        preset=preset,
    )


@pytest.mark.parametrize(
    "name,cfg,preset",
    [
        # Measured: with the preset's own batching (linger 20 ms, 100000 messages
        # per batch) this pattern gave 0 inversions in 1000 messages; small
        # batches expose the same non-idempotent retry path (3 inversions).
        ("throughput", {"batch.num.messages": 10}, "throughput"),
        ("java_compatible", {"batch.num.messages": 10}, "java_compatible"),
        ("librdkafka defaults", {"batch.num.messages": 10}, None),
        ("Java-style in-flight=1", JAVA_INFLIGHT1, None),
    ],
)
def test_explainer_none_and_duplicates_are_real(
    mock: MockCluster, name: str, cfg: dict[str, Any], preset: Any
) -> None:
    """Where explain() says ordering "none" and duplicates possible, show a fault
    pattern that produces each."""
    g = explain(cfg, preset=preset)
    assert g.ordering == "none" and g.duplicates_possible
    r = _reorder_pattern(mock, cfg, preset)
    print(name, "reorder pattern:", r.inversions, "inversions")
    assert r.inversions > 0, r
    mock.heal()
    r = _duplicate_pattern(mock, cfg, preset)
    print(name, "timeout pattern:", r.duplicates, "duplicates")
    assert r.duplicates > 0, r


@pytest.mark.parametrize("preset", ["ordered", "strict_ordered", "exactly_once"])
def test_explainer_per_partition_presets(preset: str) -> None:
    # The measured side is the property tests above (ordered, strict_ordered) and
    # the transaction test below (exactly_once).
    g = explain({"transactional.id": "t-1"} if preset == "exactly_once" else {}, preset=preset)
    assert g.ordering == "per-partition" and not g.duplicates_possible and not g.refused


def test_at_most_once_never_duplicates(mock: MockCluster) -> None:
    """explain(): ordering none (not promised), no duplicates, silent loss.
    The timeout pattern that duplicates every retrying config writes nothing
    twice here (no retries).  No pattern tried produced an inversion: "none"
    is a non-promise, not an observed reorder."""
    g = explain({}, preset="at_most_once")
    assert g.ordering == "none" and not g.duplicates_possible and g.silent_loss_possible
    r = _duplicate_pattern(mock, {"batch.num.messages": 10}, "at_most_once")
    assert r.duplicates == 0, r
    mock.heal()
    r = _reorder_pattern(mock, {"batch.num.messages": 10}, "at_most_once")
    assert r.duplicates == 0 and r.losses > 0 and r.failed == 0, r


# -- exactly_once: transactions against the mock --------------------------------------


def test_exactly_once_transactions(mock: MockCluster) -> None:
    """Committed transactions are all visible to read_committed, atomically; the
    aborted one is bracketed by a control record like the committed ones.  With the
    transaction coordinator on another broker than the leaders.  librdkafka's
    read_committed consumer cannot hide the aborted one on the mock (see
    test_read_committed_view_hides_aborted_records); committed_view does."""
    topic = "txn-topic"
    mock.create_topic(topic, 3, 3)
    mock.set_coordinator("transaction", "orders-writer-1", 2)
    cfg = {
        "bootstrap.servers": mock.bootstrap_servers,
        "transactional.id": "orders-writer-1",
        "log_level": 3,
    }
    with cykafka.Producer(cfg, preset="exactly_once") as p:
        assert p.guarantees.transactional
        p.init_transactions(10)
        with p.transaction():
            futs = [p.produce(topic, f"c1-{i}", key=str(i)) for i in range(30)]
        assert all(f.done() for f in futs)  # commit flushed them
        with pytest.raises(RuntimeError):
            with p.transaction():
                for i in range(30):
                    p.produce(topic, f"a1-{i}", key=str(i))
                p.flush()
                raise RuntimeError("abort me")
        with p.transaction():
            for i in range(30):
                p.produce(topic, f"c2-{i}", key=str(i))
    committed = read_log(mock, topic, 3, isolation_level="read_committed")
    values = [r.value.decode() for r in committed]
    assert {f"c1-{i}" for i in range(30)} <= set(values)
    assert {f"c2-{i}" for i in range(30)} <= set(values)
    assert values.count("c1-0") == 1
    # Each transaction that touched a partition left one control record there
    # (an offset the consumer skips).
    for part in range(3):
        offs = sorted(r.offset for r in committed if r.partition == part)
        assert offs and len(offs) < offs[-1] + 1  # gaps = markers
    view = [r.value.decode() for r in committed_view(read_raw_log(mock, topic, 3))]
    assert sorted(view) == sorted([f"c1-{i}" for i in range(30)] + [f"c2-{i}" for i in range(30)])


def _abort_then_commit(servers: str, topic: str) -> None:
    cfg = {"bootstrap.servers": servers, "transactional.id": f"t-abort-{topic}", "log_level": 3}
    with cykafka.Producer(cfg, preset="exactly_once") as p:
        p.init_transactions(20)
        p.begin_transaction()
        p.produce(topic, b"aborted")
        p.flush()
        p.abort_transaction()
        with p.transaction():
            p.produce(topic, b"committed")


def test_read_committed_view_hides_aborted_records(mock: MockCluster) -> None:
    """The markers are in the log (ABORT after the aborted record, COMMIT after the
    committed one), so a read_committed consumer on a real Kafka broker sees only the
    committed record.  The mock, like Tansu, does not send consumers the aborted-
    transaction index that filtering relies on, so librdkafka's own read_committed
    consumer still gets the aborted record (pinned: this assertion fails once the mock
    learns it, and then read_log can be used directly)."""
    mock.create_topic("txn-abort", 1, 1)
    _abort_then_commit(mock.bootstrap_servers, "txn-abort")
    raw = read_raw_log(mock, "txn-abort", 1)
    assert [r.control for r in raw] == [None, "ABORT", None, "COMMIT"]
    assert [r.value for r in raw if r.control is None] == [b"aborted", b"committed"]
    assert len({r.producer_id for r in raw}) == 1 and all(r.transactional for r in raw)
    assert [r.value for r in committed_view(raw)] == [b"committed"]
    consumer = read_log(mock, "txn-abort", 1, isolation_level="read_committed")
    assert [r.value for r in consumer] == [b"aborted", b"committed"]  # mock limitation


def test_read_committed_view_on_tansu(broker, topic) -> None:
    name = topic()
    _abort_then_commit(broker.bootstrap_servers, name)
    raw = read_raw_log(broker.bootstrap_servers, name, 1)
    assert [r.control for r in raw] == [None, "ABORT", None, "COMMIT"]
    assert [r.value for r in committed_view(raw)] == [b"committed"]


def test_raw_log_agrees_with_the_consumer(broker, topic, read_back) -> None:
    """read_raw_log parses the record batches itself: its data records must be exactly
    what librdkafka's consumer reads (offsets, keys, null values, headers skipped over),
    across many batches, with gzip and with lz4 (the import's default), whose frames
    here hold several blocks, compressed and stored ones."""
    name = topic(partitions=2)
    big = {1000: b"compressible " * 40_000, 2000: os.urandom(300_000)}
    for codec in ("none", "gzip", "lz4"):
        cfg = {
            "bootstrap.servers": broker.bootstrap_servers,
            "compression.type": codec,
            "batch.num.messages": 97,
        }
        with cykafka.Producer(cfg) as p:
            values = [
                big.get(i, None if i % 13 == 0 else (b"v%d-" % i) * (i % 7)) for i in range(3000)
            ]
            keys = [None if i % 11 == 0 else b"k%d" % (i % 50) for i in range(3000)]
            hdrs = [[("h", b"%d" % i)] if i % 5 == 0 else None for i in range(3000)]
            assert p.produce_batch(name, values, keys, headers=hdrs).result(60).ok
    raw = read_raw_log(broker.bootstrap_servers, name, 2)
    assert all(r.control is None and not r.transactional for r in raw)
    consumed = read_back(broker.bootstrap_servers, name, expected=9000)
    got = [(r.partition, r.offset, r.key, r.value) for r in raw]
    want = [
        (part, r.offset, r.key, r.value) for part, recs in sorted(consumed.items()) for r in recs
    ]
    assert len(got) == 9000 and got == want
    assert committed_view(raw) == raw  # nothing transactional: everything visible


def test_committed_view_rule() -> None:
    """Kafka's rule (KIP-98), per partition and producer: a transactional record is
    visible iff the producer's next marker is COMMIT; open transactions are not."""
    from cykafka.testing import RawRecord

    def rec(
        off: int, pid: int, value: str, control: Any = None, txn: bool = True, part: int = 0
    ) -> RawRecord:
        return RawRecord(part, off, None, value.encode(), pid, 0, txn, control)

    log = [
        rec(0, 1, "a1"),
        rec(1, 2, "b1"),
        rec(2, 9, "plain", txn=False),
        rec(3, 1, "", "ABORT"),
        rec(4, 2, "b2"),
        rec(5, 1, "a2"),
        rec(6, 2, "", "COMMIT"),
        rec(7, 1, "a3"),
        rec(8, 1, "", "COMMIT"),
        rec(9, 2, "b-open"),
        rec(0, 1, "other-partition", part=1),
    ]
    assert [r.value for r in committed_view(log)] == [b"b1", b"plain", b"b2", b"a2", b"a3"]


# -- exactly_once under faults: all or nothing, per key in order ----------------------

TXN_FAULTS = ["none", "errors", "leader", "rtt", "pause", "down", "txn_errors"]


def _txn_fault(m: MockCluster, topic: str, kind: str, r: int) -> None:
    if kind == "errors":
        m.push_request_errors("Produce", [RETRIABLE[r % len(RETRIABLE)]] * (1 + r % 4))
    elif kind == "leader":
        m.set_partition_leader(topic, r % 2, 1 + r % 3)
    elif kind == "rtt":
        m.set_rtt(1 + r % 3, 250)
    elif kind == "pause":
        time.sleep(0.05)
    elif kind == "down":
        b = 1 + r % 3
        m.set_broker_down(b)
        time.sleep(0.1)
        m.set_broker_up(b)
    elif kind == "txn_errors":
        # the coordinator answering "busy" to AddPartitionsToTxn and EndTxn: retried
        m.push_request_errors("AddPartitionsToTxn", ["CONCURRENT_TRANSACTIONS"] * (1 + r % 3))
        m.push_request_errors("EndTxn", ["COORDINATOR_LOAD_IN_PROGRESS"] * (1 + r % 2))


@seed(PROPERTY_SEED + 2)
@settings(
    max_examples=6,
    deadline=None,
    derandomize=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    txns=st.lists(
        st.tuples(
            st.integers(1, 60), st.booleans(), st.sampled_from(TXN_FAULTS), st.integers(0, 2**16)
        ),
        min_size=2,
        max_size=6,
    )
)
def test_exactly_once_is_all_or_nothing_under_faults(
    txns: list[tuple[int, bool, str, int]],
) -> None:
    """Random transactions, each committed or aborted, each with a fault injected
    half-way.  What read_committed shows (the log's own markers, committed_view) is
    exactly the transactions whose commit returned, each complete and once, every key's
    messages in produce order; nothing of an aborted transaction."""
    topic = f"eos-{time.monotonic_ns()}"
    committed: list[str] = []
    aborted: list[str] = []
    with MockCluster(3) as m:
        m.create_topic(topic, 2, 3)
        cfg = {
            "bootstrap.servers": m.bootstrap_servers,
            "transactional.id": topic,
            "log_level": 0,
            "batch.num.messages": 10,
            "linger.ms": 2,
        }
        with cykafka.Producer(cfg, preset="exactly_once") as p:
            p.init_transactions(30)
            for t, (n, commit, fault, r) in enumerate(txns):
                values = [f"{t}-{i}" for i in range(n)]
                p.begin_transaction()
                futs = []
                for i, v in enumerate(values):
                    futs.append(p.produce(topic, v, key=f"k{i % 5}"))
                    if i == n // 2:
                        _txn_fault(m, topic, fault, r)
                if not commit:
                    p.abort_transaction(60)
                    aborted += values
                else:
                    try:
                        p.commit_transaction(60)
                    except cykafka.KafkaError as e:
                        assert e.txn_requires_abort and not e.fatal, e
                        p.abort_transaction(60)
                        aborted += values
                    else:
                        assert all(f.exception(0) is None for f in futs)
                        committed += values
                m.heal()
                m.clear_request_errors("AddPartitionsToTxn")
                m.clear_request_errors("EndTxn")
        raw = read_raw_log(m, topic, 2)
    seen = [r.value.decode() for r in committed_view(raw) if r.value is not None]
    assert not set(seen) & set(aborted), "records of an aborted transaction are visible"
    assert set(seen) == set(committed), "a committed transaction is not complete"
    # Duplicates only where a real broker would have dropped them (same producer id,
    # epoch and sequence: see test_mock_does_not_dedupe_idempotent_retries), and
    # only with a broker going down.
    extra, bad = retry_copies(committed_view(raw))
    assert not bad, "duplicates a real broker would keep:\n" + "\n".join(bad[:10])
    assert len(seen) == len(committed) + extra
    if not any(f == "down" for _, _, f, _ in txns):
        assert extra == 0, "duplicates"
    per_key: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for rec in committed_view(raw):
        t, i = map(int, rec.value.decode().split("-"))
        per_key.setdefault((rec.partition, rec.key.decode()), []).append((t, i))
    for order in per_key.values():
        assert order == sorted(order), "a key's messages out of produce order"
    # every transaction that wrote to a partition closed there with a marker: none open
    last = {}
    for rec in sorted(raw, key=lambda x: (x.partition, x.offset)):
        last[rec.partition, rec.producer_id] = rec.control
    assert all(c is not None for c in last.values()), "a transaction left open in the log"
    assert any(r.control == "COMMIT" for r in raw) == bool(committed)


# -- java_compatible: Kafka's murmur2 ---------------------------------------------------


def murmur2(data: bytes) -> int:
    """Kafka's org.apache.kafka.common.utils.Utils.murmur2, in 32-bit signed math."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = data[4 * i] | data[4 * i + 1] << 8 | data[4 * i + 2] << 16 | data[4 * i + 3] << 24
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length & ~3
    rem = length % 4
    if rem == 3:
        h ^= data[tail + 2] << 16
    if rem >= 2:
        h ^= data[tail + 1] << 8
    if rem >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, num_partitions: int) -> int:
    # BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % numPartitions
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


def test_murmur2_matches_kafkas_published_vectors() -> None:
    # From Kafka's UtilsTest.testMurmur2.
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    for data, expected in cases.items():
        assert murmur2(data) == expected, data


def test_java_compatible_partitions_match_murmur2(mock: MockCluster) -> None:
    mock.create_topic("java7", 7, 1)
    keys = [f"customer-{i}".encode() for i in range(60)] + [
        b"",
        b"a",
        b"ab",
        b"abc",
        "ключ".encode(),
    ]
    with cykafka.Producer(
        {"bootstrap.servers": mock.bootstrap_servers, "log_level": 3}, preset="java_compatible"
    ) as p:
        p.produce("java7", b"warmup", partition=0).result(10)  # partition count known
        futs = [(k, p.produce("java7", b"v", key=k)) for k in keys]
        got = {k: f.result(10).partition for k, f in futs}
    expected = {k: java_partition(k, 7) for k in keys}
    # librdkafka: the empty key is hashed like any other (murmur2_random only
    # randomises NULL keys), as Java does.
    assert got == expected
    assert len(set(got.values())) == 7


# -- presets through the real Producer -------------------------------------------------


def test_preset_argument_and_splatted_preset_both_work(mock: MockCluster) -> None:
    a = verify_ordering({}, mock, messages=300, keys=3, partitions=2, preset="ordered")
    b = verify_ordering({**presets.get("ordered")}, mock, messages=300, keys=3, partitions=2)
    assert a.ok and b.ok and a.written == b.written == 300
    assert a.config == b.config
    with (
        cykafka.Producer(
            {"bootstrap.servers": mock.bootstrap_servers, "log_level": 3, **presets.get("ordered")}
        ) as p1,
        cykafka.Producer(
            {"bootstrap.servers": mock.bootstrap_servers, "log_level": 3}, preset="ordered"
        ) as p2,
    ):
        for p in (p1, p2):
            assert p.config["enable.idempotence"] == "true"
            assert p.guarantees.ordering == "per-partition"
            assert p.produce("via-both", b"x").result(10).offset >= 0


def test_leaderless_partition_is_refused_instead_of_crashing() -> None:
    """librdkafka's mock segfaults on a Produce to a partition whose leader is -1; the
    wrapper refuses -1 with an error naming the alternatives.  Run in a child process
    so that a crash fails this test instead of killing the run."""
    code = textwrap.dedent(
        """
        from cykafka import Producer
        from cykafka.testing import MockCluster
        with MockCluster(3) as m:
            m.create_topic("t", 2, 1)
            with Producer({"bootstrap.servers": m.bootstrap_servers, "log_level": 0}) as p:
                p.produce("t", b"x", partition=0).result(10)
                try:
                    m.set_partition_leader("t", 0, -1)
                except ValueError as e:
                    print("refused:", e)
                p.produce("t", b"y", partition=0).result(10)
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "refused:" in out.stdout and "set_broker_down" in out.stdout
    assert "survived" in out.stdout


@pytest.mark.slow
def test_harness_tells_a_mock_sequence_gap_from_a_loss() -> None:
    """librdkafka's mock sometimes appends an idempotent batch whose sequence skips one
    (measured: about 1 run in 30 of this config, e.g. sequences 20 -> 22 with the
    record of 21 absent), and librdkafka then reports the skipped record delivered.
    A real broker refuses such a batch (OUT_OF_ORDER_SEQUENCE_NUMBER), so this is not a
    loss Kafka can produce: the harness must count it as an unconfirmed loss, never
    as a loss.  Runs until it happens (at most 300 runs)."""
    faults = (
        ["NO_ERROR"] * 6 + ["NOT_ENOUGH_REPLICAS"] + ["NO_ERROR"] * 6 + ["NOT_LEADER_OR_FOLLOWER"]
    ) * 80
    cfg = {
        "enable.idempotence": True,
        "retries": 3,
        "linger.ms": 0,
        "batch.num.messages": 10,
    }
    for run in range(300):
        with MockCluster(3) as m:
            m.push_request_errors("Produce", faults)
            r = verify_ordering(cfg, m, messages=2000, faults=paced(0.005), fault_every=10)
        assert r.losses == 0 and r.inversions == 0 and r.duplicates == 0, r
        if r.unconfirmed_losses:
            print(f"run {run}: {r}")
            assert r.ok and "sequence gap" in str(r)
            return
    pytest.fail(
        "no mock sequence gap in 300 runs: if librdkafka's mock now checks "
        "sequences, drop unconfirmed_losses"
    )
