"""What arrives is what the file held: bytes stay bytes, maps stay objects, times are
RFC 3339, decimals exact, doubles stay doubles, CSV numbers are numbers (unless
--csv-types string).  Read back from the real broker."""

from __future__ import annotations

import base64
import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq

from support.cli import import_in_process as _import


def _parquet(tmp_path):
    f = tmp_path / "typed.parquet"
    table = pa.table(
        {
            "blob": pa.array([b"\x00\xff\n"], pa.binary()),
            "tags": pa.array([[("a", 1), ("b", 2)]], pa.map_(pa.string(), pa.int64())),
            "at": pa.array(
                [datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)],
                pa.timestamp("us", "UTC"),
            ),
            "price": pa.array([decimal.Decimal("1234567890.0100")], pa.decimal128(14, 4)),
            "ratio": pa.array([1.0], pa.float64()),
        }
    )
    pq.write_table(table, f)
    return f


def test_parquet_record_json_keeps_types(broker, topic, read_back, tmp_path):
    name = topic()
    assert _import(broker, str(_parquet(tmp_path)), "-t", name) == 0
    (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
    assert rec.value == (
        b'{"blob":"' + base64.b64encode(b"\x00\xff\n") + b'",'
        b'"tags":{"a":1,"b":2},'
        b'"at":"2024-05-01T12:00:00.000000Z",'
        b'"price":1234567890.0100,'
        b'"ratio":1.0}'
    )
    d = json.loads(rec.value, parse_float=decimal.Decimal)
    assert base64.b64decode(d["blob"]) == b"\x00\xff\n"
    assert datetime.datetime.fromisoformat(d["at"].replace("Z", "+00:00")).tzinfo is not None


def test_binary_value_field_is_sent_as_its_bytes(broker, topic, read_back, tmp_path):
    name = topic()
    assert _import(broker, str(_parquet(tmp_path)), "-t", name, "--value-field", "blob") == 0
    (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
    assert rec.value == b"\x00\xff\n"


def test_csv_types_inferred_or_all_text(broker, topic, read_back, tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("id,amount,zip,ok,note,big\n1,2.50,02134,true,x,12345678901234567890\n")
    name = topic()
    assert _import(broker, str(f), "-t", name) == 0
    (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
    assert rec.value == (
        b'{"id":1,"amount":2.50,"zip":"02134","ok":true,"note":"x","big":"12345678901234567890"}'
    )
    name = topic()
    assert _import(broker, str(f), "-t", name, "--csv-types", "string") == 0
    (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
    assert json.loads(rec.value) == {
        "id": "1",
        "amount": "2.50",
        "zip": "02134",
        "ok": "true",
        "note": "x",
        "big": "12345678901234567890",
    }


def _nonfinite_parquet(tmp_path):
    f = tmp_path / "temps.parquet"
    nan, inf = float("nan"), float("inf")
    table = pa.table(
        {
            "id": [1, 2, 3, 4, 5],
            "temp": pa.array([1.5, nan, inf, -inf, 2.0], pa.float64()),
            "readings": pa.array(
                [[{"t": 1.0}], [{"t": 2.0}], [], None, [{"t": nan}]],
                pa.list_(pa.struct([("t", pa.float32())])),
            ),
        }
    )
    pq.write_table(table, f)
    return f


def test_nan_and_infinities_are_refused_by_default_naming_column_and_value(
    broker, topic, read_back, tmp_path, capsys
):
    name = topic()
    dead = tmp_path / "dead.jsonl"
    rc = _import(broker, str(_nonfinite_parquet(tmp_path)), "-t", name, "--dead-letter", str(dead))
    assert rc == 1
    (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
    assert rec.value == b'{"id":1,"temp":1.5,"readings":[{"t":1.0}]}'
    entries = [json.loads(x) for x in dead.read_text().splitlines()]
    assert [(e["row"], e["error"]) for e in entries] == [
        (2, "column 'temp' is NaN, which JSON cannot hold (--nan null or --nan string to send it)"),
        (3, "column 'temp' is Infinity, which JSON cannot hold (--nan null or --nan string to send it)"),
        (4, "column 'temp' is -Infinity, which JSON cannot hold (--nan null or --nan string to send it)"),
        (5, "column 'readings' holds NaN, which JSON cannot hold (--nan null or --nan string to send it)"),
    ]  # fmt: skip


def test_nan_null_and_nan_string_send_every_row_as_asked(broker, topic, read_back, tmp_path):
    f = _nonfinite_parquet(tmp_path)
    name = topic()
    assert _import(broker, str(f), "-t", name, "--nan", "null") == 0
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=5)[0]]
    assert got == [
        b'{"id":1,"temp":1.5,"readings":[{"t":1.0}]}',
        b'{"id":2,"temp":null,"readings":[{"t":2.0}]}',
        b'{"id":3,"temp":null,"readings":[]}',
        b'{"id":4,"temp":null,"readings":null}',
        b'{"id":5,"temp":2.0,"readings":[{"t":null}]}',
    ]
    name = topic()
    assert _import(broker, str(f), "-t", name, "--nan", "string") == 0
    got = [json.loads(r.value) for r in read_back(broker.bootstrap_servers, name, expected=5)[0]]
    assert [g["temp"] for g in got] == [1.5, "NaN", "Infinity", "-Infinity", 2.0]
    assert got[4]["readings"] == [{"t": "NaN"}]


def test_nan_value_field_is_refused_not_sent_as_a_tombstone(broker, topic, read_back, tmp_path):
    name = topic()
    dead = tmp_path / "dead.jsonl"
    f = _nonfinite_parquet(tmp_path)
    rc = _import(broker, str(f), "-t", name, "--value-field", "temp", "--dead-letter", str(dead))
    assert rc == 1
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=2)[0]]
    assert got == [b"1.5", b"2.0"]
    assert len(dead.read_text().splitlines()) == 3


def test_durations_keep_their_unit(broker, topic, read_back, tmp_path):
    f = tmp_path / "d.parquet"
    pq.write_table(
        pa.table(
            {
                "ms": pa.array([1, -1500, 86_400_000], pa.duration("ms")),
                "ns": pa.array([1, 2_000_000_000, None], pa.duration("ns")),
            }
        ),
        f,
    )
    name = topic()
    assert _import(broker, str(f), "-t", name) == 0
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=3)[0]]
    assert got == [
        b'{"ms":"PT0.001S","ns":"PT0.000000001S"}',
        b'{"ms":"PT-1.5S","ns":"PT2S"}',
        b'{"ms":"PT86400S","ns":null}',
    ]


def test_timestamp_field_in_micro_and_nanoseconds_is_truncated_to_kafka_ms(
    broker, topic, read_back, tmp_path
):
    # What Spark (us) and pandas (ns) write; Kafka timestamps are milliseconds.
    at = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)
    for unit in ("us", "ns"):
        f = tmp_path / f"{unit}.parquet"
        col = pa.array([at], pa.timestamp("us", "UTC")).cast(pa.timestamp(unit, "UTC"))
        if unit == "ns":
            col = pa.array([col[0].value + 789], pa.timestamp("ns", "UTC"))
        pq.write_table(pa.table({"id": [1], "at": col}), f, coerce_timestamps=None)
        name = topic()
        assert _import(broker, str(f), "-t", name, "--timestamp-field", "at") == 0
        (rec,) = read_back(broker.bootstrap_servers, name, expected=1)[0]
        assert rec.timestamp == 1714564800123
        frac = "123456" if unit == "us" else "123456789"
        assert json.loads(rec.value)["at"] == f"2024-05-01T12:00:00.{frac}Z"
