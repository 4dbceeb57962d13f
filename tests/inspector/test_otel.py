"""The producer's metrics through OpenTelemetry, read with the SDK's InMemoryMetricReader
from a producer writing to Apache Kafka; the active span's W3C trace context in the
messages' headers, read back with a read_committed consumer; nothing of OpenTelemetry
loaded or wrapped for a producer not instrumented."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import cykafka
from cykafka.inspector.exporters import otel
from cykafka.launchers.kafka import KafkaCluster
from support.consume import read_back


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """{instrument name: its data points} of one collection."""
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for rm in data.resource_metrics if data is not None else []:  # None: nothing reported
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def _value(points: dict[str, list[Any]], name: str, client_id: str) -> float:
    (point,) = [p for p in points[name] if p.attributes["client_id"] == client_id]
    return float(point.value)


def _conf(kafka: KafkaCluster, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": kafka.bootstrap_servers, **extra}


def test_metrics_and_delivery_latency_through_the_sdk(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("otel-metrics", partitions=3)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    n = 500
    with cykafka.Producer(
        _conf(kafka, **{"message.max.bytes": 10_000, "linger.ms": 60_000}),
        inspect_interval_ms=100,
    ) as p:
        instruments = otel.instrument(p, provider, delivery_latency=True)
        futs = [p.produce(name, b"%d" % i, key=b"%d" % (i % 7)) for i in range(n)]
        # linger.ms holds them: the queue's depth is every message without an outcome.
        assert _value(_points(reader), "cykafka.producer.messages.pending", p.name) == n
        too_big = p.produce(name, b"x" * 20_000)  # refused by the producer itself
        assert p.flush(60) == 0
        assert all(f.result(0) for f in futs) and too_big.exception(0) is not None
        points = _points(reader)
        java = p.metrics()
        instruments.close()

    client = p.name
    assert _value(points, "cykafka.producer.messages.pending", client) == 0
    assert _value(points, "org.apache.kafka.producer.record.error.total", client) == 1
    assert java["record-error-total"] == 1
    sent = _value(points, "org.apache.kafka.producer.record.send.total", client)
    assert sent >= n and sent == java["record-send-total"]
    assert _value(points, "org.apache.kafka.producer.record.retry.total", client) == 0
    assert _value(points, "org.apache.kafka.producer.outgoing.byte.total", client) > 0
    assert _value(points, "org.apache.kafka.producer.request.total", client) > 0
    assert "org.apache.kafka.producer.requests.in.flight" in points
    assert "org.apache.kafka.producer.produce.throttle.time.max" in points
    (hist,) = points["messaging.client.operation.duration"]
    assert hist.attributes["client_id"] == client
    assert hist.attributes["messaging.system"] == "kafka"
    assert "error.type" not in hist.attributes
    # One latency per delivered message (the refused one never had a delivery report).
    assert hist.count == n and hist.sum > 0 and hist.min > 0
    assert list(hist.explicit_bounds) == list(otel.LATENCY_BOUNDARIES_S)
    got = read_back(kafka.bootstrap_servers, name, expected=n)
    assert sum(len(rs) for rs in got.values()) == n


def test_failed_deliveries_carry_their_error_type(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("otel-timeouts", partitions=1)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with cykafka.Producer(_conf(kafka, **{"message.timeout.ms": 1000})) as p:
        p.produce(name, b"warm").result(30)
        otel.instrument(p, provider, delivery_latency=True)
        node = kafka.nodes[0]
        node.pause()  # the node answers nothing: the messages time out
        try:
            futs = [p.produce(name, b"lost %d" % i) for i in range(5)]
            for f in futs:
                assert f.exception(60) is not None
        finally:
            node.resume()
        points = _points(reader)
    by_error = {
        pt.attributes.get("error.type"): pt.count
        for pt in points["messaging.client.operation.duration"]
    }
    assert by_error == {"_MSG_TIMED_OUT": 5}
    assert _value(points, "org.apache.kafka.producer.record.error.total", p.name) == 5


def test_the_active_span_travels_in_traceparent(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("otel-trace", partitions=1)
    tracer = TracerProvider().get_tracer("test")
    with cykafka.Producer(_conf(kafka)) as p:
        otel.instrument(p, MeterProvider())
        with tracer.start_as_current_span("send") as span:
            ctx = span.get_span_context()
            p.produce(name, b"in-span", headers=[("h", b"1")])
            p.produce(name, b"own", headers={"traceparent": "kept"})

            async def main() -> None:
                await (await p.aproduce(name, b"async"))

            asyncio.run(main())
        p.produce(name, b"no-span")
        p.flush(30)
    want = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}".encode()
    records = read_back(kafka.bootstrap_servers, name, expected=4)[0]
    headers = {r.value: r.headers for r in records}
    assert headers[b"in-span"] == [("h", b"1"), ("traceparent", want)]
    assert headers[b"own"] == [("traceparent", b"kept")]
    assert headers[b"async"] == [("traceparent", want)]
    assert headers[b"no-span"] == []


def test_nothing_of_opentelemetry_without_instrument() -> None:
    code = (
        "import sys, cykafka\n"
        "p = cykafka.Producer({'bootstrap.servers': '127.0.0.1:1'})\n"
        "p.metrics_prometheus(); p.close(0)\n"
        "assert 'produce' not in p.__dict__, p.__dict__\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_no_latency_histogram_unless_asked(kafka: KafkaCluster) -> None:
    name = kafka.create_topic("otel-no-latency", partitions=1)
    reader = InMemoryMetricReader()
    with cykafka.Producer(_conf(kafka)) as p:
        otel.instrument(p, MeterProvider(metric_readers=[reader]))
        p.produce(name, b"v").result(30)
        points = _points(reader)
    assert "messaging.client.operation.duration" not in points
    assert _value(points, "org.apache.kafka.producer.record.send.total", p.name) >= 1


def test_close_stops_reporting_and_unwraps(kafka: KafkaCluster) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with cykafka.Producer(_conf(kafka)) as p:
        instruments = otel.instrument(p, provider)
        assert "produce" in p.__dict__
        instruments.close()
        assert "produce" not in p.__dict__ and "aproduce" not in p.__dict__
        data = _points(reader)
    assert all(pt.attributes.get("client_id") != p.name for pts in data.values() for pt in pts)
