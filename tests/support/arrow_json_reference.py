"""The reference for cykafka's C encoder from Arrow to JSON (``cykafka._codecs``):
the vectorized pyarrow encoder the importer used before it, with the value rules
the C encoder follows (NaN and infinities by policy, durations and intervals as
ISO 8601, nested values written as columns of their type are).  Only the
property test (test_arrow_json.py) uses it: slow on nested types, byte for byte
what the C encoder must write.
"""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The string escaping is shared: the CSV path still uses it, unchanged.
from cykafka._arrow import escaped, json_string

__all__ = ["as_message_column", "record_json"]


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


NONFINITE = ("refuse", "null", "string")

#: Spellings of the non-finite doubles under nonfinite="string": Jackson's (what
#: Spark's to_json writes), also what JavaScript's Number() and Python's float() read.
_NONFINITE_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}

Refused = dict[int, str]


def _refusal(what: str, nested: bool, value: str) -> str:
    verb = "holds" if nested else "is"
    return f"{what} {verb} {value}, which JSON cannot hold (--nan null or --nan string to send it)"


def _float_json(col: pa.Array, nonfinite: str) -> tuple[pa.Array, Refused]:
    """Doubles stay doubles: Arrow writes 1.0 as "1", JSON readers then see an int.
    NaN and the infinities have no JSON spelling: ``nonfinite`` says what they become
    (refused, null, or the strings "NaN", "Infinity", "-Infinity")."""
    text = pc.cast(col, pa.string())
    whole = pc.match_substring_regex(text, r"^-?[0-9]+$")
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    finite = pc.fill_null(pc.is_finite(col), True)
    if pc.all(finite).as_py():
        return text, {}
    odd = pc.invert(finite)
    refused: Refused = {}
    if nonfinite == "string":
        num = pc.cast(col, pa.float32()) if pa.types.is_float16(col.type) else col
        spelled = pc.if_else(
            pc.is_nan(num),
            '"NaN"',
            pc.if_else(pc.greater(num, 0), '"Infinity"', '"-Infinity"'),
        )
        return pc.if_else(odd, spelled, text), {}
    if nonfinite == "refuse":
        names = pc.cast(col, pa.string()).to_pylist()
        for i in pc.indices_nonzero(odd).to_pylist():
            refused[i] = _NONFINITE_TEXT[names[i]]
    return pc.if_else(odd, pa.scalar(None, pa.string()), text), refused


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


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _iso_seconds(v: int, digits: int) -> str:
    """``v`` units of 10**-digits seconds as exact decimal seconds ("1.5", "-0.001")."""
    sign, (whole, frac) = "-" if v < 0 else "", divmod(abs(v), 10**digits)
    text = f"{frac:0{digits}d}".rstrip("0") if digits and frac else ""
    return f"{sign}{whole}" + (f".{text}" if text else "")


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _duration_text(col: pa.Array) -> pa.Array:
    """ISO 8601 durations in seconds, exact, as Java's Duration.toString writes them
    without the hours and minutes ("PT0.001S", "PT-1.5S", "PT86400S")."""
    d = _UNIT_DIGITS[col.type.unit]
    ints = pc.cast(col, pa.int64()).to_pylist()
    return pa.array([None if v is None else f"PT{_iso_seconds(v, d)}S" for v in ints], pa.string())


def _interval_text(col: pa.Array) -> pa.Array:
    """ISO 8601 periods: "P14M" (months), "P1M2DT0.000000003S" (month_day_nano)."""
    vals = col.to_pylist()
    if col.type == pa.month_day_nano_interval():
        return pa.array(
            [
                None if v is None else f"P{v.months}M{v.days}DT{_iso_seconds(v.nanoseconds, 9)}S"
                for v in vals
            ],
            pa.string(),
        )
    return pa.array([None if v is None else f"P{v}M" for v in vals], pa.string())


def _quoted(text: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', text, '"', "")


def _date64_days(col: pa.Array) -> pa.Array:
    """date64 as date32, whole days toward the earlier day (Arrow's cast truncates a
    negative non-midnight date64 toward 1970)."""
    ms = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False)
    days = np.floor_divide(np.nan_to_num(ms), 86_400_000).astype(np.int32)
    return pa.Array.from_buffers(pa.date32(), len(col), [col.buffers()[0], pa.py_buffer(days)])


