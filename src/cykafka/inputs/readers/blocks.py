"""Cut a byte stream into blocks of whole records, in linear time and bounded memory.

Text readers (lines, JSON Lines, CSV) all read this way: a block of about
``block_bytes`` ends at the last record boundary in it, and the partial record after it
is carried into the next block.  A record that grows past ``max_record`` bytes is never
held: it is skipped up to its end and yielded as an :class:`Oversized` (its offset, size
and first bytes), so a 1 GB line costs one pass and one block of memory.

Where a record ends is decided here only, for the split and for the positions
(:func:`record_starts`, :func:`line_ends`, :func:`first_records`) alike:

- a line ends at b"\\n" (so b"\\r\\n" too), and with ``lone_cr`` (CSV) also at a
  b"\\r" not followed by b"\\n", as pyarrow's CSV parser and Python's csv module read
  it (old Mac files end every line so).  A b"\\r" that ends the bytes read so far is
  undecided until the next byte is known.
- with ``quote`` (CSV) a line end inside a quoted field does not end a record: an odd
  number of quote bytes since the record's start means "inside quotes" (a doubled
  quote counts twice, so it cancels).  It still counts as a line of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:  # NumPy is loaded when a quoted format needs it: lines never do
    import numpy as np
    import numpy.typing as npt

    from ..sources import ByteStream

__all__ = ["Block", "Oversized", "blocks", "first_records", "line_ends", "record_starts"]

#: Bytes of an oversized record kept to show in the dead-letter file.
HEAD_BYTES = 256
#: The first read of a stream (then doubling up to ``block_bytes``).
FIRST_READ_BYTES = 1 << 20


@dataclass
class Block:
    """``data[:end]`` is whole records, each ending in a line end (see the top);
    ``data[0]`` is at byte ``start`` of the stream.  ``torn``: the last record had no
    final line end (b"\\n" was added), as in a file still being written."""

    data: bytes
    end: int
    start: int
    torn: bool = False


@dataclass
class Oversized:
    """A record longer than ``max_record``, skipped: at ``start``, ``size`` bytes (its
    one-byte end excluded), ``newlines`` line ends inside it (quoted CSV), ``head`` its
    first bytes."""

    start: int
    size: int
    head: bytes
    newlines: int = 0


def line_ends(data: bytes, lo: int, hi: int, lone_cr: bool = False) -> int:
    """How many line ends ``data[lo:hi]`` holds (quoted or not); ``hi`` is not between
    the b"\\r" and b"\\n" of one."""
    n = data.count(b"\n", lo, hi)
    if lone_cr:
        n += data.count(b"\r", lo, hi) - data.count(b"\r\n", lo, hi)
    return n


def _end_mask(a: npt.NDArray[np.uint8], lone_cr: bool) -> npt.NDArray[np.bool_]:
    """The bytes of ``a`` that end a line (a b"\\r" as its last byte is taken as lone)."""
    ends = a == 10
    if lone_cr:
        cr = a == 13
        if cr.any():
            cr[:-1] &= a[1:] != 10
            ends |= cr
    return ends


def _first_end(data: bytes, lo: int, hi: int, lone_cr: bool) -> int:
    """The index of the first line end in ``data[lo:hi]``, -1 if none (a b"\\r" at
    ``hi - 1`` is taken as lone)."""
    nl = data.find(b"\n", lo, hi)
    if lone_cr:
        cr = data.find(b"\r", lo, hi if nl < 0 else nl)
        if cr >= 0 and cr != nl - 1:
            return cr  # before the first b"\n", so not the b"\r" of a b"\r\n"
    return nl


def _last_boundary(
    data: bytes, since: int, quote: Optional[int], lone_cr: bool, final: bool
) -> int:
    """1 + the index of the last record end in ``data`` at or after ``since`` (0 if
    none); ``data[0]`` starts a record.  ``final``: no bytes follow ``data``."""
    if quote is None or data.find(bytes((quote,))) < 0:
        nl = data.rfind(b"\n", since)
        if not lone_cr:
            return nl + 1
        # A lone CR after the last LF; the byte before ``since`` may be a CR that the
        # new bytes decide.
        cr = data.rfind(b"\r", max(nl + 1, since - 1, 0), len(data) if final else len(data) - 1)
        return max(nl, cr) + 1
    from ..._arrow import quoted_last_boundary

    return quoted_last_boundary(data, quote, lone_cr, final)  # one C pass: no temporaries


def record_starts(
    data: bytes, end: int, quote: Optional[int], lone_cr: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For ``data[:end]`` (whole records): ``(starts, lines_before)``: the offset of
    every record start, and how many line ends precede it in ``data`` (its physical
    line is ``first_line + lines_before``)."""
    import numpy as np

    a = np.frombuffer(data, np.uint8, end)
    nl = np.flatnonzero(_end_mask(a, lone_cr))
    starts = np.concatenate(([0], nl[:-1] + 1)).astype(np.int64)
    lines = np.arange(len(starts), dtype=np.int64)
    if quote is not None and len(starts):
        q = a == quote
        if q.any():
            before = np.concatenate(([0], np.cumsum(q, dtype=np.int64)))[starts]
            outside = before % 2 == 0
            starts, lines = starts[outside], lines[outside]
    return starts, lines


