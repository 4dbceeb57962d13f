"""Arrow helpers shared by ``cykafka import``, verify and the Spark sink, and the one
Python face of the C codecs (``cykafka._codecs``): every other module takes them from
here.  pyarrow and NumPy are imported by the first function that needs them, never by
importing this module, so a plain lines import runs without them.

Everything here is column-at-a-time: a message column comes out as one Arrow array
that ``produce_batch`` reads straight from its buffers.  JSON text is written by one
C pass over the Arrow buffers without the GIL (``cykafka._codecs``), for every type,
at any depth; README "What each Arrow type becomes in JSON" has the rules.
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any

from ._codecs import (
    AvroEncoder,
    Lines,
    arrow_json,
    csv_json,
    digest_records,
    digest_rows,
    key_hash,
    lines,
    quoted_last_boundary,
)


class _Lazy:
    """A module imported on first use, which then takes this placeholder's name: pyarrow
    and NumPy take a tenth of a second, ``pyarrow.compute`` ~30 ms more, and the C
    codecs alone (a plain lines import) use none of them."""

    def __init__(self, name: str, module: str) -> None:
        self._name, self._module = name, module

    def __getattr__(self, attr: str) -> Any:
        mod = importlib.import_module(self._module)
        globals()[self._name] = mod
        return getattr(mod, attr)


if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    np = _Lazy("np", "numpy")
    pa = _Lazy("pa", "pyarrow")
    pc = _Lazy("pc", "pyarrow.compute")

__all__ = [
    "NONFINITE",
    "AvroEncoder",
    "Lines",
    "as_message_column",
    "csv_json",
    "digest_records",
    "digest_rows",
    "key_hash",
    "lines",
    "lines_array",
    "quoted_last_boundary",
    "record_json",
]

#: What a NaN or an infinity becomes: the row refused (reported, never sent), JSON
#: null, or the strings "NaN", "Infinity", "-Infinity" (what Spark's to_json writes).
NONFINITE = ("refuse", "null", "string")

#: Rows left out of an encoded column: row -> why (naming the column and the value).
Refused = dict[int, str]

# Characters a JSON string must escape; the common case (none present) costs one scan.
_CONTROL_LEFT = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"
_SIMPLE_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _needs_escape(col: pa.Array) -> bool:
    """Whether any value holds a byte JSON must escape: one NumPy scan of the data buffer
    (a null's bytes may give a false alarm, which only costs the slow path)."""
    if len(col) == 0:
        return False
    bufs = col.buffers()
    if len(bufs) < 3 or bufs[1] is None or bufs[2] is None:
        return False
    width = 8 if pa.types.is_large_string(col.type) or pa.types.is_large_binary(col.type) else 4
    offsets = np.frombuffer(bufs[1], np.int64 if width == 8 else np.int32)
    lo, hi = int(offsets[col.offset]), int(offsets[col.offset + len(col)])
    data = np.frombuffer(bufs[2], np.uint8)[lo:hi]
    return bool(((data < 0x20) | (data == 0x22) | (data == 0x5C)).any())


def escaped(col: pa.Array) -> tuple[pa.Array, bool]:
    """A string column escaped for JSON: (values, already_quoted).  Usually the values
    come back unquoted (the caller folds the quotes into its separators).  CSV records
    (inputs/encode.py) mix these with bare numbers."""
    if _needs_escape(col):
        if pc.any(pc.match_substring_regex(col, _CONTROL_LEFT)).as_py():
            # Rare control characters: let the json module spell them (\u0001 ...).
            dumped = [None if v is None else _dumps(v) for v in col.to_pylist()]
            return pa.array(dumped, pa.string()), True
        for old, new in _SIMPLE_ESCAPES:
            col = pc.replace_substring(col, old, new)
    return col, False


def json_string(col: pa.Array) -> pa.Array:
    """A string column as quoted, escaped JSON strings (nulls stay null)."""
    esc, quoted = escaped(col)
    esc = pc.cast(esc, pa.string())  # a large_string joins with nothing else
    return esc if quoted else pc.binary_join_element_wise('"', esc, '"', "")


def _refused(
    refusals: list[tuple[int, int, str]], cols: list[pa.Array], names: list[str]
) -> Refused:
    """The C encoder's (row, column, value) as reasons a user can act on."""
    out: Refused = {}
    for row, c, value in refusals:
        verb = "holds" if pa.types.is_nested(cols[c].type) else "is"
        out[row] = (
            f"column {names[c]!r} {verb} {value}, which JSON cannot hold "
            "(--nan null or --nan string to send it)"
        )
    return out


def record_json(
    batch: pa.RecordBatch | pa.Table, exclude: tuple[str, ...] = (), *, nonfinite: str = "refuse"
) -> tuple[pa.Array, Refused]:
    """Each row of a RecordBatch/Table as a compact JSON object (UTF-8 large_string
    array), keys in column order, the same text as ``json.dumps(row, separators=(",",
    ":"), ensure_ascii=False)`` for string columns; and the rows refused.

    ``nonfinite``: what a NaN or infinity (at any depth) becomes: ``"refuse"`` (the
    row is null in the array and named in the result, row -> why, with its column and
    value), ``"null"``, or ``"string"`` ("NaN", "Infinity", "-Infinity", as Spark's
    to_json writes them).
    """
    names = [n for n in batch.schema.names if n not in exclude]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate column names {dup}: a JSON object needs unique keys")
    cols = []
    for name in names:
        col = batch.column(batch.schema.get_field_index(name))
        cols.append(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    if not cols:
        if nonfinite not in NONFINITE:
            raise ValueError(f"nonfinite must be one of {NONFINITE}, not {nonfinite!r}")
        return pa.array(["{}"] * batch.num_rows, pa.large_string()), {}
    out, refusals = arrow_json(cols, [str(n) for n in names], nonfinite)
    return out, _refused(refusals, cols, names)


def as_message_column(
    col: pa.Array | pa.ChunkedArray, what: str, *, nonfinite: str = "refuse"
) -> tuple[pa.Array, Refused]:
    """A column as something ``produce_batch`` takes, and the rows refused (row ->
    why): binary/string Arrow arrays as they are, numbers, booleans, times and
    durations as their text (no JSON quotes), nested values as JSON."""
    if nonfinite not in NONFINITE:
        raise ValueError(f"nonfinite must be one of {NONFINITE}, not {nonfinite!r}")
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    t = col.type
    if pa.types.is_dictionary(t):
        return as_message_column(col.dictionary_decode(), what, nonfinite=nonfinite)
    if (
        pa.types.is_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return col, {}
    if pa.types.is_string_view(t):
        return pc.cast(col, pa.large_string()), {}
    if pa.types.is_binary_view(t):
        return pc.cast(col, pa.large_binary()), {}
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.binary()), {}
    out, refusals = arrow_json([col], None, nonfinite)
    return out, _refused(refusals, [col], [what])


def lines_array(buf: bytes, end: int = -1) -> pa.Array:
    """Split ``buf[:end]`` (whole lines, each ending in b"\\n") into a binary array of
    its lines without the newlines, with no per-line Python objects: one C pass
    (``_codecs.lines``, without the GIL) copies the line bodies and writes the
    offsets.  ``end=-1``: all of ``buf``.  A b"\\r" before a b"\\n" is dropped too;
    bytes after the last b"\\n" are ignored."""
    return lines(buf, end).to_arrow()
