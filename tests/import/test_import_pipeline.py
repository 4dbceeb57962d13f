"""The import's producer configuration (``importer/pipeline.py``): its own defaults,
and the queue bound that keeps an idempotent producer's broker thread from spinning."""

from __future__ import annotations

import pytest

from cykafka.importer import resolve_import

BOOT = {"bootstrap.servers": "127.0.0.1:1"}


def _kbytes(resolved) -> str:
    return resolved.effective("queue.buffering.max.kbytes").value


@pytest.mark.parametrize("preset", ["ordered", "strict_ordered", "ordered+java_compatible"])
def test_an_idempotent_import_queues_three_batches_per_partition(preset) -> None:
    one, three = resolve_import(BOOT, preset, 1), resolve_import(BOOT, preset, 3)
    assert _kbytes(one) == str(-(-3 * 1_000_000 // 1024))  # batch.size 1,000,000
    assert _kbytes(three) == str(-(-9 * 1_000_000 // 1024))
    s = three.effective("queue.buffering.max.kbytes")
    assert (s.source, s.origin) == ("default", "cykafka import")


def test_the_bound_follows_batch_size_and_never_refuses_the_largest_message() -> None:
    small = resolve_import({**BOOT, "batch.size": "100000"}, "ordered", 2)
    assert _kbytes(small) == str(-(-2 * 1_000_000 // 1024))  # 2 x message.max.bytes
    big = resolve_import({**BOOT, "message.max.bytes": "20000000"}, "ordered", 1)
    assert int(_kbytes(big)) * 1024 >= 2 * 20_000_000


@pytest.mark.parametrize(
    "config, preset, partitions",
    [
        ({}, None, 1),  # not idempotent: up to 1,000,000 requests in flight, no spin
        ({}, "throughput", 1),
        ({}, "ordered", None),  # partition count unknown: librdkafka's default
        ({"queue.buffering.max.kbytes": "65536"}, "ordered", 1),  # the user's bound
        ({"queue.buffering.max.messages": "5000"}, "ordered", 1),
        ({}, "ordered", 400),  # above librdkafka's own 1 GiB
    ],
)
def test_the_bound_is_left_alone(config, preset, partitions) -> None:
    r = resolve_import({**BOOT, **config}, preset, partitions)
    want = config.get("queue.buffering.max.kbytes", "1048576")
    assert _kbytes(r) == want
    assert r.effective("linger.ms").value == "20"  # the import's own default stays


def test_an_exactly_once_import_is_bounded_too() -> None:
    r = resolve_import({**BOOT, "transactional.id": "t"}, ["ordered", "exactly_once"], 2)
    assert _kbytes(r) == str(-(-6 * 1_000_000 // 1024))


def test_rows_after_keeps_the_rows_numbered_after_the_skip() -> None:
    """--skip-rows and a compressed resume keep a chunk's rows numbered after N, also
    when malformed rows left gaps in the numbering; a chunk wholly before N is None."""
    import numpy as np

    from cykafka.importer.pipeline import rows_after, skipping
    from cykafka.inputs.model import Chunk, Problem, SourcePosition

    end = SourcePosition("f", 12)
    plain = Chunk([b"a", b"b", b"c"], file="f", first_row=5, end=end)
    assert rows_after(plain, 4) is plain
    kept = rows_after(plain, 6)
    assert kept is not None and kept.values == [b"c"] and kept.row_of(0) == 7 and kept.end == end
    assert rows_after(plain, 7) is None
    gaps = Chunk([b"a", b"b", b"c"], file="f", first_row=5, rows=np.array([5, 8, 11]), end=end)
    kept = rows_after(gaps, 9)
    assert kept is not None and kept.values == [b"c"] and kept.row_of(0) == 11

    got: list[Problem] = []
    report = skipping(got.append, 6)
    for p in (Problem("f", "parse", "bad", row=6), Problem("f", "parse", "bad", row=7),
              Problem("f", "note", "a note", line=1)):  # fmt: skip
        report(p)
    assert [(p.stage, p.row) for p in got] == [("parse", 7), ("note", None)]
