"""Cut a byte stream into blocks of whole records, in linear time and bounded memory.

Text readers (lines, JSON Lines, CSV) all read this way: a block of about
``block_bytes`` ends at the last record boundary in it, and the partial record after it
is carried into the next block.  A record that grows past ``max_record`` bytes is never
held: it is skipped up to its end and yielded as an :class:`Oversized` (its offset, size
and first bytes), so a 1 GB line costs one pass and one block of memory.

With ``quote`` (CSV) a newline inside a quoted field does not end a record: an odd
number of quote bytes since the record's start means "inside quotes" (a doubled quote
counts twice, so it cancels).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Optional, Union

import numpy as np

__all__ = ["Block", "Oversized", "blocks", "record_starts"]

#: Bytes of an oversized record kept to show in the dead-letter file.
HEAD_BYTES = 256
#: The first read of a stream (then doubling up to ``block_bytes``).
FIRST_READ_BYTES = 1 << 20


@dataclass
class Block:
    """``data[:end]`` is whole records, each ending in b"\\n"; ``data[0]`` is at byte
    ``start`` of the stream.  ``torn``: the last record had no final newline (one was
    added), as in a file still being written."""

    data: bytes
    end: int
    start: int
    torn: bool = False


@dataclass
class Oversized:
    """A record longer than ``max_record``, skipped: at ``start``, ``size`` bytes
    (newline excluded), ``newlines`` line breaks inside it (quoted CSV), ``head`` its
    first bytes."""

    start: int
    size: int
    head: bytes
    newlines: int = 0


def _last_boundary(data: bytes, since: int, quote: Optional[int]) -> int:
    """1 + the index of the last record-ending newline in ``data`` at or after
    ``since`` (0 if none); ``data[0]`` starts a record."""
    if quote is None:
        return data.rfind(b"\n", since) + 1
    if data.find(bytes((quote,))) < 0:
        return data.rfind(b"\n", since) + 1
    from ..._native import quoted_last_boundary

    return quoted_last_boundary(data, quote)  # one C pass: no temporaries


def record_starts(data: bytes, end: int, quote: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
    """For ``data[:end]`` (whole records): ``(starts, newlines_before)``: the offset of
    every record start, and how many newlines precede it in ``data`` (its physical line
    is ``first_line + newlines_before``)."""
    a = np.frombuffer(data, np.uint8, end)
    nl = np.flatnonzero(a == 10)
    starts = np.concatenate(([0], nl[:-1] + 1)).astype(np.int64)
    lines = np.arange(len(starts), dtype=np.int64)
    if quote is not None and len(starts):
        q = a == quote
        if q.any():
            before = np.concatenate(([0], np.cumsum(q, dtype=np.int64)))[starts]
            outside = before % 2 == 0
            starts, lines = starts[outside], lines[outside]
    return starts, lines


def blocks(
    f: IO[bytes],
    block_bytes: int,
    max_record: int,
    quote: Optional[int] = None,
    start: int = 0,
) -> Iterator[Union[Block, Oversized]]:
    """Blocks of whole records from ``f`` (already at stream offset ``start``)."""
    pieces: list[bytes] = []  # the partial record carried over, in pieces (no quadratic joins)
    carried = 0
    scanned = 0  # bytes at the start of pieces known to hold no record end
    pos = start  # stream offset of pieces[0] (or of the next read)
    # Small reads first, doubling up to block_bytes: the producer gets its first rows
    # after one small read and parse instead of a whole block's, and later blocks
    # overlap with sending the earlier ones.
    want = min(block_bytes, FIRST_READ_BYTES)
    while True:
        more = f.read(want)
        want = min(want * 2, block_bytes)
        if not more:
            break
        if pieces:
            since = scanned
            pieces.append(more)
            data = b"".join(pieces)
        else:
            since, data = 0, more
        end = _last_boundary(data, since if quote is None else 0, quote)
        if end:
            yield Block(data, end, pos)
            pos += end
            rest = data[end:]
            pieces, carried = ([rest], len(rest)) if rest else ([], 0)
            scanned = carried
        elif len(data) > max_record:
            # One record, still without its end, is already too long to send: skip the
            # rest of it instead of holding it.
            size, newlines, after = _skip_oversized(f, data, quote, block_bytes)
            yield Oversized(pos, size, data[:HEAD_BYTES], newlines)
            if after is None:  # it ran to the end of the stream
                return
            pos += size + 1
            # The rest of the read after it may hold whole records: not scanned yet.
            pieces, carried = ([after], len(after)) if after else ([], 0)
            scanned = 0
        else:
            pieces, carried = [data], len(data)
            scanned = carried
    if carried:
        data = b"".join(pieces)
        end = _last_boundary(data, 0, quote)  # whole records left after a skipped one
        if end:
            yield Block(data[:end], end, pos)
            pos, data = pos + end, data[end:]
        if data:
            yield Block(data + b"\n", len(data) + 1, pos, torn=True)


def _skip_oversized(
    f: IO[bytes], data: bytes, quote: Optional[int], block_bytes: int
) -> tuple[int, int, Optional[bytes]]:
    """Read past the end of the record that starts ``data`` (no boundary in it).
    Returns ``(size, newlines_inside, bytes_after_it)``; ``bytes_after_it`` is None
    when the record ran to the end of the stream."""
    a = np.frombuffer(data, np.uint8)
    parity = int(np.count_nonzero(a == quote)) % 2 if quote is not None else 0
    newlines = data.count(b"\n")
    size = len(data)
    del a
    while True:
        chunk = f.read(block_bytes)
        if not chunk:
            return size, newlines, None
        if quote is None:
            i = chunk.find(b"\n")
            if i >= 0:
                return size + i, 0, chunk[i + 1 :]
        else:
            a = np.frombuffer(chunk, np.uint8)
            nl = np.flatnonzero(a == 10)
            if len(nl):
                inside = (np.cumsum(a == quote, dtype=np.int64)[nl] + parity) % 2 == 1
                ends = nl[~inside]
                if len(ends):
                    i = int(ends[0])
                    newlines += int(np.count_nonzero(nl < i))
                    return size + i, newlines, chunk[i + 1 :]
                newlines += len(nl)
            parity = (parity + int(np.count_nonzero(a == quote))) % 2
        size += len(chunk)
