"""What each Arrow type a Parquet file can hold becomes in JSON: one row per type,
written to Parquet and read back (so the types are the ones a reader really meets),
then encoded the way ``cykafka import`` encodes a record."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cykafka._arrow import as_message_column, record_json

UTC = datetime.UTC
AT = datetime.datetime(2024, 5, 1, 12, 30, 45, 123456, tzinfo=UTC)

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
