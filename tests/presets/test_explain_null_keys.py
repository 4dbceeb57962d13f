"""What explain says about NULL keys under java_compatible, measured on librdkafka's
mock cluster."""

from __future__ import annotations

import pytest

from cykafka.explain import explain

# librdkafka's mock cluster (in this process) or a real broker: not a unit test.
pytestmark = pytest.mark.broker


def test_null_key_partitioning_is_stated_as_measured() -> None:
    """java_compatible does not claim Java's KIP-794 behaviour for NULL keys; what it
    states (a random partition kept for sticky.partitioning.linger.ms, 10 ms by
    default, then a new random pick) is what librdkafka does."""
    import re
    import time

    from cykafka import Producer, presets
    from cykafka.explain import NULL_KEYS
    from cykafka.testing import MockCluster

    g = explain({}, preset="java_compatible")
    assert NULL_KEYS in g.notes
    text = presets.describe("java_compatible").guarantees
    assert "KIP-794" in text and "sticky.partitioning.linger.ms" in text
    linger_ms = int(re.search(r"\(default (\d+) ms\)", NULL_KEYS).group(1))
    with MockCluster(1) as m:
        topic = m.create_topic("nullkeys", 8, 1)
        cfg = {"bootstrap.servers": m.bootstrap_servers, "log_level": 0}
        with Producer(cfg, preset="java_compatible") as p:
            p.produce(topic, b"warmup").result(10)
            # A burst inside one sticky period lands on one partition (bursts that a
            # loaded machine stretched past the period are not evidence either way).
            timely = 0
            for _ in range(5):
                start = time.monotonic()
                burst = [p.produce(topic, b"x") for _ in range(20)]
                if time.monotonic() - start < linger_ms / 2000:
                    timely += 1
                    assert len({f.result(10).partition for f in burst}) == 1
                p.flush(10)
                time.sleep(3 * linger_ms / 1000)
            assert timely > 0
            # Spaced by 3 sticky periods: each is a fresh random pick (the chance that
            # 16 picks among 8 partitions all land on one is 8**-15).
            spaced = []
            for _ in range(16):
                spaced.append(p.produce(topic, b"y").result(10).partition)
                time.sleep(3 * linger_ms / 1000)
            assert len(set(spaced)) > 1, spaced
