"""A producer's metrics through the OpenTelemetry metrics API, and the active span's
W3C trace context in its messages' headers (``pip install cykafka[otel]``).

:func:`instrument` registers, on a :class:`~opentelemetry.metrics.MeterProvider` (the
global one unless given), observable instruments that read the producer's figures when
the provider's reader collects, so a producer costs nothing between collections, and
nothing at all unless instrumented:

* every metric of :meth:`cykafka.Producer.metrics` (the Java producer's, with Java's
  definitions: :data:`cykafka.inspector.metrics.DOCS`), named as the Java client's
  OpenTelemetry bridge names them (``org.apache.kafka.producer.record.send.total``...;
  the twin of :func:`cykafka.inspector.opentelemetry_points`): messages sent
  (``record.send.total``), bytes (``outgoing.byte.total``), errors
  (``record.error.total``), retries (``record.retry.total``), requests in flight,
  throttle time, buffer use...; ``*-total`` ones are monotonic counters, the rest
  gauges, NaN (no sample yet) left out;
* ``cykafka.producer.messages.pending``: messages produced whose outcome is not yet
  known (the queue's depth, exact);
* with ``delivery_latency=True``, ``messaging.client.operation.duration``
  (OpenTelemetry's messaging semantic conventions), a histogram in seconds of every
  message's delivery latency, from the produce call to its delivery report
  (librdkafka's ``rd_kafka_message_latency``, measured per message by the event
  thread; for a message produce() grouped with others, from the group's hand-over, at
  most 1 ms later), with ``error.type`` on failed ones.  Off by default: the API can
  only record one value per call, and the SDK's ``Histogram.record`` costs tens of
  microseconds a message (bench/otel_overhead.py), far more than producing it.

Every point carries ``client_id`` (the producer's ``name``) and
``messaging.system=kafka``.  With ``trace_context=True`` (the default), produce and
aproduce called while a span is active add the headers OpenTelemetry's configured
propagator writes (W3C ``traceparent``, and ``tracestate``/``baggage`` when set; a
header the caller already gave is kept).  Batches (``produce_batch``) are left as they
are: one span's context on a whole column is seldom what a trace means.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from opentelemetry import metrics as _metrics
from opentelemetry import propagate as _propagate
from opentelemetry import trace as _trace
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from ..metrics import DOCS, opentelemetry_points
from ..stats import inspector_of

if TYPE_CHECKING:
    from ..._native import NativeProducer

__all__ = ["LATENCY_BOUNDARIES_S", "ProducerInstruments", "instrument", "with_trace_context"]

#: The latency histogram's bucket boundaries (seconds): 1 ms to 2 min, by about x2.5.
LATENCY_BOUNDARIES_S: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
)  # fmt: skip

_METER = "cykafka"
_LATENCY = "messaging.client.operation.duration"
_PENDING = "cykafka.producer.messages.pending"

_HeadersArg = Union[Sequence[tuple[str, Any]], Mapping[str, Any], None]


def _java_name(name: str) -> str:
    return "org.apache.kafka.producer." + name.replace("-", ".")


class ProducerInstruments:
    """What :func:`instrument` set up for one producer; :meth:`close` undoes it (the
    instruments stay registered, as the OpenTelemetry API has no removal, but report
    nothing more)."""

    def __init__(
        self, producer: NativeProducer, meter: Meter, trace_context: bool, delivery_latency: bool
    ) -> None:
        self._producer = weakref.ref(producer)
        self._attrs = {"client_id": producer.name or "", "messaging.system": "kafka"}
        self._lock = threading.Lock()
        self._values: dict[str, float] = {}
        # The instruments served from _values since it was read: all, at first.
        self._served: set[str] = {_java_name(n) for n in DOCS}
        self._closed = False
        for name, doc in sorted(DOCS.items()):
            make = (
                meter.create_observable_counter
                if name.endswith("-total")
                else meter.create_observable_gauge
            )
            make(_java_name(name), callbacks=[self._reader(_java_name(name))], description=doc)
        meter.create_observable_gauge(
            _PENDING,
            callbacks=[self._pending],
            unit="{message}",
            description="messages produced whose outcome is not yet known (exact)",
        )
        self._ok_attrs = dict(self._attrs, **{"messaging.operation.name": "send"})
        if delivery_latency:
            hist = meter.create_histogram(
                _LATENCY,
                unit="s",
                description="delivery latency of each message: produce call to delivery report",
                explicit_bucket_boundaries_advisory=list(LATENCY_BOUNDARIES_S),
            )
            self._record = hist.record
            producer._set_latency_cb(self._latencies)
        self._wrapped: list[str] = []
        if trace_context:
            self._wrap_produce(producer)

    # -- observations (on the reader's thread) -------------------------------

    def _metrics(self, name: str) -> dict[str, float]:
        producer = self._producer()
        if producer is None or self._closed:
            return {}
        with self._lock:
            if name in self._served:
                # Asked twice: a new collection began.  One metrics() read per
                # collection serves every instrument, whatever order they are asked in.
                points = opentelemetry_points(inspector_of(producer).metrics(), "")
                self._values = {str(p["name"]): float(p["value"]) for p in points}
                self._served.clear()
            self._served.add(name)
            return self._values

    def _reader(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            value = self._metrics(name).get(name)
            return [] if value is None else [Observation(value, self._attrs)]

        return observe

    def _pending(self, options: CallbackOptions) -> Iterable[Observation]:
        producer = self._producer()
        if producer is None or self._closed:
            return []
        return [Observation(int(producer._counters().get("pending", 0)), self._attrs)]

    # -- the event thread's latencies ------------------------------------------

    def _latencies(self, delivered: list[float], failed: list[tuple[float, str]]) -> None:
        record, attrs = self._record, self._ok_attrs
        for seconds in delivered:
            record(seconds, attrs)
        for seconds, error in failed:
            record(seconds, dict(attrs, **{"error.type": error}))

    # -- trace context ---------------------------------------------------------

    def _wrap_produce(self, producer: NativeProducer) -> None:
        for method in ("produce", "aproduce"):
            original = getattr(producer, method, None)
            if original is None:
                continue
            setattr(producer, method, _traced(original))
            self._wrapped.append(method)

    def close(self) -> None:
        """Stop reporting this producer and adding trace headers to its messages."""
        self._closed = True
        producer = self._producer()
        if producer is None:
            return
        producer._set_latency_cb(None)
        for method in self._wrapped:
            producer.__dict__.pop(method, None)
        self._wrapped = []


def _traced(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` (produce or aproduce) with the active span's context in ``headers``."""

    def traced(
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: Any = None,
        timestamp: Any = None,
        headers: _HeadersArg = None,
        on_delivery: Any = None,
        **kwargs: Any,
    ) -> Any:
        if _trace.get_current_span().get_span_context().is_valid:
            headers = with_trace_context(headers)
        return call(topic, value, key, partition, timestamp, headers, on_delivery, **kwargs)

    traced.__doc__ = call.__doc__
    return traced


def with_trace_context(headers: _HeadersArg) -> _HeadersArg:
    """``headers`` plus what the configured propagator writes for the current context
    (W3C ``traceparent``...), each kept where the caller gave it already."""
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    if not carrier:
        return headers
    if headers is None:
        return list(carrier.items())
    if isinstance(headers, Mapping):
        merged = dict(headers)
        for k, v in carrier.items():
            merged.setdefault(k, v)
        return merged
    given = {k for k, _ in headers}
    return list(headers) + [(k, v) for k, v in carrier.items() if k not in given]


def instrument(
    producer: NativeProducer,
    meter_provider: Optional[MeterProvider] = None,
    *,
    trace_context: bool = True,
    delivery_latency: bool = False,
) -> ProducerInstruments:
    """Publish ``producer``'s metrics through OpenTelemetry (``meter_provider``, default
    the global one); with ``trace_context``, send the active span's context in its
    messages' headers; with ``delivery_latency``, record every message's delivery
    latency.  See the module's documentation for the instruments."""
    provider = meter_provider or _metrics.get_meter_provider()
    meter = provider.get_meter(_METER)
    return ProducerInstruments(producer, meter, trace_context, delivery_latency)