def first_records(
    data: bytes, end: int, quote: Optional[int], lone_cr: bool = False, start: int = 0
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each record of ``data[start:end]`` (whole records), lazily:
    finding the header costs its own length, not the block's."""
    q = bytes((quote,)) if quote is not None else None
    s = i = start
    inside = False
    while s < end:
        e = _first_end(data, i, end, lone_cr)
        if e < 0:
            return
        if q is not None and data.count(q, i, e) % 2:
            inside = not inside
        i = e + 1
        if not inside:
            yield s, i
            s = i


def blocks(
    f: ByteStream,
    block_bytes: int,
    max_record: int,
    quote: Optional[int] = None,
    start: int = 0,
    lone_cr: bool = False,
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
        end = _last_boundary(data, since if quote is None else 0, quote, lone_cr, False)
        if end:
            yield Block(data, end, pos)
            pos += end
            rest = data[end:]
            pieces, carried = ([rest], len(rest)) if rest else ([], 0)
            scanned = carried
        elif len(data) > max_record:
            # One record, still without its end, is already too long to send: skip the
            # rest of it instead of holding it.
            size, newlines, after = _skip_oversized(f, data, quote, block_bytes, lone_cr)
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
        end = _last_boundary(
            data, 0, quote, lone_cr, True
        )  # whole records left after a skipped one
        if end:
            yield Block(data[:end], end, pos)
            pos, data = pos + end, data[end:]
        if data:
            yield Block(data + b"\n", len(data) + 1, pos, torn=True)


def _skip_oversized(
    f: ByteStream, data: bytes, quote: Optional[int], block_bytes: int, lone_cr: bool
) -> tuple[int, int, Optional[bytes]]:
    """Read past the end of the record that starts ``data`` (no record end in it but
    perhaps an undecided b"\\r" last).  Returns ``(size, line_ends_inside,
    bytes_after_it)``; ``bytes_after_it`` is None when the record ran to the end of
    the stream."""
    import numpy as np

    held = b""  # a b"\r" last in the bytes so far: lone or not is known with the next read
    if lone_cr and data.endswith(b"\r"):
        data, held = data[:-1], b"\r"
    parity = data.count(bytes((quote,))) % 2 if quote is not None else 0
    newlines = line_ends(data, 0, len(data), lone_cr)
    size = len(data)
    while True:
        chunk = f.read(block_bytes)
        piece, held = held + chunk, b""
        if chunk and lone_cr and piece.endswith(b"\r"):
            piece, held = piece[:-1], b"\r"
        if quote is None:
            i = _first_end(piece, 0, len(piece), lone_cr)
            if i >= 0:
                return size + i, newlines, piece[i + 1 :] + held
        elif piece:
            a = np.frombuffer(piece, np.uint8)
            nl = np.flatnonzero(_end_mask(a, lone_cr))
            if len(nl):
                inside = (np.cumsum(a == quote, dtype=np.int64)[nl] + parity) % 2 == 1
                ends = nl[~inside]
                if len(ends):
                    i = int(ends[0])
                    newlines += int(np.count_nonzero(nl < i))
                    return size + i, newlines, piece[i + 1 :] + held
                newlines += len(nl)
            parity = (parity + int(np.count_nonzero(a == quote))) % 2
        size += len(piece)
        if not chunk:
            return size, newlines, None
