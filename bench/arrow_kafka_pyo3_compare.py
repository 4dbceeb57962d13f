"""One-off comparison with arrow-kafka-pyo3 (PyPI; Rust, Arrow -> registry Avro), which is
not a cykafka dependency: run it from a venv of its own, against the same broker.

    python -m venv /tmp/akp && /tmp/akp/bin/pip install arrow-kafka-pyo3 numpy confluent-kafka
    /tmp/akp/bin/python bench/arrow_kafka_pyo3_compare.py akp BOOTSTRAP 1000000
    .venv/bin/python bench/arrow_kafka_pyo3_compare.py cykafka BOOTSTRAP 1000000

The table is flat (int64, nullable string, timestamp, double, bool): arrow-kafka-pyo3
0.2.0 refuses list columns ("Unsupported Arrow data type List(...)"), so the 8-column
table of schema_registry_bench.py cannot be used.  arrow-kafka-pyo3 only speaks HTTP to a
registry and none is installable here, so it gets a minimal HTTP endpoint that accepts
the registration (POST /subjects/<s>/versions -> {"id": n}), the one call it makes;
cykafka uses confluent-kafka's in-process mock.  Each side: 3 rounds, a fresh topic each,
timed from the first row to the last delivery report (flush).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pyarrow as pa


def table(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    names = pa.array([None if i % 10 == 0 else f"customer-{i % 5000}" for i in range(n)])
    ts = pa.array(1_700_000_000_000 + ids * 7, pa.timestamp("ms", "UTC"))
    amount = np.random.default_rng(7).random(n) * 1000
    return pa.table({"id": ids, "name": names, "ts": ts, "amount": amount, "flag": ids % 3 == 0})


def fresh_topic(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"akp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    time.sleep(1)  # leaders
    return name


class _Register(BaseHTTPRequestHandler):
    ids: list[int] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.ids.append(len(self.ids) + 1)
        body = json.dumps({"id": self.ids[-1]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def run_akp(bootstrap: str, t: pa.Table) -> list[float]:
    from arrow_kafka_pyo3 import ArrowKafkaSink

    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Register)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    rates = []
    try:
        for _ in range(3):
            sink = ArrowKafkaSink(
                bootstrap, f"http://127.0.0.1:{srv.server_address[1]}", linger_ms=5
            )
            name = fresh_topic(bootstrap)
            t0 = time.perf_counter()
            sink.consume_arrow(t, name)
            sink.flush(120000)
            rates.append(t.num_rows / (time.perf_counter() - t0))
            sink.close()
    finally:
        srv.shutdown()
    return rates


def run_cykafka(bootstrap: str, t: pa.Table) -> list[float]:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from cykafka import Producer
    from cykafka.schema_registry import AvroSerializer

    ser = AvroSerializer(SchemaRegistryClient.new_client({"url": "mock://akp"}))
    rates = []
    for _ in range(3):
        name = fresh_topic(bootstrap)
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as p:
            p.produce(name, b"warm-up").result(30)
            t0 = time.perf_counter()
            report = p.produce_batch(name, t, value_serializer=ser).result(120)
            rates.append(t.num_rows / (time.perf_counter() - t0))
        assert report.delivered == t.num_rows, report
    return rates


if __name__ == "__main__":
    which, bootstrap, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rates = (run_akp if which == "akp" else run_cykafka)(bootstrap, table(rows))
    print(json.dumps({"line": which, "rows": rows, "rows_per_s": rates}))
