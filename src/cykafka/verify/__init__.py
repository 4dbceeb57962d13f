"""``cykafka verify``: prove that a topic holds exactly what an import of the files put there.

The files are read by the import's own readers with the same options (so the expected
records are byte for byte what ``cykafka import`` sends: rows it skips as malformed are
not expected either), the topic is read as a ``read_committed`` consumer on real Kafka
sees it, in bulk (:mod:`cykafka.verify.topic`), both reduced to digests in C, and the two
are compared in bounded memory (:mod:`cykafka.verify.matching`): counts, content, copies,
keys split over partitions and per-key order.  Message timestamps are not compared.
Where a topic record is not in the input, the report shows where it first differs from
the input record it most likely stands for (same key; keyless: the first missing one).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..cluster.reach import CONNECT_TIMEOUT_S

if TYPE_CHECKING:
    from ..inputs import Chunk, Fields, Problem, ReadOptions, Source

from .hints import NEARLY_ALL, other_options
from .matching import EXAMPLES, MISS, Counts, Found, Matcher, VerifyReport, first_difference

__all__ = ["EXAMPLES", "VerifyReport", "verify_files"]

_Content = tuple[Optional[bytes], Optional[bytes], tuple[tuple[str, Optional[bytes]], ...]]


def _chunks(
    sources: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    malformed: list[int],
) -> Iterator[tuple[int, Chunk]]:
    from ..inputs.readers import READERS

    def report(p: Problem) -> None:
        if p.stage != "note":
            malformed[0] += 1

    for index, (source, fmt) in enumerate(sources):
        for chunk in READERS[fmt].read(source, fields, options, report):
            yield index, chunk


def _placed(chunk: Chunk, fields: Fields, partitioner: str, count: int) -> Optional[list[int]]:
    """Each row's partition: its --partition-field value or, where that is null (the
    import left the row to the partitioner), the partitioner's choice for its key."""
    from ..inputs import ImportInputError
    from ..partitioning import partition_for

    if chunk.partitions is None:
        return None
    keys = chunk.items(chunk.keys) if None in chunk.partitions else []
    out = []
    for i, p in enumerate(chunk.partitions):
        if p is None:
            # librdkafka's partitioners place a row without a key (and "random" any
            # row) at random: no one can say where it belongs.
            p = None if keys[i] is None else partition_for(partitioner, keys[i], count)
            if p is None:
                raise ImportInputError(
                    f"{chunk.file} row {chunk.row_of(i)}: --partition-field "
                    f"{fields.partition!r} is null, so the partitioner ({partitioner}) "
                    "placed the row, at random for "
                    + ("a row without a key" if keys[i] is None else "any row")
                    + ": verify cannot say where it belongs (verify without "
                    "--partition-field)"
                )
        out.append(int(p))
    return out


def _content(chunk: Chunk, i: int, static: tuple[tuple[str, bytes], ...]) -> _Content:
    hs = tuple((h, v) for h, v in (chunk.headers[i] if chunk.headers is not None else ()) or ())
    return chunk.item(chunk.keys, i), chunk.item(chunk.values, i), hs + static


def verify_files(
    paths: Sequence[str],
    topic: str,
    config: Mapping[str, Any],
    *,
    fmt: Optional[str] = None,
    fields: Optional[Fields] = None,
    options: Optional[ReadOptions] = None,
    partition: Optional[int] = None,
    static_headers: Sequence[tuple[str, bytes]] = (),
    tmp_dir: Optional[str] = None,
    timeout: float = 60.0,
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> VerifyReport:
    """Compare the committed records of ``topic`` with what importing ``paths`` (same
    ``fmt``, ``fields``, read ``options``, ``partition`` and ``static_headers`` as the
    import) produces.
    ``config``: client config (``bootstrap.servers`` and security settings).  Raises
    :class:`~cykafka.inputs.ImportInputError` for bad input, LookupError for a
    missing topic, :class:`~cykafka.cluster.reach.ClusterUnreachable` when no broker
    answers within ``connect_timeout`` seconds (``timeout``: for each read after)."""
    from .._arrow import digest_rows
    from ..cluster.reach import probe_topic
    from ..config import resolve
    from ..inputs import plan_files
    from ..inputs.model import Fields
    from ..inputs.readers import ReadOptions
    from .topic import read_topic

    fields = fields if fields is not None else Fields()
    options = options if options is not None else ReadOptions()
    sources = plan_files(list(paths), fmt, fields, options)
    files = [s.name for s, _ in sources]
    client = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool))}
    # (an unreachable cluster and a missing topic fail before reading the files, the
    # first in seconds and one line, not after librdkafka's retries and pages of its log)
    bootstrap = str(client.get("bootstrap.servers", ""))
    count, _ = probe_topic(bootstrap, client, topic, connect_timeout)
    if count is None:
        raise LookupError(f"topic {topic!r}: no such topic on {bootstrap}")
    with_partition = bool(fields.partition) or partition is not None
    partitioner = str(resolve(client).effective("partitioner").value)
    static = tuple(static_headers)
    malformed = [0]
    report = VerifyReport(topic, files)
    with Matcher(tmp_dir, splits_are_errors=not with_partition) as matcher:
        where = os.path.join(matcher.directory, "rows")
        with open(where, "wb") as rows_out:
            for index, chunk in _chunks(sources, fields, options, malformed):
                n = len(chunk)
                d = np.empty((n, 16), np.uint8)
                k = np.empty(n, np.uint64)
                digest_rows(
                    n,
                    chunk.values,
                    chunk.keys,
                    chunk.headers,
                    static,
                    _placed(chunk, fields, partitioner, count),
                    -1 if partition is None else partition,
                    with_partition,
                    d,
                    k,
                    0,
                )
                matcher.add_expected(d, k)
                pos = np.empty(n, _POS)
                pos["f"] = index
                pos["r"] = (
                    np.asarray(chunk.rows)
                    if chunk.rows is not None
                    else np.arange(chunk.first_row, chunk.first_row + n)
                )
                rows_out.write(pos.tobytes())
        read_topic(client, topic, with_partition, matcher, timeout)
        found = matcher.finish()
        _report(report, found, np.memmap(where, _POS, mode="r") if found.expected else None)
        report.malformed = malformed[0]
        _differences(report, found, client, topic, sources, fields, options, static, timeout)
    if report.missing > NEARLY_ALL * report.expected and report.extra > NEARLY_ALL * report.actual:
        report.hints = other_options(client, topic, sources, fields, options, static, timeout)
    return report