def _scalar_text(col: pa.Array, nonfinite: str) -> tuple[pa.Array, Refused, bool]:
    """(text, refused, quoted): the text of each value of a scalar column without JSON
    quotes, and whether JSON quotes it (times, durations ...)."""
    t = col.type
    if pa.types.is_floating(t):
        text, refused = _float_json(col, nonfinite)
        return text, refused, False
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t):
        return pc.cast(col, pa.string()), {}, False  # bare JSON numbers / true / false
    if pa.types.is_timestamp(t):
        return _timestamp_text(col), {}, True
    if pa.types.is_duration(t):
        return _duration_text(col), {}, True
    if pa.types.is_interval(t):
        return _interval_text(col), {}, True
    if pa.types.is_date64(t):
        return pc.cast(_date64_days(col), pa.string()), {}, True
    if pa.types.is_date(t) or pa.types.is_time(t):
        return pc.cast(col, pa.string()), {}, True
    raise TypeError(f"Arrow type {t} has no JSON form here")


def _list_bounds(col: pa.Array) -> tuple[list[int], list[int]]:
    t = col.type
    n = len(col)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        return [(col.offset + i) * size for i in range(n)], [
            (col.offset + i + 1) * size for i in range(n)
        ]
    offs = col.offsets.to_pylist()
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        sizes = col.sizes.to_pylist()
        return offs, [a + (b or 0) for a, b in zip(offs, sizes)]
    return offs[:-1], offs[1:]


def _first(refused: Refused, a: int, b: int) -> Optional[str]:
    if not refused:
        return None
    for j in range(a, b):
        if j in refused:
            return refused[j]
    return None


def _key_text(text: Optional[str]) -> str:
    """A map key as a JSON object key: a JSON string as it is, anything else (numbers,
    true/false, null) as its JSON text in quotes."""
    if text is None:
        return '"null"'
    return text if text.startswith('"') else '"' + text + '"'


def _nested_json(col: pa.Array, nonfinite: str) -> tuple[pa.Array, Refused]:
    """Lists, structs and maps: JSON arrays and objects whose elements are written by
    the same rules as a column of their type."""
    t = col.type
    n = len(col)
    valid = col.is_valid().to_pylist() if col.null_count else [True] * n
    out: list[Optional[str]] = [None] * n
    refused: Refused = {}
    if pa.types.is_struct(t):
        names = [_dumps(t.field(j).name) + ":" for j in range(t.num_fields)]
        kids = [_json_values(col.field(j), nonfinite) for j in range(t.num_fields)]
        texts = [k[0].to_pylist() for k in kids]
        for i in range(n):
            bad = next((k[1][i] for k in kids if i in k[1]), None)
            if bad is not None:
                refused[i] = bad
            elif valid[i]:
                out[i] = (
                    "{"
                    + ",".join(
                        nm + ("null" if x[i] is None else x[i]) for nm, x in zip(names, texts)
                    )
                    + "}"
                )
        return pa.array(out, pa.string()), refused
    starts, ends = _list_bounds(col)
    if pa.types.is_map(t):
        entries = col.values
        ktext, kref = _json_values(entries.field(0), nonfinite)
        vtext, vref = _json_values(entries.field(1), nonfinite)
        keys, vals = ktext.to_pylist(), vtext.to_pylist()
        for i in range(n):
            if not valid[i]:
                continue
            a, b = starts[i], ends[i]
            bad = _first(kref, a, b) or _first(vref, a, b)
            if bad is not None:
                refused[i] = bad
                continue
            out[i] = (
                "{"
                + ",".join(
                    _key_text(keys[j]) + ":" + ("null" if vals[j] is None else vals[j])
                    for j in range(a, b)
                )
                + "}"
            )
        return pa.array(out, pa.string()), refused
    ctext, cref = _json_values(col.values, nonfinite)
    items = ctext.to_pylist()
    for i in range(n):
        if not valid[i]:
            continue
        bad = _first(cref, starts[i], ends[i])
        if bad is not None:
            refused[i] = bad
            continue
        out[i] = (
            "[" + ",".join("null" if v is None else v for v in items[starts[i] : ends[i]]) + "]"
        )
    return pa.array(out, pa.string()), refused


