"""A producer's metrics through OpenTelemetry, and the span's traceparent in its headers."""

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import cykafka
from cykafka.broker import LocalBroker
from cykafka.inspector.exporters import otel

reader = InMemoryMetricReader()  # in a service: a PeriodicExportingMetricReader (OTLP...)
provider = MeterProvider(metric_readers=[reader])
tracer = TracerProvider().get_tracer("example")

with LocalBroker() as broker:
    broker.create_topic("orders", partitions=3)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        otel.instrument(p, provider, delivery_latency=True)
        with tracer.start_as_current_span("checkout"):
            p.produce("orders", b"order 1", key=b"user-1")  # carries traceparent
        p.produce_batch("orders", [b"x" * 100] * 999)
        assert p.flush(30) == 0
        data = reader.get_metrics_data()

shown = {
    "org.apache.kafka.producer.record.send.total",
    "org.apache.kafka.producer.record.error.total",
    "cykafka.producer.messages.pending",
    "messaging.client.operation.duration",
}
for metric in sorted(data.resource_metrics[0].scope_metrics[0].metrics, key=lambda m: m.name):
    if metric.name in shown:
        (point,) = metric.data.data_points
        value = f"count={point.count}" if hasattr(point, "count") else f"{point.value:g}"
        print(f"{metric.name} {dict(point.attributes)['messaging.system']} {value}")
