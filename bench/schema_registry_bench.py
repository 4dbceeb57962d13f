"""Schema Registry Avro: serialize + produce of an Arrow table, against confluent-kafka's
AvroSerializer and against producing the same bytes pre-encoded.

``python bench/schema_registry_bench.py [BOOTSTRAP] [--rows N] [--repeat R]``

The table has 8 columns (int64 id, nullable string, timestamp, list of strings, a
nested record, double, bool, dictionary-encoded string) and a schema derived from it,
registered in confluent-kafka's in-process mock registry.  Lines, interleaved round by
round:

* ``cykafka``: ``produce_batch(topic, table, value_serializer=AvroSerializer)`` to a
  fresh topic, timed until every delivery report is in;
* ``pre_encoded``: ``produce_batch`` of the same Avro bytes, already encoded;
* ``encode_only``: the serializer alone (no Kafka);
* ``confluent``: confluent's ``AvroSerializer(row, ctx)`` over the rows as dicts,
  serialize only, on the first ``--confluent-rows`` rows (its rate does not depend on
  the count; a million rows would take ~10 s a round);
* ``json_*`` / ``protobuf_*`` (information): cykafka's JSONSerializer and
  ProtobufSerializer (per record in Python) from the Arrow table against confluent's
  from the same rows as dicts (protobuf: building each message from its dict
  included), serialize only, on ``--format-rows`` rows of the JSON-representable
  columns.

Ratios are of the medians over the rounds; every run is in the JSON (last stdout line).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

import _common  # noqa: F401  (puts src/ on the path for a checkout)
from _common import bootstrap_or_local, fresh_topic


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    ids = np.arange(rows, dtype=np.int64)
    names = pa.array([f"customer-{i % 5000}" for i in range(rows)], pa.string())
    names = pa.compute.if_else(pa.array(ids % 10 == 0), pa.nulls(rows, pa.string()), names)
    ts = pa.array(1_700_000_000_000 + ids * 7, pa.timestamp("ms", "UTC"))
    lens = rng.integers(0, 4, rows)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    words = pa.array(["red", "green", "blue", "big", "small"])
    tags = pa.ListArray.from_arrays(
        pa.array(offsets), words.take(pa.array(rng.integers(0, 5, int(offsets[-1]))))
    )
    city = pa.array(["Berlin", "Lyon", "Porto", "Turku"]).take(pa.array(ids % 4))
    zips = pa.array((ids % 90000 + 10000).astype(np.int32))
    address = pa.StructArray.from_arrays([city, zips], ["city", "zip"])
    amount = pa.array(rng.random(rows) * 1000)
    flag = pa.array(ids % 3 == 0)
    kind = pa.DictionaryArray.from_arrays(
        pa.array((ids % 3).astype(np.int8)), pa.array(["order", "refund", "fee"])
    )
    return pa.table(
        {
            "id": ids,
            "name": names,
            "ts": ts,
            "tags": tags,
            "address": address,
            "amount": amount,
            "flag": flag,
            "kind": kind,
        }
    )


JSON_SCHEMA = {
    "title": "Row",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "amount": {"type": "number"},
        "flag": {"type": "boolean"},
    },
    "required": ["id"],
}


def proto_row_type() -> Any:
    """A message with the same five fields (built from a descriptor: no protoc here)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name="bench_row.proto", package="bench", syntax="proto3"
    )
    msg = fd.message_type.add(name="Row")
    for name, num, typ, label in (
        ("id", 1, F.TYPE_INT64, F.LABEL_OPTIONAL),
        ("name", 2, F.TYPE_STRING, F.LABEL_OPTIONAL),
        ("tags", 3, F.TYPE_STRING, F.LABEL_REPEATED),
        ("amount", 4, F.TYPE_DOUBLE, F.LABEL_OPTIONAL),
        ("flag", 5, F.TYPE_BOOL, F.LABEL_OPTIONAL),
    ):
        msg.field.add(name=name, number=num, type=typ, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Row"))


def timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--confluent-rows", type=int, default=100_000)
    ap.add_argument("--format-rows", type=int, default=20_000)
    args = ap.parse_args(argv)

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer as ConfluentAvro
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as ConfluentJSON
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as ConfluentProto
    from confluent_kafka.serialization import MessageField, SerializationContext

    from cykafka import Producer
    from cykafka.schema_registry import (
        AvroSerializer,
        JSONSerializer,
        ProtobufSerializer,
        serialize_column,
    )

    table = make_table(args.rows)
    registry = SchemaRegistryClient.new_client({"url": f"mock://bench-{uuid.uuid4().hex}"})
    ser = AvroSerializer(registry)
    encoded, rejected = serialize_column(ser, table, "bench-sr")
    assert not rejected, list(rejected.items())[:3]
    schema_str = registry.get_latest_version("bench-sr-value").schema.schema_str
    ref = ConfluentAvro(registry, schema_str)
    ctx = SerializationContext("bench-sr", MessageField.VALUE)
    dict_rows = table.slice(0, args.confluent_rows).to_pylist()
    check = [ref(r, ctx) for r in dict_rows[:1000]]
    assert check == encoded.slice(0, 1000).to_pylist(), "bytes differ from confluent's"
    payload_mb = sum(len(v) for v in encoded.to_pylist()[:10000]) / 10000 * args.rows / 1e6

    small = table.select(["id", "name", "tags", "amount", "flag"]).slice(0, args.format_rows)
    small_rows = [{k: v for k, v in r.items() if v is not None} for r in small.to_pylist()]
    json_ours = JSONSerializer(json.dumps(JSON_SCHEMA), registry)
    json_ref = ConfluentJSON(json.dumps(JSON_SCHEMA), registry)
    row_type = proto_row_type()
    pconf = {"use.deprecated.format": False}
    proto_ours = ProtobufSerializer(row_type, registry, pconf)
    proto_ref = ConfluentProto(row_type, registry, pconf)
    ((jout, jrej),) = list(json_ours.serialize_batch(small_rows, "bench-sr"))
    assert not jrej and jout.to_pylist()[:100] == [json_ref(r, ctx) for r in small_rows[:100]]

    runs: dict[str, list[float]] = {
        k: []
        for k in (
            "cykafka",
            "pre_encoded",
            "encode_only",
            "confluent",
            "json_cykafka",
            "json_confluent",
            "protobuf_cykafka",
            "protobuf_confluent",
        )
    }
    with bootstrap_or_local(args.bootstrap and [args.bootstrap] or []) as bootstrap:
        conf = {"bootstrap.servers": bootstrap, "linger.ms": 5}

        def produce(data: Any, **kw: Any) -> float:
            t = fresh_topic(bootstrap, "bench-sr", partitions=1)
            with Producer(conf) as p:
                p.produce(t, b"warm-up").result(30)
                rate = time.perf_counter()
                report = p.produce_batch(t, data, **kw).result(300)
                elapsed = time.perf_counter() - rate
            assert report.delivered == args.rows, report
            return elapsed

        for rnd in range(args.repeat):
            runs["cykafka"].append(args.rows / produce(table, value_serializer=ser))
            runs["pre_encoded"].append(args.rows / produce(encoded))
            runs["encode_only"].append(
                args.rows / timed(lambda: list(ser.serialize_batch(table, "bench-sr")))
            )
            runs["confluent"].append(
                len(dict_rows) / timed(lambda: [ref(r, ctx) for r in dict_rows])
            )
            n = len(small_rows)
            runs["json_cykafka"].append(
                n / timed(lambda: list(json_ours.serialize_batch(small, "bench-sr")))
            )
            runs["json_confluent"].append(n / timed(lambda: [json_ref(r, ctx) for r in small_rows]))
            runs["protobuf_cykafka"].append(
                n / timed(lambda: list(proto_ours.serialize_batch(small, "bench-sr")))
            )
            runs["protobuf_confluent"].append(
                n / timed(lambda: [proto_ref(row_type(**r), ctx) for r in small_rows])
            )
            print(
                f"[schema_registry] round {rnd + 1}: "
                + ", ".join(f"{k} {v[-1]:,.0f} rows/s" for k, v in runs.items()),
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(v) for k, v in runs.items()}
    out = {
        "rows": args.rows,
        "confluent_rows": len(dict_rows),
        "payload_mb": round(payload_mb, 1),
        "runs_rows_per_s": runs,
        "median_rows_per_s": med,
        "speedup_vs_confluent_median": med["cykafka"] / med["confluent"],
        "ratio_to_pre_encoded_median": med["cykafka"] / med["pre_encoded"],
        "json_speedup_vs_confluent_median": med["json_cykafka"] / med["json_confluent"],
        "protobuf_speedup_vs_confluent_median": med["protobuf_cykafka"] / med["protobuf_confluent"],
        "paired_ratio_to_pre_encoded": statistics.median(
            a / b for a, b in zip(runs["cykafka"], runs["pre_encoded"])
        ),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