def _json_values(col: pa.Array, nonfinite: str) -> tuple[pa.Array, Refused]:
    """JSON text of each value of one column, as a string array (nulls stay null), and
    the values refused by ``nonfinite`` (index -> "NaN", "Infinity" or "-Infinity")."""
    t = col.type
    if pa.types.is_dictionary(t):
        texts, refused = _json_values(col.dictionary, nonfinite)
        idx = col.indices
        out = pc.take(texts, idx)
        if refused:
            ids = idx.to_pylist()
            bad = {i: refused[k] for i, k in enumerate(ids) if k in refused}
            return out, bad
        return out, {}
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.string()), {}
    if _is_text(t):
        return pc.cast(json_string(col), pa.string()), {}
    if pa.types.is_string_view(t):
        return pa.array(
            [None if v is None else _dumps(v) for v in col.to_pylist()], pa.string()
        ), {}
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        # JSON has no bytes: binary is base64 text, always (never a lossy decode).
        return pa.array(
            [
                None if v is None else '"' + base64.b64encode(v).decode() + '"'
                for v in col.to_pylist()
            ],
            pa.string(),
        ), {}
    if pa.types.is_nested(t):
        return _nested_json(col, nonfinite)
    text, refused, quoted = _scalar_text(col, nonfinite)
    return (_quoted(text) if quoted else text), refused


def _check_nonfinite(nonfinite: str) -> None:
    if nonfinite not in NONFINITE:
        raise ValueError(f"nonfinite must be one of {NONFINITE}, not {nonfinite!r}")


def record_json(
    batch: Any, exclude: tuple[str, ...] = (), *, nonfinite: str = "refuse"
) -> tuple[pa.Array, Refused]:
    """Each row of a RecordBatch/Table as a compact JSON object (UTF-8 string array),
    keys in column order, the same text as ``json.dumps(row, separators=(",", ":"),
    ensure_ascii=False)`` for string columns; and the rows refused (row -> why).

    ``nonfinite``: what a NaN or infinity (at any depth) becomes: ``"refuse"`` (the
    row is null in the array and named in the result with its column and value),
    ``"null"``, or ``"string"`` ("NaN", "Infinity", "-Infinity", as Spark writes).
    """
    _check_nonfinite(nonfinite)
    names = [n for n in batch.schema.names if n not in exclude]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate column names {dup}: a JSON object needs unique keys")
    if not names:
        return pa.array(["{}"] * batch.num_rows, pa.string()), {}
    parts: list[Any] = []
    refused: Refused = {}
    literal = "{"
    for i, name in enumerate(names):
        col = batch.column(batch.schema.get_field_index(name))
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        literal += ("" if i == 0 else ",") + _dumps(str(name)) + ":"
        if _is_text(col.type) and col.null_count == 0:
            esc, quoted = escaped(col)
            if not quoted:
                parts += [literal + '"', pc.cast(esc, pa.string())]
                literal = '"'
                continue
            parts += [literal, pc.cast(esc, pa.string())]
        else:
            text, bad = _json_values(col, nonfinite)
            nested = pa.types.is_nested(col.type)
            for row, value in bad.items():
                refused.setdefault(row, _refusal(f"column {name!r}", nested, value))
            parts += [literal, pc.fill_null(text, "null")]
        literal = ""
    parts.append(literal + "}")
    out = pc.binary_join_element_wise(*parts, "")
    if refused:
        keep = np.ones(len(out), bool)
        keep[list(refused)] = False
        out = pc.if_else(pa.array(keep), out, pa.scalar(None, pa.string()))
    return out, refused


def as_message_column(col: Any, what: str, *, nonfinite: str = "refuse") -> tuple[Any, Refused]:
    """A column as something ``produce_batch`` takes, and the rows refused (row ->
    why): binary/string Arrow arrays as they are, numbers, booleans, times and
    durations as their text (no JSON quotes), nested values as JSON."""
    _check_nonfinite(nonfinite)
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
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return pc.cast(
            col, pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()
        ), {}
    if pa.types.is_null(t):
        return pa.nulls(len(col), pa.binary()), {}
    try:
        if pa.types.is_nested(t):
            text, bad = _json_values(col, nonfinite)
        else:
            text, bad, _ = _scalar_text(col, nonfinite)
            if nonfinite == "string" and pa.types.is_floating(t):
                text = pc.replace_substring(text, '"', "")
    except (TypeError, pa.ArrowNotImplementedError) as exc:
        raise TypeError(f"{what}: cannot turn Arrow type {t} into message bytes: {exc}") from exc
    nested = pa.types.is_nested(t)
    return text, {row: _refusal(f"column {what!r}", nested, v) for row, v in bad.items()}
