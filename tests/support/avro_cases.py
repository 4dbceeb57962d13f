"""Hypothesis strategies for Avro schemas, matching Arrow types and records (shared by
the schema registry tests)."""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
from hypothesis import strategies as st

UTC = datetime.UTC
_counter = iter(range(10**9))  # unique names for named types


@dataclass
class Case:
    """One Avro type: its schema, the Arrow type its column has, a strategy for Python
    values (what a confluent-kafka user passes) and how that value goes into Arrow."""

    avro: Any
    arrow: pa.DataType
    values: st.SearchStrategy[Any]
    to_arrow: Callable[[Any], Any] = lambda v: v


def _ident(prefix: str) -> st.SearchStrategy[str]:
    return st.text("abcdefghXYZ_019", max_size=6).map(lambda s: prefix + s)


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


_TS = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))


def _ms(t: Any) -> Any:
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def primitive_cases() -> list[st.SearchStrategy[Case]]:
    i32 = (-(2**31), 2**31 - 1)
    i64 = (-(2**63), 2**63 - 1)
    cases = [
        Case("boolean", pa.bool_(), st.booleans()),
        Case("int", pa.int32(), _ints(*i32)),
        Case("int", pa.int8(), _ints(-128, 127)),
        Case("int", pa.uint16(), _ints(0, 65535)),
        Case("long", pa.int64(), _ints(*i64)),
        Case("long", pa.uint32(), _ints(0, 2**32 - 1)),
        Case("long", pa.int16(), _ints(-(2**15), 2**15 - 1)),
        Case("float", pa.float32(), st.floats(width=32, allow_nan=False)),
        Case("double", pa.float64(), st.floats(allow_nan=False)),
        Case("double", pa.int32(), _ints(*i32)),
        Case("string", pa.string(), st.text(max_size=20)),
        Case("string", pa.large_string(), st.text(max_size=20)),
        Case("bytes", pa.binary(), st.binary(max_size=20)),
        Case("bytes", pa.large_binary(), st.binary(max_size=20)),
        Case(
            {"type": "int", "logicalType": "date"},
            pa.date32(),
            st.dates(datetime.date(1800, 1, 1), datetime.date(2300, 1, 1)),
        ),
        Case({"type": "int", "logicalType": "time-millis"}, pa.time32("ms"), st.times().map(_ms)),
        Case({"type": "long", "logicalType": "time-micros"}, pa.time64("us"), st.times()),
        Case(
            {"type": "long", "logicalType": "timestamp-millis"},
            pa.timestamp("ms", "UTC"),
            _TS.map(lambda d: _ms(d).replace(tzinfo=UTC)),
        ),
        Case(
            # microseconds in Arrow, milliseconds in Avro: truncated as fastavro does
            {"type": "long", "logicalType": "timestamp-millis"},
            pa.timestamp("us", "UTC"),
            _TS.map(lambda d: d.replace(tzinfo=UTC)),
        ),
        Case(
            {"type": "long", "logicalType": "timestamp-micros"},
            pa.timestamp("us", "UTC"),
            _TS.map(lambda d: d.replace(tzinfo=UTC)),
        ),
        Case(
            {"type": "long", "logicalType": "local-timestamp-millis"},
            pa.timestamp("ms"),
            _TS.map(_ms),
        ),
        Case({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us"), _TS),
        Case({"type": "string", "logicalType": "uuid"}, pa.string(), st.uuids().map(str)),
    ]
    out: list[st.SearchStrategy[Case]] = [st.just(c) for c in cases]
    out.append(_fixed())
    out.append(_enum())
    out.append(_decimal())
    return out


@st.composite
def _fixed(draw: Any) -> Case:
    size = draw(st.integers(1, 20))
    name = f"F{next(_counter)}"
    return Case(
        {"type": "fixed", "name": name, "size": size},
        pa.binary(size),
        st.binary(min_size=size, max_size=size),
    )


@st.composite
def _enum(draw: Any) -> Case:
    symbols = draw(st.lists(_ident("S"), min_size=1, max_size=6, unique=True))
    name = f"E{next(_counter)}"
    return Case(
        {"type": "enum", "name": name, "symbols": symbols}, pa.string(), st.sampled_from(symbols)
    )


def _exact_decimal(unscaled: int, scale: int) -> decimal.Decimal:
    # built from its digits: arithmetic would round to the context's 28 digits
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return decimal.Decimal((int(unscaled < 0), digits, -scale))


@st.composite
def _decimal(draw: Any) -> Case:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    top = 10**precision - 1
    values = st.integers(-top, top).map(lambda u: _exact_decimal(u, scale))
    if draw(st.booleans()):
        avro = {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    else:
        size = math.ceil((top.bit_length() + 1) / 8) + draw(st.integers(0, 2))
        avro = {
            "type": "fixed",
            "name": f"D{next(_counter)}",
            "size": size,
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
        }
    return Case(avro, pa.decimal128(precision, scale), values)


def _nullable(inner: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    @st.composite
    def make(draw: Any) -> Case:
        c = draw(inner)
        if isinstance(c.avro, list):  # a union cannot hold a union
            return c
        first = draw(st.booleans())
        avro = ["null", c.avro] if first else [c.avro, "null"]
        return Case(avro, c.arrow, st.none() | c.values, c.to_arrow)

    return make()


def _array(inner: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    @st.composite
    def make(draw: Any) -> Case:
        c = draw(inner)
        large = draw(st.booleans())
        arrow = pa.large_list(c.arrow) if large else pa.list_(c.arrow)
        return Case({"type": "array", "items": c.avro}, arrow, st.lists(c.values, max_size=4))

    return make()


def _map(inner: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    @st.composite
    def make(draw: Any) -> Case:
        c = draw(inner)
        return Case(
            {"type": "map", "values": c.avro},
            pa.map_(pa.string(), c.arrow),
            st.dictionaries(st.text(max_size=5), c.values, max_size=4),
        )

    return make()


def _record(inner: st.SearchStrategy[Case], min_fields: int = 1) -> st.SearchStrategy[Case]:
    @st.composite
    def make(draw: Any) -> Case:
        kids = draw(st.lists(inner, min_size=min_fields, max_size=5))
        names = [f"f{i}" for i in range(len(kids))]
        avro = {
            "type": "record",
            "name": f"R{next(_counter)}",
            "fields": [{"name": n, "type": k.avro} for n, k in zip(names, kids)],
        }
        arrow = pa.struct(
            [pa.field(n, k.arrow, nullable=isinstance(k.avro, list)) for n, k in zip(names, kids)]
        )
        values = st.fixed_dictionaries({n: k.values for n, k in zip(names, kids)})
        return Case(avro, arrow, values)

    return make()


def any_case(depth: int = 2) -> st.SearchStrategy[Case]:
    leaf = st.one_of(*primitive_cases())
    if depth == 0:
        return st.one_of(leaf, _nullable(leaf))
    inner = any_case(depth - 1)
    return st.one_of(
        leaf, _nullable(leaf), _nullable(inner), _array(inner), _map(inner), _record(inner)
    )


@st.composite
def table_cases(
    draw: Any, max_rows: int = 8
) -> tuple[dict[str, Any], list[dict[str, Any]], pa.Table]:
    """(top-level record schema with defaulted fields missing from the table, the Python
    records, the Arrow table of the same records)."""
    top = draw(_record(any_case(), min_fields=1))
    rows = draw(st.lists(top.values, min_size=1, max_size=max_rows))
    schema = dict(top.avro)
    defaults = [
        {"name": "missing_int", "type": "int", "default": 42},
        {"name": "missing_str", "type": "string", "default": "dflt"},
        {"name": "missing_null", "type": ["null", "long"], "default": None},
        {"name": "missing_arr", "type": {"type": "array", "items": "long"}, "default": [1, 2]},
    ]
    schema["fields"] = list(schema["fields"]) + draw(
        st.lists(st.sampled_from(defaults), unique_by=lambda f: f["name"])
    )
    struct = pa.array(rows, top.arrow)
    table = pa.Table.from_batches([pa.RecordBatch.from_struct_array(struct)])
    return schema, rows, table


#: Branches a multi-type union draws from: (Avro type, Python values of that branch).
_BRANCHES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": _ints(-(2**31), 2**31 - 1),
    "long": _ints(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
}


@st.composite
def union_record_cases(draw: Any, max_rows: int = 8) -> tuple[Any, list[Any]]:
    """A record whose fields are unions of several types (primitives, an array, a
    record) and dict rows whose values come from any branch: the schemas the column
    encoder leaves to fastavro."""
    n_fields = draw(st.integers(1, 4))
    fields, values = [], []
    for i in range(n_fields):
        names = draw(
            st.lists(st.sampled_from(sorted(_BRANCHES)), min_size=2, max_size=4, unique=True)
        )
        branches: list[Any] = list(names)
        strategies = [_BRANCHES[b] for b in names]
        if draw(st.booleans()):
            rec = {
                "type": "record",
                "name": f"Sub{i}_{next(_counter)}",
                "fields": [{"name": "x", "type": "long"}, {"name": "y", "type": "string"}],
            }
            branches.append(rec)
            strategies.append(
                st.fixed_dictionaries({"x": _BRANCHES["long"], "y": _BRANCHES["string"]})
            )
        if draw(st.booleans()):
            branches.append({"type": "array", "items": "long"})
            strategies.append(st.lists(_BRANCHES["long"], max_size=3))
        fields.append({"name": f"f{i}", "type": branches})
        values.append(st.one_of(strategies))
    schema = {"type": "record", "name": f"U{next(_counter)}", "fields": fields}
    row = st.fixed_dictionaries({f"f{i}": v for i, v in enumerate(values)})
    return schema, draw(st.lists(row, min_size=1, max_size=max_rows))
