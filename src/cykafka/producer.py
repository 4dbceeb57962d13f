"""The Producer: librdkafka's producer with a future for every delivery."""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Callable, Optional, SupportsIndex, TextIO, Union

from . import inspector as _inspector
from . import presets as _presets
from ._native import (
    DEFAULT_EXIT_TIMEOUT,
    BatchFuture,
    KafkaError,
    NativeProducer,
    produce_serialized,
)
from ._native import aproduce_batch as _aproduce_batch
from .config import (
    KEYS_PARTITION_COUNT,
    Properties,
    ResolvedConfig,
    batch_sizing,
    mask_secrets,
    number_property,
    resolve,
    secret_values,
    sized_topic,
)
from .inspector.watchdog import EpochWatch

if TYPE_CHECKING:
    from rich.console import Console

    # The stub's names for what the native batch path takes (private: no runtime twin).
    from ._native import _Headers, _OnBatchDelivery, _Timestamp
    from .cluster.reach import ClusterSeen
    from .explain import Guarantees
    from .inspector import AccumulatorSnapshot
    from .serialized import Data, Serializer

__all__ = ["Producer"]


# Callables a confluent-kafka style config may carry; librdkafka cannot take them.
_CALLBACK_KEYS = ("error_cb", "stats_cb")


class Producer(NativeProducer):
    """A Kafka producer.

    ``config`` (or a :class:`cykafka.config.ResolvedConfig` from
    :func:`cykafka.config.resolve`) takes librdkafka's property names (and the Java producer's, which
    are translated: see :func:`cykafka.translate`).  ``preset`` names one or more
    presets from :mod:`cykafka.presets` (e.g. ``"ordered"``) applied under the
    explicit config.  ``max.block.ms`` (default 60000) bounds how long
    :meth:`produce` waits for room when librdkafka's queue is full before
    raising :class:`QueueFullError` (a :class:`BufferError`); values from about
    9.2e12 (Java's ``Long.MAX_VALUE``) up, and ``inf``, mean no limit.  Inside an
    ``on_delivery`` or done-callback (cykafka's event thread, the thread that makes
    room) produce never waits: a full queue raises :class:`QueueFullError` at once.

    A producer still open when the interpreter exits, and a ``with`` block left by
    Ctrl-C, is flushed for at most ``exit_timeout`` seconds (default 5; None: no
    limit); messages still undelivered then fail (their futures say so) and the
    count is logged.  A producer garbage-collected unclosed warns and is flushed for
    ``exit_timeout`` too, at most 10 s.  Ctrl-C again during that flush abandons it at once: what is
    left is purged, the futures fail saying so, stderr says how many messages were
    abandoned.  Ctrl-C during :meth:`flush` or :meth:`close` raises
    KeyboardInterrupt and loses nothing (close() again resumes).

    ``on_error(exc)`` receives librdkafka's client-level errors (also logged to
    the ``cykafka`` logger); ``stats_cb(json_text)`` receives librdkafka's
    statistics every ``statistics.interval.ms``.  Both run on cykafka's event
    thread; exceptions they raise are logged.

    ``inspect_interval_ms`` is how often librdkafka's statistics are collected for
    :meth:`accumulator` (default :data:`cykafka.inspector.DEFAULT_INTERVAL_MS`; 0: only
    the exact counters).  The faster of it and ``statistics.interval.ms`` is what
    librdkafka gets; ``stats_cb`` is still called at ``statistics.interval.ms``.

    ``topics`` names the topics this producer writes to: their ``max.message.bytes``
    (the largest record batch their brokers accept) is read once, here, and
    ``batch.size`` lowered to the smallest when it is above it.  The broker refuses a
    record batch above that limit whole, and librdkafka fails every message in it where
    the Java producer would split the batch; sized so, only a message too large alone
    fails, its error naming the limit.  :attr:`batch_sizing` says what was done.

    Every :meth:`produce` returns a :class:`DeliveryFuture`; deliveries are
    served by a background thread, so no ``poll()`` is needed.

    In asyncio, ``await producer.aproduce(...)`` takes :meth:`produce`'s arguments and
    returns the :class:`DeliveryFuture` once the message is queued: at a full queue it
    waits for room on the running loop (woken by the delivery reports that free it,
    up to ``max.block.ms``) instead of blocking the loop's thread; cancelled while it
    waits, it has queued nothing.  :meth:`aflush`, :meth:`aclose` and ``async with``
    do the same for the other calls that wait.
    """

    def __init__(
        self,
        config: Union[Properties, ResolvedConfig, None] = None,
        *,
        preset: _presets.PresetSpec = None,
        on_error: Optional[Callable[[Exception], object]] = None,
        stats_cb: Optional[Callable[[str], object]] = None,
        inspect_interval_ms: Optional[int] = None,
        exit_timeout: Optional[float] = DEFAULT_EXIT_TIMEOUT,
        topics: Optional[Iterable[str]] = None,
    ) -> None:
        resolved: Optional[ResolvedConfig] = None
        if isinstance(config, ResolvedConfig):
            # A front door resolved it (with its own defaults): use it as it is.
            if preset:
                raise TypeError("pass preset= to resolve(), not next to a ResolvedConfig")
            resolved = config
            preset = list(resolved.presets)
            config = {}
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict of properties, not {type(config).__name__}")
        given = dict(config or {})
        for key in _CALLBACK_KEYS:
            value = given.pop(key, None)
            if value is not None and not callable(value):
                raise TypeError(f"config property {key!r} must be callable")
            if key == "error_cb" and value is not None:
                on_error = on_error or value
            if key == "stats_cb" and value is not None:
                stats_cb = stats_cb or value
        for name, fn in (("on_error", on_error), ("stats_cb", stats_cb)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, not {type(fn).__name__}")
        self._given = given
        # The one resolver (cykafka.config.resolve) parses the preset, lays it under the
        # config, translates Java names and adds cykafka's defaults; explain() reads the
        # same result.
        self._resolved = (resolved or resolve(given, preset)).require()
        limits = self._topic_limits(topics)
        self._resolved = self._resolved.sized_for(limits)
        sized = sized_topic(self._resolved)  # a front door sized it: its topic's limit
        if sized is not None:
            limits.setdefault(*sized)
        self._preset = list(self._resolved.presets)
        self._resolved.warn(stacklevel=2)
        lib = self._resolved.librdkafka()
        max_block_ms = self._resolved.max_block_ms
        if inspect_interval_ms is None:
            inspect_interval_ms = _inspector.default_interval_ms()
        if (
            type(inspect_interval_ms) is bool
            or not isinstance(inspect_interval_ms, int)
            or inspect_interval_ms < 0
        ):
            raise ValueError(
                f"inspect_interval_ms must be an int >= 0, not {inspect_interval_ms!r}"
            )
        user_stats_ms = int(
            number_property(lib.get("statistics.interval.ms", 0), "statistics.interval.ms")
        )
        # An idempotent producer can loop on epoch bumps that the broker refuses; the
        # watch says so through on_error (see cykafka.inspector.watchdog).
        watch = None
        if self._resolved.idempotent:
            me = weakref.ref(self)  # the watch lives in the extension: no cycle back

            def hint(text: Optional[str]) -> None:
                producer = me()
                if producer is not None:
                    producer._set_delivery_hint(text)

            watch = EpochWatch(on_error, hint=hint)
        stats_ms, native_stats_cb = _inspector.stats_setup(
            user_stats_ms, inspect_interval_ms, stats_cb, watch
        )
        if stats_ms:
            lib["statistics.interval.ms"] = str(stats_ms)
        self._config = lib
        self._started_at = time.monotonic()  # the inspector's first delivery rate
        # Time spent in flush() and the transaction calls: the Java producer's
        # flush-time-ns-total and txn-*-time-ns-total (see Producer.metrics()).
        self._call_ns: dict[str, int] = {}
        secrets = tuple(secret_values(lib))
        self._native_start(
            {**lib, KEYS_PARTITION_COUNT: self.keys_partition_count},
            max_block_ms / 1000.0,
            on_error,
            native_stats_cb,
            secrets,
            exit_timeout,
        )
        if limits:
            self._set_topic_limits(limits)
        _inspector.producer_created(self)

    def _topic_limits(self, topics: Optional[Iterable[str]]) -> dict[str, int]:
        """``topics``' max.message.bytes, from the cluster the config names."""
        if topics is None:
            return {}
        if isinstance(topics, (str, bytes)):
            raise TypeError(f"topics must be a list of topic names, not {topics!r}")
        names = list(topics)
        if not all(isinstance(t, str) and t for t in names):
            raise TypeError(f"topics must be a list of topic names, not {names!r}")
        if not names:
            return {}
        lib = self._resolved.librdkafka()
        if "bootstrap.servers" not in lib:
            raise ValueError(
                "topics= looks each topic's max.message.bytes up on the cluster: the "
                "config needs bootstrap.servers"
            )
        from .cluster.admin import topic_limits

        return topic_limits(lib, names)

    # -- context manager ----------------------------------------------------

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], *exc_info: object) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            # Ctrl-C: flush for exit_timeout at most, and a second Ctrl-C abandons.
            self._close_interrupted()
        else:
            self.close()

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]], *exc_info: object) -> None:
        await self.aclose()

    # -- introspection ------------------------------------------------------

    @property
    def config(self) -> dict[str, str]:
        """The librdkafka config in force (after presets and translation),
        secrets masked."""
        return mask_secrets(self._config)

    @property
    def batch_sizing(self) -> Optional[str]:
        """``"batch.size lowered to N for topic T: its max.message.bytes is M"`` when
        this producer's batches were sized for a topic (``topics=``, or by a front
        door), else None."""
        return batch_sizing(self._resolved)

    @property
    def guarantees(self) -> Guarantees:
        """What this producer's config guarantees (see :func:`cykafka.explain`)."""
        from .explain import explain

        return explain(self._resolved)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} pending"
        servers = self._config.get("bootstrap.servers", "?") if hasattr(self, "_config") else "?"
        preset = f" preset={'+'.join(self._preset)}" if getattr(self, "_preset", None) else ""
        return f"<cykafka.Producer {self.name} {servers}{preset} {state}>"

    # -- readiness ----------------------------------------------------------

    def require(self, timeout: float = 6.0) -> ClusterSeen:
        """Wait at most ``timeout`` seconds (default 6, the CLI's ``--connect-timeout``)
        for a broker of ``bootstrap.servers`` to answer, with this producer's connection
        and security settings, and return what the cluster said: a
        :class:`~cykafka.cluster.reach.ClusterSeen` (``brokers``: node id to
        ``"host:port"``, ``controller``, ``cluster_id``, ``seconds`` it took).

        Call it before a long load: :meth:`produce` never fails on a cluster that does
        not answer, its messages wait for ``message.timeout.ms`` (5 minutes by default)
        and then fail.  When no broker answers in time,
        :class:`~cykafka.cluster.reach.ClusterUnreachable` (a :class:`ConnectionError`)
        says so in one line naming the address and what each attempt met (connection
        refused, name not resolved), or, when the brokers refused this client's TLS or
        SASL, that the security settings are to check (its ``security`` is True); the
        same check and the same words as ``cykafka import`` and ``verify``.  The probe
        uses a client of its own and sends nothing."""
        from .cluster.reach import require

        bootstrap = self._config.get("bootstrap.servers")
        if not bootstrap:
            raise ValueError("require() asks the cluster: the config needs bootstrap.servers")
        return require(str(bootstrap), self._config, timeout, python=True)

    @property
    def keys_partition_count(self) -> str:
        """``keys.partition.count``: as configured, else ``first`` for an idempotent
        producer (the presets that promise per-key order) and ``current`` otherwise.
        librdkafka re-reads a topic's partition count every
        ``topic.metadata.refresh.interval.ms`` and then hashes keys over the new count:
        partitions added mid-run would split keys, and with them per-key order."""
        found = self._resolved.explicit(KEYS_PARTITION_COUNT)
        if found is not None:
            return found[1].value
        return "first" if self._resolved.idempotent else "current"

    def partition_count_changes(self) -> dict[str, tuple[int, int]]:
        """``{topic: (first, now)}``: the topics whose partition count changed while
        this producer wrote to them.  With ``keys.partition.count=first`` (the default
        of an idempotent producer) each key stayed on its partition and the new
        partitions got keyless messages only; with ``current`` keys written after
        librdkafka saw the change may be on another partition than before."""
        return self._partition_count_changes()

    # -- inspection ---------------------------------------------------------

    def accumulator(self) -> AccumulatorSnapshot:
        """Where this producer's messages wait: see :mod:`cykafka.inspector`.  Cheap
        (statistics are parsed once per emit); exact counters are current, the rest
        carries its ``age_s``."""
        return _inspector.inspector_of(self).snapshot()

    def metrics(self) -> dict[str, float]:
        """The Java producer's metrics (``producer-metrics`` group) that have a
        librdkafka equivalent, by Java name, with Java's definitions: averages and
        rates over two 30 s sampled windows, fed by every statistics emit.  Where each
        one's samples come from and when it can be NaN:
        :data:`cykafka.inspector.metrics.DOCS`.  Right after traffic whose samples no
        emit has carried yet, waits for the next emit (at most one
        ``statistics.interval.ms`` and a little; never in a callback)."""
        return _inspector.inspector_of(self).metrics()

    def metrics_opentelemetry(self) -> list[dict[str, object]]:
        """:meth:`metrics` as OpenTelemetry data points named as the Java client's
        (``org.apache.kafka.producer.record.send.rate``...), for an exporter to send."""
        return _inspector.opentelemetry_points(self.metrics(), self.name or "")

    def metrics_prometheus(self) -> str:
        """:meth:`metrics` plus per-partition/broker gauges, as Prometheus text."""
        ins = _inspector.inspector_of(self)
        return _inspector.prometheus_text(ins.metrics(), ins.snapshot())

    @contextlib.contextmanager
    def inspect_live(
        self,
        interval: float = 0.25,
        *,
        console: Optional[Console] = None,
        file: Optional[TextIO] = None,
        log_interval: float = 5.0,
        max_rows: Optional[int] = 30,
    ) -> Iterator[Producer]:
        """Show :meth:`accumulator` live while the block runs: a rich view refreshed
        every ``interval`` s (the ``max_rows`` busiest partitions) when ``file``
        (default stdout) is a terminal or a rich ``console`` is given, else one plain
        line every ``log_interval`` s."""
        with _inspector.live_view(lambda: [self], interval, console, file, log_interval, max_rows):
            yield self

    # -- timed calls (metrics) ---------------------------------------------------

    @contextlib.contextmanager
    def _timed(self, call: str) -> Iterator[None]:
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            self._call_ns[call] = self._call_ns.get(call, 0) + time.perf_counter_ns() - start

    def flush(self, timeout: Optional[float] = None) -> int:
        with self._timed("flush"):
            return int(super().flush(timeout))

    async def aflush(self, timeout: Optional[float] = None) -> int:
        """:meth:`flush` for asyncio: wait on the running loop, never blocking it, until
        every queued message has an outcome or ``timeout`` seconds pass (None: no
        limit); return how many are still pending.  The delivery reports themselves
        wake it (no polling).  Unlike :meth:`flush` it does not cut ``linger.ms``
        short.  Cancelling it loses nothing."""
        with self._timed("flush"):
            return int(await super().aflush(timeout))

    async def aclose(self, timeout: Optional[float] = None, commit: bool = False) -> None:
        """:meth:`close` for asyncio: the wait for outcomes (up to ``timeout``; None: no
        limit) is an :meth:`aflush` on the loop; then :meth:`close` runs on a worker
        thread (it fails what is left, ends an open transaction as ``close`` does, and
        waits for librdkafka's threads to stop).  Cancelled while it waits for
        outcomes, nothing is lost and the producer stays open."""
        import asyncio  # here: importing cykafka does not import asyncio

        if self.closed:
            return
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else time.monotonic() + timeout
        await self.aflush(timeout)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        await loop.run_in_executor(None, self.close, left, commit)

    def init_transactions(self, timeout: float = 30.0) -> None:
        with self._timed("init_transactions"):
            super().init_transactions(timeout)

    def begin_transaction(self) -> None:
        with self._timed("begin_transaction"):
            super().begin_transaction()

    def commit_transaction(self, timeout: float = 60.0) -> None:
        with self._timed("commit_transaction"):
            super().commit_transaction(timeout)

    def abort_transaction(self, timeout: float = 60.0) -> None:
        with self._timed("abort_transaction"):
            super().abort_transaction(timeout)

    # -- serializers (cykafka.schema_registry, or any confluent-style callable) --

    def produce_batch(
        self,
        topic: str,
        values: Data,
        keys: Optional[Data] = None,
        *,
        partitions: Optional[Sequence[Optional[SupportsIndex]]] = None,
        timestamps: Optional[Sequence[_Timestamp]] = None,
        headers: Optional[Sequence[Optional[_Headers]]] = None,
        on_delivery: Optional[_OnBatchDelivery] = None,
        value_serializer: Optional[Serializer] = None,
        key_serializer: Optional[Serializer] = None,
    ) -> BatchFuture:
        """Queue a whole column of messages in one C loop; return a
        :class:`BatchFuture`.  With ``value_serializer`` (e.g.
        :class:`cykafka.schema_registry.AvroSerializer`) ``values`` is data: a pyarrow
        Table/RecordBatch (one message per row) or a list of records; likewise
        ``keys`` with ``key_serializer``.  A row that does not fit the schema fails on
        its own (its error in the report names the row and field); a registry that
        cannot be reached or refuses the schema raises before anything is produced."""
        if value_serializer is None and key_serializer is None:
            return NativeProducer.produce_batch(
                self,
                topic,
                values,
                keys,
                partitions=partitions,
                timestamps=timestamps,
                headers=headers,
                on_delivery=on_delivery,
            )
        from .serialized import serialized_chunks

        chunks = serialized_chunks(
            topic, values, keys, value_serializer, key_serializer, partitions, timestamps, headers
        )
        return produce_serialized(self, topic, chunks, on_delivery)

    async def aproduce_batch(
        self,
        topic: str,
        values: Data,
        keys: Optional[Data] = None,
        *,
        partitions: Optional[Sequence[Optional[SupportsIndex]]] = None,
        timestamps: Optional[Sequence[_Timestamp]] = None,
        headers: Optional[Sequence[Optional[_Headers]]] = None,
        on_delivery: Optional[_OnBatchDelivery] = None,
    ) -> BatchFuture:
        """:meth:`produce_batch` for asyncio: return the :class:`BatchFuture` once every
        message is handed to librdkafka.  At a full queue it waits for room on the
        running loop (woken by the delivery reports that free it, up to
        ``max.block.ms`` for the whole batch) instead of blocking the loop's thread, and
        a long hand-over lets the loop's other tasks run every few milliseconds.

        Cancelled while it waits (or stopped by ``max.block.ms`` or :meth:`close`), the
        messages not yet handed over are never queued: each is failed in the batch's
        report ("not queued"); those handed over already end delivered or failed by
        their delivery reports.  The exception raised carries the future as
        ``exc.batch``, which resolves once every message has its outcome, so nothing
        is lost silently.  Serializers are :meth:`produce_batch`'s alone (an encoder
        that asks a registry would wait with the loop's thread)."""
        return await _aproduce_batch(
            self, topic, values, keys, partitions, timestamps, headers, on_delivery
        )

    # -- transactions -------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, timeout: float = 60.0) -> Iterator[Producer]:
        """Run the block in a transaction: commit if it succeeds (which flushes),
        abort if it raises.  Requires a ``transactional.id`` (preset
        ``exactly_once``) and a prior :meth:`init_transactions`."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            self.abort_transaction(timeout)
            raise
        self._commit_or_abort(timeout)

    def _commit_or_abort(self, timeout: float) -> None:
        # librdkafka's rules for rd_kafka_commit_transaction() (rdkafka.h, "Error
        # handling example"): an abortable error requires abort_transaction(); a
        # retriable one may be retried ("This call is resumable"); anything else is
        # to be treated as fatal.  Without the abort, an abortable commit failure
        # would leave the transaction open and the next begin_transaction() refused.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.commit_transaction(max(deadline - time.monotonic(), 0.001))
                return
            except KafkaError as exc:
                if exc.txn_requires_abort:
                    self.abort_transaction(timeout)
                    raise
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)  # librdkafka: retry "after a shorter grace period"
