"""A producer closed with its transaction open, against the real test broker: by
close(), by the end of a with-block (raising or not), and at interpreter exit.  The
transaction is aborted (committed only with ``close(commit=True)``), the futures of its
messages not yet delivered fail saying why, and a warning says what happened.  The raw
log shows the outcome: an ABORT (or COMMIT) marker, and what read_committed readers see."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import cykafka
from cykafka.testing import read_raw_log
from support.consume import committed_records

N = 5  # produce() calls, then a batch of 3: one transaction of 8 messages


def _open_transaction(bs: str, name: str) -> tuple[cykafka.Producer, list, cykafka.BatchFuture]:
    # linger.ms: the messages wait in the producer until close(), so that their
    # futures are pending when it comes (flush() first shows the other case).
    p = cykafka.Producer(
        {"bootstrap.servers": bs, "transactional.id": f"tx-{name}", "linger.ms": 20_000},
        preset="exactly_once",
    )
    p.init_transactions(30)
    p.begin_transaction()
    futs = [p.produce(name, f"v{i}".encode()) for i in range(N)]
    return p, futs, p.produce_batch(name, [b"b0", b"b1", b"b2"])


def _markers(bs: str, name: str) -> tuple[list, list, list]:
    """The log's transaction markers, its data records, and what readers see (read
    first: on Apache Kafka a read_committed reader waits until the markers are written)."""
    seen = committed_records(bs, name)
    raw = read_raw_log(bs, name)
    data = [r for r in raw if not r.control]
    return [r.control for r in raw if r.control], data, seen


@pytest.mark.parametrize("how", ["close", "with-block", "with-block-raising"])
def test_closing_inside_a_transaction_aborts_it_and_fails_its_futures(
    broker, topic, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    bs, name = broker.bootstrap_servers, topic()
    p, futs, batch = _open_transaction(bs, name)
    with caplog.at_level(logging.WARNING, logger="cykafka"):
        if how == "close":
            p.close()
        elif how == "with-block":
            with p:
                pass
        else:
            with pytest.raises(ValueError, match="boom"):
                with p:
                    raise ValueError("boom")
    for f in futs:
        exc = f.exception(10)
        assert isinstance(exc, cykafka.KafkaDeliveryError), exc
        assert "transaction" in str(exc) and "aborted" in str(exc), exc
    rep = batch.result(10)
    assert (rep.delivered, rep.failed) == (0, 3)
    assert "transaction" in rep.errors[0][1].message
    assert f"open transaction of {N + 3} messages: aborted" in caplog.text
    # Purged before they were sent: nothing reached the log (else an ABORT follows it).
    markers, data, visible = _markers(bs, name)
    assert visible == [] and (data == [] or markers == ["ABORT"])


def test_a_transaction_written_then_closed_is_aborted_and_its_delivered_futures_stand(
    broker, topic, caplog: pytest.LogCaptureFixture
) -> None:
    """A future's outcome never changes once given: those that said delivered (written
    to the log, as in any transaction before its commit) stay so; the warning counts
    them, and no reader sees them."""
    bs, name = broker.bootstrap_servers, topic()
    p, futs, batch = _open_transaction(bs, name)
    p.flush()
    offsets = [f.result(0).offset for f in futs]
    with caplog.at_level(logging.WARNING, logger="cykafka"):
        p.close()
    assert [f.result(0).offset for f in futs] == offsets
    assert batch.result(0).delivered == 3
    assert f"{N + 3} of them had been written (their futures said delivered" in caplog.text
    markers, data, visible = _markers(bs, name)
    assert markers == ["ABORT"] and len(data) == N + 3 and visible == []


def test_close_commit_true_commits_the_open_transaction(broker, topic) -> None:
    bs, name = broker.bootstrap_servers, topic()
    p, futs, batch = _open_transaction(bs, name)
    p.close(commit=True)
    assert all(f.result(0).offset >= 0 for f in futs) and batch.result(0).delivered == 3
    markers, _, visible = _markers(bs, name)
    assert markers == ["COMMIT"] and len(visible) == N + 3


def test_interpreter_exit_inside_a_transaction_aborts_it_and_says_so(broker, topic) -> None:
    bs, name = broker.bootstrap_servers, topic()
    script = (
        "import cykafka\n"
        f"p = cykafka.Producer({{'bootstrap.servers': {bs!r}, 'transactional.id': "
        f"'exit-{name}', 'linger.ms': 20000}}, preset='exactly_once')\n"
        "p.init_transactions(30)\n"
        "p.begin_transaction()\n"
        f"futs = [p.produce({name!r}, b'v%d' % i) for i in range({N})]\n"
        "p.flush()\n"
        f"futs += [p.produce({name!r}, b'late')]\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert f"open transaction of {N + 1} messages: aborted" in done.stderr, done.stderr
    markers, data, visible = _markers(bs, name)
    assert markers == ["ABORT"] and len(data) == N and visible == []


def test_dropped_in_its_own_callback_inside_a_transaction_says_so(
    broker, topic, caplog: pytest.LogCaptureFixture
) -> None:
    """The one close that cannot abort: the last reference goes away in an on_delivery
    callback, on the thread that serves the reports an abort waits for.  It says so,
    and nothing is committed."""
    import time

    bs, name = broker.bootstrap_servers, topic()
    p = cykafka.Producer(
        {"bootstrap.servers": bs, "transactional.id": f"tx-{name}", "linger.ms": 5},
        preset="exactly_once",
    )
    p.init_transactions(30)
    p.begin_transaction()
    p.produce_batch(name, [b"a", b"b"]).result(30)
    holder = [p]
    del p
    with caplog.at_level(logging.WARNING, logger="cykafka"):
        with pytest.warns(ResourceWarning, match="unclosed cykafka Producer"):
            last = holder[0].produce(name, b"c", on_delivery=lambda e, m: holder.clear())
            assert last.result(30).offset >= 0
            deadline = time.monotonic() + 30
            while "dropped in its own callback" not in caplog.text:
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.05)
    assert "open transaction of 3 messages: not committed" in caplog.text
    _, data, visible = _markers(bs, name)
    assert len(data) == 3 and visible == []
