"""What each Arrow type a Parquet file can hold becomes in JSON: one row per type,
written to Parquet and read back (so the types are the ones a reader really meets),
then encoded the way ``cykafka import`` encodes a record."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka._arrow import as_message_column, record_json
from support import arrow_json_reference as reference

UTC = datetime.UTC
AT = datetime.datetime(2024, 5, 1, 12, 30, 45, 123456, tzinfo=UTC)
UUID = uuid.UUID("9f2c1e4a-6b7d-4e8f-9a0b-1c2d3e4f5a6b")

# (Arrow type, a value, the JSON a user expects).  Parquet stores some types as a
# neighbour (date64 as date32, time32[s] as time32[ms], timestamp[s] as ms).
CASES = [
    (pa.null(), None, "null"),
    (pa.bool_(), True, "true"),
    (pa.int8(), -128, "-128"),
    (pa.int16(), 32767, "32767"),
    (pa.int32(), -(2**31), "-2147483648"),
    (pa.int64(), 2**63 - 1, "9223372036854775807"),
    (pa.uint8(), 255, "255"),
    (pa.uint16(), 65535, "65535"),
    (pa.uint32(), 2**32 - 1, "4294967295"),
    (pa.uint64(), 2**64 - 1, "18446744073709551615"),
    (pa.float16(), 1.5, "1.5"),
    (pa.float32(), 0.1, "0.1"),
    (pa.float64(), 1.0, "1.0"),
    (pa.float64(), 1e22, "1e+22"),
    (pa.float64(), -0.0, "-0.0"),
    (pa.float64(), 5e-324, "5e-324"),
    (pa.decimal128(12, 2), decimal.Decimal("-1234567890.05"), "-1234567890.05"),
    (pa.decimal128(38, 0), decimal.Decimal(10**37), "10000000000000000000000000000000000000"),
    (pa.decimal256(50, 10), decimal.Decimal("1.5"), "1.5000000000"),
    (pa.string(), 'a"b\\c\n\x01é', '"a\\"b\\\\c\\n\\u0001é"'),
    (pa.large_string(), "x", '"x"'),
    (pa.string_view(), "view", '"view"'),
    (pa.binary(), b"\x00\xff", '"AP8="'),
    (pa.large_binary(), b"ab", '"YWI="'),
    (pa.binary_view(), b"abc", '"YWJj"'),
    (pa.binary(3), b"xyz", '"eHl6"'),
    (pa.uuid(), UUID.bytes, f'"{UUID}"'),
    (pa.date32(), datetime.date(2024, 5, 1), '"2024-05-01"'),
    (pa.date64(), datetime.date(1969, 12, 31), '"1969-12-31"'),
    (pa.time32("s"), datetime.time(12, 30, 45), '"12:30:45.000"'),
    (pa.time32("ms"), datetime.time(12, 30, 45, 123000), '"12:30:45.123"'),
    (pa.time64("us"), datetime.time(12, 30, 45, 123456), '"12:30:45.123456"'),
    (pa.time64("ns"), datetime.time(12, 30, 45, 123456), '"12:30:45.123456000"'),
    (pa.timestamp("s", "UTC"), AT.replace(microsecond=0), '"2024-05-01T12:30:45.000Z"'),
    (pa.timestamp("ms"), AT.replace(microsecond=123000, tzinfo=None), '"2024-05-01T12:30:45.123Z"'),
    (pa.timestamp("us", "UTC"), AT, '"2024-05-01T12:30:45.123456Z"'),
    (pa.timestamp("us", "Europe/Paris"), AT, '"2024-05-01T12:30:45.123456Z"'),
    (pa.timestamp("ns", "UTC"), AT, '"2024-05-01T12:30:45.123456000Z"'),
    (pa.duration("s"), datetime.timedelta(seconds=90), '"PT90S"'),
    (pa.duration("ms"), datetime.timedelta(milliseconds=1), '"PT0.001S"'),
    (pa.duration("us"), datetime.timedelta(microseconds=-1500), '"PT-0.0015S"'),
    (pa.duration("ns"), datetime.timedelta(days=1), '"PT86400S"'),
    (pa.dictionary(pa.int8(), pa.string()), "red", '"red"'),
    (pa.dictionary(pa.int32(), pa.float64()), 2.0, "2.0"),
    (pa.list_(pa.string()), ["a", None], '["a",null]'),
    (pa.large_list(pa.int64()), [1, 2], "[1,2]"),
    (pa.list_(pa.int32(), 2), [1, 2], "[1,2]"),
    (pa.list_view(pa.int32()), [3], "[3]"),
    (
        pa.struct([("at", pa.timestamp("us", "UTC")), ("price", pa.decimal128(5, 2))]),
        {"at": AT, "price": decimal.Decimal("1.50")},
        '{"at":"2024-05-01T12:30:45.123456Z","price":1.50}',
    ),
    (
        pa.map_(pa.string(), pa.list_(pa.float64())),
        [("a", [1.0]), ("b", None)],
        '{"a":[1.0],"b":null}',
    ),
    (pa.map_(pa.int32(), pa.bool_()), [(1, True)], '{"1":true}'),
    (pa.map_(pa.date32(), pa.int8()), [(datetime.date(2024, 1, 2), 1)], '{"2024-01-02":1}'),
    (
        pa.list_(pa.struct([("d", pa.duration("ms")), ("b", pa.binary())])),
        [{"d": datetime.timedelta(seconds=1), "b": b"\x01"}],
        '[{"d":"PT1S","b":"AQ=="}]',
    ),
]


@pytest.mark.parametrize(("typ", "value", "want"), CASES, ids=[str(c[0]) for c in CASES])
def test_each_arrow_type_from_parquet_as_json(tmp_path, typ, value, want):
    f = tmp_path / "one.parquet"
    col = pa.array([value, None], typ)
    pq.write_table(pa.table({"v": col}), f, coerce_timestamps=None, store_schema=True)
    table = pq.read_table(f)
    out, refused = record_json(table)
    assert refused == {}
    assert out.to_pylist() == ['{"v":' + want + "}", '{"v":null}']
    json.loads(out[0].as_py())  # valid JSON, always


def test_value_field_scalars_are_their_text_without_json_quotes():
    def bare(arr):
        out, refused = as_message_column(arr, "v", nonfinite="string")
        assert refused == {}
        return [v if isinstance(v, (str, type(None))) else v.decode() for v in out.to_pylist()]

    assert bare(pa.array([AT], pa.timestamp("us", "UTC"))) == ["2024-05-01T12:30:45.123456Z"]
    assert bare(pa.array([1], pa.duration("ms"))) == ["PT0.001S"]
    assert bare(pa.array([float("nan"), 1.0])) == ["NaN", "1.0"]
    assert bare(pa.array([[1]])) == ["[1]"]
    assert bare(pa.array(["x"], pa.string_view())) == ["x"]
    assert bare(pa.array([UUID.bytes], pa.uuid())) == [str(UUID)]


def test_refused_rows_name_the_column_and_the_value():
    batch = pa.table({"a": [1.0, float("inf")], "m": pa.array([[("k", float("nan"))], []],
                     pa.map_(pa.string(), pa.float64()))})  # fmt: skip
    out, refused = record_json(batch)
    assert out.to_pylist() == [None, None]
    assert refused == {
        0: "column 'm' holds NaN, which JSON cannot hold (--nan null or --nan string to send it)",
        1: "column 'a' is Infinity, which JSON cannot hold (--nan null or --nan string to send it)",
    }
    with pytest.raises(ValueError, match="nonfinite must be one of"):
        record_json(batch, nonfinite="zero")


# ---- the C encoder against the reference, on generated Arrow tables ------------

_TS_RANGE = {  # years 1..9999 in each unit (what RFC 3339 text can hold)
    "s": (-62135596800, 253402300799),
    "ms": (-62135596800_000, 253402300799_999),
    "us": (-62135596800_000_000, 253402300799_999_999),
    "ns": (-(2**63) + 1, 2**63 - 1),
}
_DAY = {"s": 86400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


def _leaf_types() -> st.SearchStrategy[tuple[pa.DataType, st.SearchStrategy[Any]]]:
    unit = st.sampled_from(["s", "ms", "us", "ns"])
    tz = st.sampled_from([None, "UTC", "Europe/Paris", "+05:30"])

    def decimal_case(p_s: tuple[int, int, bool]) -> tuple[pa.DataType, Any]:
        p, s, wide = p_s
        typ = pa.decimal256(p, s) if wide else pa.decimal128(p, s)
        lim = 10 ** (p - s)
        return typ, st.decimals(-lim + 1, lim - 1, places=s, allow_nan=False)

    fixed = [
        (pa.null(), st.none()),
        (pa.bool_(), st.booleans()),
        (pa.int8(), st.integers(-(2**7), 2**7 - 1)),
        (pa.int16(), st.integers(-(2**15), 2**15 - 1)),
        (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
        (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
        (pa.uint8(), st.integers(0, 2**8 - 1)),
        (pa.uint16(), st.integers(0, 2**16 - 1)),
        (pa.uint32(), st.integers(0, 2**32 - 1)),
        (pa.uint64(), st.integers(0, 2**64 - 1)),
        (pa.float16(), st.floats(width=16)),
        (pa.float32(), st.floats(width=32)),
        (pa.float64(), st.floats()),
        (pa.float64(), st.integers(-(10**12), 10**12).map(lambda i: i / 100)),
        (pa.string(), _TEXT),
        (pa.large_string(), _TEXT),
        (pa.string_view(), _TEXT),
        (pa.binary(), st.binary(max_size=10)),
        (pa.large_binary(), st.binary(max_size=10)),
        (pa.binary_view(), st.binary(max_size=20)),
        (pa.binary(3), st.binary(min_size=3, max_size=3)),
        (pa.date32(), st.integers(-719162, 2932896)),
        (pa.date64(), st.integers(-719162, 2932896).map(lambda d: d * 86_400_000)),
        (pa.time32("s"), st.integers(0, 86399)),
        (pa.time32("ms"), st.integers(0, 86_399_999)),
        (pa.time64("us"), st.integers(0, 86_399_999_999)),
        (pa.time64("ns"), st.integers(0, 86_399_999_999_999)),
        (
            pa.month_day_nano_interval(),
            st.tuples(
                st.integers(-(2**31), 2**31 - 1),
                st.integers(-(2**31), 2**31 - 1),
                st.integers(-(2**63), 2**63 - 1),
            ),
        ),
    ]
    timestamps = st.tuples(unit, tz).map(
        lambda u_tz: (pa.timestamp(*u_tz), st.integers(*_TS_RANGE[u_tz[0]]))
    )
    durations = unit.map(lambda u: (pa.duration(u), st.integers(-(2**63) + 1, 2**63 - 1)))
    decimals = st.sampled_from(
        [
            (5, 2, False),
            (12, 2, False),
            (38, 10, False),
            (20, 0, False),
            (9, 9, False),
            (50, 20, True),
            (76, 0, True),
        ]  # fmt: skip
    ).map(decimal_case)
    return st.one_of(st.sampled_from(fixed), timestamps, durations, decimals)


def _nested(
    kids: st.SearchStrategy[tuple[pa.DataType, st.SearchStrategy[Any]]],
) -> st.SearchStrategy[tuple[pa.DataType, st.SearchStrategy[Any]]]:
    def nullable(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.none() | s

    def lists(k: tuple[pa.DataType, Any]) -> st.SearchStrategy[tuple[pa.DataType, Any]]:
        t, v = k
        items = st.lists(nullable(v), max_size=4)
        return st.sampled_from(
            [
                (pa.list_(t), items),
                (pa.large_list(t), items),
                (pa.list_view(t), items),
                (pa.list_(t, 2), st.lists(nullable(v), min_size=2, max_size=2)),
            ]
        )

    def structs(ks: list[tuple[pa.DataType, Any]]) -> tuple[pa.DataType, Any]:
        names = [f"f{i}" if i % 2 else f'q"{i}é' for i in range(len(ks))]
        typ = pa.struct([(n, t) for n, (t, _) in zip(names, ks)])
        vals = st.tuples(*[nullable(v) for _, v in ks]).map(lambda vs: dict(zip(names, vs)))
        return typ, vals

    def maps(kv: tuple[Any, tuple[pa.DataType, Any]]) -> tuple[pa.DataType, Any]:
        (kt, ks), (vt, vs) = kv
        return pa.map_(kt, vt), st.lists(st.tuples(ks, nullable(vs)), max_size=3)

    keys = st.sampled_from(
        [
            (pa.string(), _TEXT),
            (pa.int32(), st.integers(-5, 5)),
            (pa.date32(), st.integers(0, 30000)),
            (pa.float64(), st.floats()),
        ]
    )
    return st.one_of(
        kids.flatmap(lists),
        st.lists(kids, min_size=1, max_size=3).map(structs),
        st.tuples(keys, kids).map(maps),
    )


_TYPES = st.recursive(_leaf_types(), _nested, max_leaves=6)


@st.composite
def _tables(draw: Any) -> pa.Table:
    n = draw(st.integers(0, 6))
    cols = {}
    for i in range(draw(st.integers(1, 4))):
        typ, values = draw(_TYPES)
        rows = draw(st.lists(st.none() | values, min_size=n + 2, max_size=n + 2))
        arr = pa.array(rows, typ)
        plain = not (pa.types.is_nested(typ) or pa.types.is_null(typ) or "view" in str(typ))
        if plain and draw(st.booleans()):  # (Arrow cannot decode a dictionary of views)
            arr = arr.dictionary_encode()
        cols[f"c{i}" if i else 'a "b"\n'] = arr.slice(1, n)  # an offset, always
    return pa.table(cols)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_tables(), st.sampled_from(["refuse", "null", "string"]))
def test_c_encoder_writes_what_the_reference_writes(table, nonfinite):
    want, want_refused = reference.record_json(table, nonfinite=nonfinite)
    got, got_refused = record_json(table, nonfinite=nonfinite)
    assert got.to_pylist() == want.to_pylist()
    assert got_refused == want_refused
    # The same columns as a RecordBatch: the sliced arrays themselves, whose children
    # reach past the slice on both sides (a Table's columns are concatenated first).
    batch = pa.RecordBatch.from_arrays(
        [table[name].chunk(0) for name in table.column_names], names=table.column_names
    )
    got, got_refused = record_json(batch, nonfinite=nonfinite)
    assert got.to_pylist() == want.to_pylist()
    assert got_refused == want_refused
    for name in table.column_names:
        want_col, want_bad = reference.as_message_column(table[name], name, nonfinite=nonfinite)
        got_col, got_bad = as_message_column(table[name], name, nonfinite=nonfinite)
        assert _texts(got_col) == _texts(want_col), name
        assert got_bad == want_bad


def _texts(col: Any) -> list[Any]:
    return [v.encode() if isinstance(v, str) else v for v in col.to_pylist()]


def test_times_outside_the_day_are_written_not_misread():
    # Arrow does not check time-of-day ranges; such values keep their sign and hours.
    col = pa.array([25 * 3600 * 10**6, -1, 2**62], pa.time64("us"))
    out, _ = record_json(pa.table({"t": col}))
    assert out.to_pylist() == [
        '{"t":"25:00:00.000000"}',
        '{"t":"-00:00:00.000001"}',
        '{"t":"1281023894:00:27.387904"}',
    ]


def test_dictionary_index_out_of_range_is_refused_by_name():
    bad = pa.DictionaryArray.from_arrays(
        pa.array([0, 5], pa.int32()), pa.array(["a", "b"]), safe=False
    )
    with pytest.raises(ValueError, match="column 'd': a dictionary index is out of range"):
        record_json(pa.table({"d": bad}))


def test_a_slice_is_encoded_from_the_values_it_reaches_only():
    """A slice of a nested column still has the whole column's child arrays behind it.
    The encoder converts and checks only the children the slice reaches: a bad
    dictionary index in a row outside the slice does not refuse it (it did, and
    converting every child for every slice made sliced nested columns quadratic)."""
    words = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 7, 1, 0], pa.int32()), pa.array(["a", "b"]), safe=False
    )
    tags = pa.ListArray.from_arrays(pa.array([0, 2, 3, 5], pa.int32()), words)
    points = pa.ListArray.from_arrays(
        pa.array([0, 1, 3, 4], pa.int32()),
        pa.StructArray.from_arrays(
            [pa.array([0.5, 1.25, float("nan"), 2.0]), pa.array(["p", "q", "r", "s"])],
            names=["x", "label"],
        ),
    )
    fixed = pa.FixedSizeListArray.from_arrays(pa.array([1.5, 2.5, 3.5, 4.5, 5.5, 6.5]), 2)
    # A RecordBatch: its columns are the arrays themselves (a Table's are concatenated
    # first, which compacts the children).
    table = pa.record_batch({"tags": tags, "points": points, "fixed": fixed})
    out, refused = record_json(table.slice(2, 1), nonfinite="refuse")
    assert out.to_pylist() == [
        '{"tags":["b","a"],"points":[{"x":2.0,"label":"s"}],"fixed":[5.5,6.5]}'
    ]
    assert refused == {}
    with pytest.raises(ValueError, match="column 'tags': a dictionary index is out of range"):
        record_json(table.slice(1, 1))
    out, refused = record_json(table.slice(0, 1), nonfinite="refuse")
    assert out.to_pylist() == [
        '{"tags":["a","b"],"points":[{"x":0.5,"label":"p"}],"fixed":[1.5,2.5]}'
    ]
    assert list(refused) == [] and record_json(table.slice(1, 1).drop_columns(["tags"]))[1]
    assert as_message_column(tags.slice(2, 1), "tags")[0].to_pylist() == ['["b","a"]']
