"""Text columns parsed into the types an Avro schema wants (CSV gives every field as
text): "42" into a long, "2024-05-01T10:00:00Z" into a timestamp, "true" into a boolean,
"1.50" into a decimal.  Arrow's casts do the parsing, a column at a time; a value that
does not parse fails its row alone."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ._common import Rejected
from .avro_types import arrow_type_for

__all__ = ["cast_type", "parse_text", "text_casts"]


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _parsable(t: pa.DataType) -> bool:
    T = pa.types
    return (
        T.is_integer(t)
        or T.is_floating(t)
        or T.is_boolean(t)
        or T.is_decimal(t)
        or T.is_temporal(t)
    )


def text_casts(atype: pa.DataType, writer: Any) -> dict[int, pa.DataType]:
    """{child index: Arrow type} for the top-level text columns of ``atype`` whose
    field in the record schema ``writer`` is a number, boolean, decimal or time."""
    if not pa.types.is_struct(atype) or not (
        isinstance(writer, dict) and writer.get("type") in ("record", "error")
    ):
        return {}
    target = arrow_type_for(writer)
    out = {}
    for i in range(atype.num_fields):
        f = atype.field(i)
        j = target.get_field_index(f.name)
        if j >= 0 and _is_text(f.type) and _parsable(target.field(j).type):
            out[i] = target.field(j).type
    return out


def cast_type(atype: pa.DataType, casts: dict[int, pa.DataType]) -> pa.DataType:
    fields = [atype.field(i) for i in range(atype.num_fields)]
    return pa.struct([f.with_type(casts[i]) if i in casts else f for i, f in enumerate(fields)])


def _parse_column(col: pa.Array, to: pa.DataType, name: str, rejected: dict[int, str]) -> pa.Array:
    try:
        return col.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # Some value does not parse: find it (and any others) one by one.
    good: list[Any] = []
    for row, v in enumerate(col.to_pylist()):
        if v is not None:
            try:
                pa.array([v], col.type).cast(to)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                rejected.setdefault(row, f"field {name!r}: {v!r} is not a {to}")
                v = None
        good.append(v)
    return pa.array(good, col.type).cast(to)


def parse_text(arr: pa.StructArray, casts: dict[int, pa.DataType]) -> tuple[pa.Array, Rejected]:
    """``arr`` with its ``casts`` columns parsed; rows with a value that does not
    parse are listed (their field is null)."""
    rejected: dict[int, str] = {}
    children = [arr.field(i) for i in range(arr.type.num_fields)]
    for i, to in casts.items():
        children[i] = _parse_column(children[i], to, arr.type.field(i).name, rejected)
    out = pa.StructArray.from_arrays(
        children,
        fields=list(cast_type(arr.type, casts)),
        mask=arr.is_null() if arr.null_count else None,
    )
    return out, sorted(rejected.items())
