"""A producer throttled by a client quota (``producer_byte_rate``, set with Kafka's
``kafka-configs``) on Apache Kafka: it keeps going, every row is in the topic, and
the throttle shows in the inspector, the metrics (Java's names, Prometheus,
OpenTelemetry) and the import's progress lines."""

from __future__ import annotations

import uuid

import cykafka
from support.cli import run_import_command
from support.cluster_rules import keyed_rows, set_client_quota

#: The quota: far below what one producer sends on loopback.  Kafka measures a
#: client's rate over ``quota.window.num`` (11) windows of ``quota.window.size.seconds``
#: (1 s), so a burst is throttled once it is past about 11 s of quota (1.1 MB here):
#: each test sends about 3 MB, the last of it throttled for seconds.
RATE = 100_000


def test_a_quota_throttles_the_producer_and_the_inspector_shows_it(kafka, read_back) -> None:
    client = f"quota-{uuid.uuid4().hex[:8]}"
    topic = kafka.create_topic(f"quota-producer-{client}", partitions=1)
    set_client_quota(kafka, client, RATE)
    try:
        n, value = 3_000, b"v" * 1_000  # 3 MB
        seen: list[float] = []
        lines: list[str] = []
        with cykafka.Producer(
            {**kafka.client_config(), "client.id": client},
            preset="ordered",
            inspect_interval_ms=200,
        ) as p:
            futs = [p.produce(topic, value, key=str(i).encode()) for i in range(n)]
            while p.flush(0.1):  # the throttled responses come while it waits
                snap = getattr(p.accumulator(), "throttle_ms", None)
                if snap:
                    snapshot = p.accumulator()
                    seen.append(snap)
                    lines.append(snapshot.log_line())
                    table = str(snapshot.table(10))
            assert [f.exception(0) for f in futs] == [None] * n  # throttled, not failed
            metrics = p.metrics()
            prometheus = p.metrics_prometheus()
            otel = {pt["name"]: pt for pt in p.metrics_opentelemetry()}
        assert seen, "the inspector never showed the broker's throttle"
        assert "throttle ms" in table and "throttled" in lines[-1], (table, lines[-1])
        assert metrics["produce-throttle-time-max"] > 0, metrics
        assert any(
            line.startswith("kafka_producer_produce_throttle_time_max")
            and float(line.split()[-1]) > 0
            for line in prometheus.splitlines()
        ), prometheus
        assert "cykafka_broker_throttle_ms" in prometheus, prometheus
        assert any("throttle" in name and pt["value"] for name, pt in otel.items()), otel
        assert (
            sum(len(r) for r in read_back(kafka.bootstrap_servers, topic, expected=n).values()) == n
        )
    finally:
        set_client_quota(kafka, client, None)


def test_a_throttled_import_goes_on_and_its_progress_says_so(kafka, read_back, tmp_path) -> None:
    client = f"quota-{uuid.uuid4().hex[:8]}"
    topic = kafka.create_topic(f"quota-import-{client}", partitions=3)
    n = 8_000
    rows = keyed_rows(tmp_path / "rows.jsonl", n, keys=50, width=300)  # ~2.5 MB
    set_client_quota(kafka, client, RATE)
    try:
        proc = run_import_command(
            kafka.bootstrap_servers,
            str(rows),
            "-t",
            topic,
            "--preset",
            "ordered",
            "-X",
            f"client.id={client}",
            # (the import's lz4 would shrink the padded rows under the quota)
            "-X",
            "compression.type=none",
            timeout=300,
        )
    finally:
        set_client_quota(kafka, client, None)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # The progress lines while rows are read, and the summary (the last of the rows wait
    # in the producer's queue after reading ends): the throttle named.
    assert "  throttled   by the broker up to" in out, out
    assert sum(len(r) for r in read_back(kafka.bootstrap_servers, topic, expected=n).values()) == n
