"""`cykafka verify`'s comparison (``verify/matching.py``) on inputs large enough to
fill every spill bucket and to span several ranges of keyless offsets, each with one
known fault, so every check is seen to fire exactly where it should (the integration
tests read real topics, but of tens of records)."""

from __future__ import annotations

import numpy as np
import pytest

from cykafka._codecs import digest_rows
from cykafka.verify.matching import Found, Matcher

N = 200_000  # two partitions of 100,000 offsets: keyless records span two ranges each


def _digests(values: list[bytes], keys: list[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    n = len(values)
    d, k = np.empty((n, 16), np.uint8), np.empty(n, np.uint64)
    digest_rows(n, values, keys, None, (), None, -1, False, d, k, 0)
    return d, k


def _compare(
    values: list[bytes],
    keys: list[bytes | None],
    topic: list[list[int]],
    changed: dict[int, bytes] | None = None,
) -> Found:
    """Compare the input (``values``, ``keys``) with a topic whose partition ``q``
    holds the input records numbered ``topic[q]``, in that order (``changed``: input
    number -> the value the topic holds instead)."""
    with Matcher(splits_are_errors=True) as m:
        d, k = _digests(values, keys)
        for lo in range(0, N, 30_000):
            m.add_expected(d[lo : lo + 30_000], k[lo : lo + 30_000])
        for q, rows in enumerate(topic):
            vals = [(changed or {}).get(i, values[i]) for i in rows]
            td, tk = _digests(vals, [keys[i] for i in rows])
            m.add_actual(q, td, tk, np.arange(len(rows), dtype=np.int64))
        return m.finish()


def _faults(f: Found) -> dict[str, int]:
    names = ("missing", "extra", "duplicated", "split_keys", "reordered")
    return {n: getattr(f, n) for n in names if getattr(f, n)}


def _keyless() -> tuple[list[bytes], list[bytes | None], list[list[int]]]:
    values = [b"row-%d" % i for i in range(N)]
    return values, [None] * N, [list(range(0, N, 2)), list(range(1, N, 2))]


def _keyed() -> tuple[list[bytes], list[bytes | None], list[list[int]]]:
    values = [b"row-%d" % i for i in range(N)]
    keys: list[bytes | None] = [b"user-%d" % (i % 5000) for i in range(N)]
    # each key in one partition (by its number's parity), in input order
    return values, keys, [list(range(0, N, 2)), list(range(1, N, 2))]


@pytest.mark.parametrize("shape", [_keyless, _keyed])
def test_an_exact_topic_passes(shape) -> None:
    values, keys, topic = shape()
    f = _compare(values, keys, topic)
    assert (f.expected, f.actual, _faults(f)) == (N, N, {})


def test_two_keyless_records_swapped_across_a_range_boundary_are_one_inversion() -> None:
    values, keys, topic = _keyless()
    # offsets 65535 and 65536 of partition 0: the last of one range, the first of the next
    topic[0][65535], topic[0][65536] = topic[0][65536], topic[0][65535]
    f = _compare(values, keys, topic)
    assert _faults(f) == {"reordered": 1}
    assert f.reorder_first == [(0, 65536, 2 * 65535, 65535, 2 * 65536)]


def test_a_keyed_record_out_of_its_keys_order_is_found() -> None:
    values, keys, topic = _keyed()
    # records 0 and 10000 share key user-0; partition 0 now holds 10000 first
    a, b = topic[0].index(0), topic[0].index(10000)
    topic[0][a], topic[0][b] = topic[0][b], topic[0][a]
    f = _compare(values, keys, topic)
    # user-0's records in partition 0 now read 10000, 5000, 0, 15000...: two inversions
    assert _faults(f) == {"reordered": 2}


def test_missing_extra_duplicated_and_split_are_each_counted_once() -> None:
    values, keys, topic = _keyed()
    topic[0].remove(4)  # missing
    topic[1].append(7)  # duplicated: a second copy in its own partition
    topic[0].remove(2)
    topic[1].append(2)  # user-2's other records are in partition 0: split
    f = _compare(values, keys, topic, changed={8: b"row-8 changed"})  # extra (+ missing)
    assert _faults(f) == {"missing": 2, "extra": 1, "duplicated": 1, "split_keys": 1}
    assert f.missing_first == [4, 8]
    assert [e[:2] for e in f.extra_first] == [(0, 2)]  # partition 0 now reads 0, 6, 8
    assert f.dup_first == [(1, 100_000, 7, 1, 3)]
    assert [(s[1], s[2], s[3]) for s in f.split_first] == [([0, 1], (0, 2499), N // 5000)]
