"""``cykafka verify``: prove that a topic holds exactly what an import of the files put there.

The files are read by the import's own readers with the same options (so the expected
records are byte for byte what ``cykafka import`` sends: rows it skips as malformed are
not expected either), the topic is read as a ``read_committed`` consumer on real Kafka
sees it (:mod:`cykafka.importer.committed`, right on Tansu too), and the two are
compared record by record (:mod:`cykafka.verify.matching`): counts, content, copies and
per-key order.  Message timestamps are not compared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ..importer import Fields, Problem, ReadOptions, Source

from .matching import EXAMPLES, Expected, VerifyReport, compare

__all__ = ["EXAMPLES", "VerifyReport", "verify_files"]


def _expected(
    plan: Sequence[tuple[Source, str]],
    fields: Fields,
    options: ReadOptions,
    partition: Optional[int],
    static: tuple[tuple[str, bytes], ...],
    malformed: list[int],
) -> Iterator[Expected]:
    from ..importer.readers import READERS

    def report(p: Problem) -> None:
        if p.stage != "note":
            malformed[0] += 1

    for index, (source, fmt) in enumerate(plan):
        for chunk in READERS[fmt].read(source, fields, options, report):
            n = len(chunk)
            keys = chunk.items(chunk.keys)
            values = chunk.items(chunk.values)
            headers: list[Any] = chunk.headers if chunk.headers is not None else [()] * n
            parts = chunk.partitions if chunk.partitions is not None else [partition] * n
            for i in range(n):
                hs = tuple((h, v) for h, v in headers[i] or ()) + static
                p = parts[i]
                yield Expected(
                    keys[i],
                    values[i],
                    hs,
                    None if p is None else int(p),
                    index,
                    chunk.row_of(i),
                )


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
) -> VerifyReport:
    """Compare the committed records of ``topic`` with what importing ``paths`` (same
    ``fmt``, ``fields``, read ``options``, ``partition`` and ``static_headers`` as the
    import) produces.
    ``config``: client config (``bootstrap.servers`` and security settings).  Raises
    :class:`~cykafka.importer.ImportInputError` for bad input, LookupError for a
    missing topic."""
    from ..importer import plan_files
    from ..importer.committed import committed_messages, partitions_of
    from ..importer.model import Fields
    from ..importer.readers import ReadOptions

    fields = fields if fields is not None else Fields()
    options = options if options is not None else ReadOptions()
    plan = plan_files(list(paths), fmt, fields, options)
    client = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool))}
    partitions_of(client, topic, timeout)  # a missing topic fails before reading the files
    malformed = [0]
    report = compare(
        _expected(plan, fields, options, partition, tuple(static_headers), malformed),
        committed_messages(client, topic, timeout=timeout),
        with_partition=bool(fields.partition) or partition is not None,
        topic=topic,
        files=[s.name for s, _ in plan],
        tmp_dir=tmp_dir,
    )
    report.malformed = malformed[0]
    return report
