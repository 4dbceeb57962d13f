"""The plain CSV block as message columns in one C pass (``_codecs.csv_json``).

The general reader parses a block with pyarrow and renders JSON with a dozen compute
kernels per column; most blocks need none of what that buys (quoted fields, bad rows
to report, null spellings, fields other than the key).  For those the C pass writes
the same JSON bytes directly; for any other block it answers None and the general
path runs, so which path a block takes never changes what is sent.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

from ..model import Fields
from .base import ReadOptions

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["fast_columns"]


def _eligible(fields: Fields, options: ReadOptions) -> bool:
    return (
        options.encoders is None
        and options.null_value is None
        and not (fields.value or fields.partition or fields.timestamp or fields.headers)
    )


def _empty_field(data: bytes, start: int, end: int, d: bytes) -> bool:
    """Whether some field of ``data[start:end]`` may be empty (a few false alarms, such
    as two delimiters in a row inside quotes, only cost the general path)."""
    if end > start and data[start : start + 1] == d:
        return True
    return any(data.find(p, start, end) >= 0 for p in (d + d, b"\n" + d, d + b"\n", d + b"\r"))


def fast_columns(
    data: bytes,
    start: int,
    end: int,
    names: list[str],
    delimiter: str,
    quote: Optional[int],
    fields: Fields,
    options: ReadOptions,
) -> Optional[tuple[pa.Array, Optional[pa.Array]]]:
    """``(values, keys)`` (string arrays; keys None without a key field) for the
    records of ``data[start:end]``, or None when the block needs the general path."""
    if not _eligible(fields, options):
        return None
    d = delimiter.encode("utf-8")
    if len(d) != 1 or d in b"\r\n" or (quote is not None and d[0] == quote):
        return None
    if quote is not None and data.find(bytes((quote,)), start, end) >= 0:
        return None  # quoted fields: pyarrow's parser
    if options.csv_types != "string" and _empty_field(data, start, end, d):
        return None  # an empty field is null: pyarrow's null handling
    import pyarrow as pa

    from ..._arrow import csv_json

    literals = [
        ("{" if i == 0 else ",") + json.dumps(str(n), ensure_ascii=False) + ":"
        for i, n in enumerate(names)
    ]
    key_col = names.index(fields.key) if fields.key else -1
    got = csv_json(
        data,
        start,
        end,
        [s.encode("utf-8") for s in literals] + [b"}"],
        d[0],
        key_col,
        options.csv_types != "string",
    )
    if got is None:
        return None
    values, voffs, keys, koffs, n, large = got
    typ = pa.large_string() if large else pa.string()
    vals = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(voffs), pa.py_buffer(values)])
    if keys is None:
        return vals, None
    return vals, pa.Array.from_buffers(typ, n, [None, pa.py_buffer(koffs), pa.py_buffer(keys)])
