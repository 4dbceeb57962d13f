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

from cykafka.cli import main


def _import(broker, *args: str) -> int:
    return main(["import", "-b", broker.bootstrap_servers, "--no-progress", *args])


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
