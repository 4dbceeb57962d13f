"""cykafka.partitioning with no broker: murmur2 as Java computes it, and bad arguments
named (against librdkafka's own choice on a broker: test_partitioning.py)."""

from __future__ import annotations

import pytest

from cykafka.partitioning import partition_for


def test_murmur2_matches_java() -> None:
    # Values from Kafka's own UtilsTest.testMurmur2 (signed 32-bit there).
    cases = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    # (murmur2(key) & 0x7fffffff) % count, with a count above every masked hash but one
    for data, java in cases.items():
        assert partition_for("murmur2", data, 0x7FFFFFFF) == (java & 0x7FFFFFFF) % 0x7FFFFFFF


def test_bad_arguments_name_the_culprit() -> None:
    with pytest.raises(ValueError, match="unknown partitioner 'crc'"):
        partition_for("crc", b"k", 3)
    with pytest.raises(ValueError, match="partition_count must be between 1"):
        partition_for("murmur2", b"k", 0)
    with pytest.raises(TypeError, match="key must be bytes"):
        partition_for("murmur2", 5, 3)
    assert partition_for("random", b"k", 3) is None
    assert partition_for("murmur2_random", None, 3) is None
    assert partition_for("consistent_random", b"", 3) is None
    assert partition_for("murmur2", None, 3) == partition_for("murmur2", b"", 3)
