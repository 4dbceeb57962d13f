"""The inspector's statistics plumbing with no broker: the throttled statistics
callback and the count of produce calls refused for a full buffer."""

from __future__ import annotations

import pytest

import cykafka
from cykafka import Producer
from cykafka.inspector import (
    ThrottledStatsCallback,
    stats_setup,
)


def test_stats_cb_throttle_and_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    import cykafka.inspector.callbacks as ins

    now = [100.0]
    monkeypatch.setattr(ins.time, "monotonic", lambda: now[0])
    got: list[str] = []
    cb = ThrottledStatsCallback(got.append, user_ms=1000, effective_ms=250)
    for i in range(1, 17):  # 4 s of emits every 250 ms
        now[0] = 100.0 + i * 0.25
        cb(str(i))
    assert got == ["4", "8", "12", "16"]

    def user(text: str) -> None:
        pass

    assert stats_setup(0, 250, user) == (250, None)  # librdkafka: interval 0, no calls
    assert stats_setup(100, 250, user) == (100, user)  # the user's is faster: unchanged
    assert stats_setup(0, 0, None) == (0, None)
    ms, wrapped = stats_setup(1000, 250, user)
    assert ms == 250 and isinstance(wrapped, ThrottledStatsCallback) and wrapped.fn is user


def test_buffer_exhausted_total_counts_refused_produce_calls() -> None:
    """Java's buffer-exhausted-total: record sends dropped because the buffer stayed
    full for max.block.ms; here the produce() calls that raised QueueFullError."""
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "queue.buffering.max.messages": 2,
        "max.block.ms": 0,
        "log_level": 0,
    }
    refused = 0
    with Producer(conf, inspect_interval_ms=0) as p:
        futs = []
        for _ in range(5):
            try:
                futs.append(p.produce("t", b"x"))
            except cykafka.QueueFullError:
                refused += 1
        m = p.metrics()
        p.close(0)
    assert refused == 3 and m["buffer-exhausted-total"] == 3, m