_POS = np.dtype([("f", "<i4"), ("r", "<i8")])


def _report(report: VerifyReport, found: Found, pos: Optional[np.ndarray]) -> None:
    files = report.files

    def where(i: int) -> str:
        assert pos is not None
        return f"{os.path.basename(files[int(pos[i]['f'])])} row {int(pos[i]['r'])}"

    for f in dataclasses.fields(Counts):
        setattr(report, f.name, getattr(found, f.name))
    ex = report.examples
    ex["missing"] = [where(i) for i in found.missing_first]
    ex["duplicated"] = [
        f"partition {p} offset {o}: again {where(i)} (first at partition {fp} offset {fo})"
        for p, o, i, fp, fo in found.dup_first
    ]
    ex["reordered"] = [
        f"partition {p} offset {o} holds {where(i)} but comes after offset {po} "
        f"holding {where(pi)}, which the input has later"
        for p, o, i, po, pi in found.reorder_first
    ]


def _differences(
    report: VerifyReport,
    found: Found,
    client: Mapping[str, Any],
    topic: str,
    sources: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    static: tuple[tuple[str, bytes], ...],
    timeout: float,
) -> None:
    """The examples that need records' content: extra records (with where each first
    differs from the missing input record with its key) and split keys."""
    from .matching import show
    from .topic import fetch_records

    wanted = {(p, o) for p, o, _ in found.extra_first}
    wanted |= {at for _, _, at, _ in found.split_first}
    if not wanted:
        report.examples.setdefault("extra", [])
        report.examples.setdefault("split_keys", [])
        return
    got = fetch_records(client, topic, wanted, timeout)
    # the input record each extra one most likely stands for
    stands: dict[tuple[int, int], int] = {}
    if found.missing:
        need = {k: (p, o) for p, o, k in found.extra_first}
        mm = np.memmap(found.missing_path, MISS, mode="r")
        first_missing = int(mm["i"].min())
        for p, o, k in found.extra_first:
            if k == 0:  # keyless: the first record the topic lacks
                stands[(p, o)] = first_missing
        for lo in range(0, len(mm), 1 << 20):
            part = mm[lo : lo + (1 << 20)]
            for k, at in list(need.items()):
                if k == 0:
                    continue
                hit = np.nonzero(part["k"] == np.uint64(k))[0]
                if len(hit):
                    stands[at] = int(part["i"][hit].min())
                    del need[k]
        del mm
    inputs = _inputs_at(set(stands.values()), sources, fields, options, static)
    ex = report.examples
    ex["extra"] = []
    for p, o, _ in found.extra_first:
        rec = got.get((p, o))
        line = f"partition {p} offset {o}"
        if rec is not None:
            line += f": key {show(rec[0])}, value {show(rec[1])}"
            i = stands.get((p, o))
            if i is not None and i in inputs:
                want, where = inputs[i]
                line += f"; vs {where}, first differs at {first_difference(want, rec)}"
        ex["extra"].append(line)
    ex["split_keys"] = [
        f"key {show(got[at][0]) if at in got else '?'}: {n:,} records in partitions "
        + ", ".join(str(q) for q in parts)
        for _, parts, at, n in found.split_first
    ]


def _inputs_at(
    wanted: set[int],
    sources: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    static: tuple[tuple[str, bytes], ...],
) -> dict[int, tuple[_Content, str]]:
    """The content of the input records numbered ``wanted`` (reading the input again,
    chunk by chunk, up to the last of them)."""
    out: dict[int, tuple[_Content, str]] = {}
    if not wanted:
        return out
    last, at = max(wanted), 0
    for index, chunk in _chunks(sources, fields, options, [0]):
        n = len(chunk)
        for i in sorted(w for w in wanted if at <= w < at + n):
            content = _content(chunk, i - at, static)
            name = os.path.basename(sources[index][0].name)
            out[i] = (content, f"{name} row {chunk.row_of(i - at)}")
        at += n
        if at > last:
            break
    return out
