"""``lines``: every line is one message (empty lines too; a final newline does not make
an extra one; ``\\r\\n`` counts as a newline).  A block of the input is split by one C
pass into :class:`cykafka._codecs.Lines`: no Python object per line, and no pyarrow
(produce_batch reads it directly).  With a key delimiter (``-K``) each line is
``KEY<delim>VALUE``, split with pyarrow; a line without it is reported, not sent
keyless."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from ..model import Chunk, Fields, Problem, Report, SourcePosition
from ..sources import Source
from .base import ReadOptions, skip_to
from .blocks import Block, Oversized, blocks

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from ..._arrow import Lines

__all__ = ["READER"]


def _line_offsets(data: bytes, end: int, start: int) -> npt.NDArray[np.int64]:
    import numpy as np

    a = np.frombuffer(data, np.uint8, end)
    nl = np.flatnonzero(a == 10)
    return start + np.concatenate(([0], nl[:-1] + 1)).astype(np.int64)


def _split_keys(values: pa.Array, delim: bytes) -> tuple[pa.Array, pa.Array, Optional[pa.Array]]:
    """``(keys, values, missing)``: the lines that hold ``delim`` cut at its first
    occurrence; ``missing`` is a boolean array of lines without it (None when every
    line has one)."""
    import pyarrow.compute as pc

    pattern = delim.decode("latin-1")
    missing = pc.less(pc.find_substring(values, pattern), 0)
    has_missing = pc.any(missing).as_py()
    if has_missing:
        values = values.filter(pc.invert(missing))
    lists = pc.split_pattern(values, pattern, max_splits=1)
    return pc.list_element(lists, 0), pc.list_element(lists, 1), (missing if has_missing else None)


class LinesReader:
    name = "lines"
    extensions: tuple[str, ...] = (".txt", ".log", ".lines")
    has_fields = False

    def uses_arrow(self, options: ReadOptions) -> bool:
        return options.key_delimiter is not None  # pyarrow splits the keys off

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        return None

    def read(
        self,
        source: Source,
        fields: Fields,
        options: ReadOptions,
        report: Report,
        start: Optional[SourcePosition] = None,
    ) -> Iterator[Chunk]:
        from ..._arrow import lines

        row = start.row if start is not None else 1
        at = (start.offset or 0) if start is not None else 0
        with source.open() as f:
            skip_to(f, at)
            for b in blocks(f, options.block_bytes, options.max_record_bytes, start=at):
                if not isinstance(b, Block):
                    report(_oversized(source, b, row, options))
                    row += 1
                    continue
                values = lines(b.data, b.end)
                chunk = Chunk(
                    values,
                    file=source.name,
                    first_row=row,
                    line_is_row=True,
                    offsets=functools.partial(_line_offsets, b.data, b.end, b.start),
                    end=SourcePosition(
                        source.name, row + len(values), b.start + b.end, row + len(values)
                    ),
                    bytes_done=b.start + b.end,
                )
                if b.torn:
                    report(_torn(source, row + len(values) - 1, b.start + b.end))
                if options.key_delimiter is not None:
                    chunk = _with_keys(chunk, values, options.key_delimiter, report)
                row += len(values)
                if len(chunk):
                    yield chunk


def _with_keys(chunk: Chunk, lines: Lines, delim: bytes, report: Report) -> Chunk:
    """``chunk`` (of ``lines``) with each line cut into key and value at ``delim``."""
    import numpy as np

    keys, values, missing = _split_keys(lines.to_arrow(), delim)
    if missing is not None:
        bad = np.flatnonzero(np.asarray(missing.to_numpy(zero_copy_only=False), bool))
        for i in bad.tolist():
            report(
                chunk.problem(
                    i,
                    "parse",
                    f"no key delimiter {delim.decode('utf-8', 'replace')!r} in the line",
                    raw=chunk.item(chunk.values, i),
                )
            )
        keep = np.flatnonzero(~np.asarray(missing.to_numpy(zero_copy_only=False), bool))
        chunk.rows = chunk.first_row + keep
        chunk.line_is_row = False
        chunk.lines = chunk.rows
        offsets = chunk.offset_array()
        if offsets is not None:
            chunk.offsets = np.asarray(offsets)[keep]
    chunk.values, chunk.keys = values, keys
    return chunk


def _oversized(source: Source, b: Oversized, row: int, options: ReadOptions) -> Problem:
    return Problem(
        source.name,
        "parse",
        f"line of {b.size:,} bytes is longer than message.max.bytes "
        f"({options.max_record_bytes:,}); skipped",
        line=row,
        row=row,
        offset=b.start,
        raw=b.head,
    )


def _torn(source: Source, row: int, offset: int) -> Problem:
    """Not a failure: a note that the last line had no newline (the summary shows it)."""
    return Problem(
        source.name,
        "note",
        "the last line has no final newline (was the file still being written?); "
        "it was sent as it is",
        line=row,
        row=row,
        offset=offset,
    )


READER = LinesReader()
