"""Arrow helpers shared by ``cykafka import`` and the Spark sink (pyarrow is imported
by the caller's first use of this module, never by ``import cykafka``).

Everything here is column-at-a-time: a message column comes out as one Arrow array
that ``produce_batch`` reads straight from its buffers, with per-row Python objects
only as a fallback for types Arrow cannot render itself (lists, structs, maps).
"""

from __future__ import annotations

import base64
import datetime
import importlib
import json
from typing import Any

import numpy as np
import pyarrow as pa

from ._native import split_lines


class _Lazy:
    """``pyarrow.compute``, imported on first use: it takes ~30 ms, and splitting lines
    (``lines_array``, all a plain lines import needs) does not use it."""

    def __getattr__(self, name: str) -> Any:
        mod = importlib.import_module("pyarrow.compute")
        globals()["pc"] = mod
        return getattr(mod, name)


pc: Any = _Lazy()

__all__ = ["as_message_column", "lines_array", "record_json"]

# Characters a JSON string must escape; the common case (none present) costs one scan.
_CONTROL_LEFT = r"[\x00-\x08\x0b\x0c\x0e-\x1f]"
_SIMPLE_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))


def _json_default(v: Any) -> Any:
    """JSON for what the json module cannot spell: bytes as base64 text, times in
    RFC 3339 (naive ones taken as UTC), anything else as its text."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.UTC)
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    return str(v)


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _py_json(col: pa.Array) -> pa.Array:
    """Per-row fallback: JSON text of each value (``null`` for nulls); maps become
    objects (a key that is not text is written as its JSON text)."""
    return pa.array(
        [None if v is None else _dumps(v) for v in col.to_pylist(maps_as_pydicts="lossy")],
        pa.string(),
    )


def _float_json(col: pa.Array) -> pa.Array:
    """Doubles stay doubles: Arrow writes 1.0 as "1", JSON readers then see an int."""
    text = pc.cast(col, pa.string())
    whole = pc.match_substring_regex(text, r"^-?[0-9]+$")
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    # NaN and infinities have no JSON spelling: null, like JSON.stringify.
    return pc.if_else(pc.is_finite(col), text, pa.scalar(None, pa.string()))


def _timestamp_text(col: pa.Array) -> pa.Array:
    """RFC 3339 with its offset: UTC, "T" between date and time, "Z" at the end
    (naive timestamps are taken as UTC)."""
    t = col.type
    if t.tz is not None:
        col = pc.cast(col, pa.timestamp(t.unit, "UTC"))
        col = pc.cast(col, pa.timestamp(t.unit))  # same instant, without the zone
    text = pc.strftime(col, format="%Y-%m-%dT%H:%M:%S")  # %S has the fraction
    return pc.binary_join_element_wise(text, "Z", "")


def _timestamp_json(col: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', _timestamp_text(col), '"', "")


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


def _escaped(col: pa.Array) -> tuple[pa.Array, bool]:
    """A string column escaped for JSON: (values, already_quoted).  Usually the values
    come back unquoted (the caller folds the quotes into its separators)."""
    if _needs_escape(col):
        if pc.any(pc.match_substring_regex(col, _CONTROL_LEFT)).as_py():
            # Rare control characters: let the json module spell them (\u0001 ...).
            dumped = [None if v is None else _dumps(v) for v in col.to_pylist()]
            return pa.array(dumped, pa.string()), True
        for old, new in _SIMPLE_ESCAPES:
            col = pc.replace_substring(col, old, new)
    return col, False


def _json_string(col: pa.Array) -> pa.Array:
    """A string column as quoted, escaped JSON strings (nulls stay null)."""
    esc, quoted = _escaped(col)
    return esc if quoted else pc.binary_join_element_wise('"', esc, '"', "")


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _json_values(col: pa.Array) -> pa.Array:
    """JSON text of each value of one column, as a string array; nulls stay null."""
    t = col.type
    if pa.types.is_dictionary(t):
        return _json_values(col.dictionary_decode())
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.string())
    if _is_text(t):
        return pc.cast(_json_string(col), pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        # JSON has no bytes: binary is base64 text, always (never a lossy decode).
        return pa.array(
            [
                None if v is None else '"' + base64.b64encode(v).decode() + '"'
                for v in col.to_pylist()
            ],
            pa.string(),
        )
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t):
        return pc.cast(col, pa.string())  # bare JSON numbers / true / false (decimals exact)
    if pa.types.is_floating(t):
        return _float_json(col)
    if pa.types.is_timestamp(t):
        return _timestamp_json(col)
    if pa.types.is_temporal(t):
        return pc.cast(_json_string(pc.cast(col, pa.string())), pa.string())
    return _py_json(col)


def record_json(batch: Any, exclude: tuple[str, ...] = ()) -> pa.Array:
    """Each row of a RecordBatch/Table as a compact JSON object (UTF-8 string array),
    keys in column order, the same text as ``json.dumps(row, separators=(",", ":"),
    ensure_ascii=False)`` for string columns.

    One ``binary_join_element_wise`` over literal separators and one text column per
    field; a string column without nulls gets its quotes folded into the separators.
    """
    names = [n for n in batch.schema.names if n not in exclude]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate column names {dup}: a JSON object needs unique keys")
    if not names:
        return pa.array(["{}"] * batch.num_rows, pa.string())
    parts: list[Any] = []
    literal = "{"
    for i, name in enumerate(names):
        col = batch.column(batch.schema.get_field_index(name))
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        literal += ("" if i == 0 else ",") + _dumps(str(name)) + ":"
        if _is_text(col.type) and col.null_count == 0:
            esc, quoted = _escaped(col)
            if not quoted:
                parts += [literal + '"', pc.cast(esc, pa.string())]
                literal = '"'
                continue
            parts += [literal, pc.cast(esc, pa.string())]
        else:
            parts += [literal, pc.fill_null(_json_values(col), "null")]
        literal = ""
    parts.append(literal + "}")
    return pc.binary_join_element_wise(*parts, "")


def as_message_column(col: Any, what: str) -> Any:
    """A column as something ``produce_batch`` takes: binary/string Arrow arrays as
    they are, numbers/booleans/dates as their text, nested values as JSON."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    t = col.type
    if pa.types.is_dictionary(t):
        return as_message_column(col.dictionary_decode(), what)
    if (
        pa.types.is_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return col
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.binary())
    if pa.types.is_timestamp(t):
        return _timestamp_text(col)
    if pa.types.is_floating(t):
        return _float_json(col)
    if (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_decimal(t)
        or pa.types.is_temporal(t)
    ):
        return pc.cast(col, pa.string())
    try:
        return _json_values(col)
    except Exception as exc:  # pragma: no cover - defensive: name the column
        raise TypeError(f"{what}: cannot turn Arrow type {t} into message bytes: {exc}") from exc


def lines_array(buf: bytes, end: int = -1) -> pa.Array:
    """Split ``buf[:end]`` (whole lines, each ending in b"\\n") into a binary array of
    its lines without the newlines, with no per-line Python objects: one C pass
    (``_native.split_lines``, without the GIL) copies the line bodies and writes the
    offsets.  ``end=-1``: all of ``buf``.  A b"\\r" before a b"\\n" is dropped too;
    bytes after the last b"\\n" are ignored."""
    data, offsets, n, large = split_lines(buf, end)
    typ = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
