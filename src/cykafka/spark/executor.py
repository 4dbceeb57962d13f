"""The executor side: what one Spark task runs inside ``mapInArrow``.

A task takes one :class:`cykafka.Producer` (created inside the executor's Python
worker, after any fork, and kept there for the worker's next task with the same config,
as Spark's own Kafka sink does; the config travels as a plain dict, a producer is never
pickled), hands each Arrow batch's columns to ``produce_batch`` (read straight from the
Arrow buffers, no Python object per row), waits for every delivery, and returns one
JSON row: its :class:`~cykafka.spark.report.TaskResult`.

Functions reach the executors through :func:`shipped`, a small function pickled by
value: if the executors' Python cannot import cykafka it fails with one line saying
how to ship it, instead of an unpickling traceback."""

from __future__ import annotations

import atexit
import json
import os
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Callable, Optional, TypedDict, Union, cast

from .plan import WritePlan
from .report import MAX_ERRORS, SETUP_MARK, TASK_MARK, TaskResult

if TYPE_CHECKING:
    import pyarrow as pa

    from .._native import BatchFuture
    from ..config import ResolvedConfig
    from ..config.types import JSONValue
    from ..producer import Producer
    from ..schema_registry.formats import Serializer
    from ..serialized import Data

    class Kwargs(TypedDict, total=False):
        """A produce_batch call's keyword arguments for one topic's rows."""

        values: Data
        keys: Optional[pa.Array]
        partitions: Optional[pa.Array]
        headers: list[Optional[list[tuple[str, Optional[bytes]]]]]
        value_serializer: Serializer
        key_serializer: Serializer

    Batches = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

__all__ = ["shipped", "write_task"]

HOW_TO_SHIP = (
    "install cykafka[spark] into the executors' Python, or ship a packed virtualenv: "
    "venv-pack -o env.tar.gz, then --archives env.tar.gz#env --conf "
    "spark.pyspark.python=./env/bin/python (spark-submit, or the Spark Connect server's "
    "start command)"
)

# Producers kept by a Python worker between its tasks, like Spark's own Kafka sink does
# (its CachedKafkaProducer): an idempotent producer's first ProducerId request is made at
# once, finds no broker connected yet and is retried by librdkafka 500 ms later, so a
# fresh producer per task made every `ordered` task wait ~0.5 s before its first send.
# Keyed by the whole config; never used for transactions (their id names a unit); a
# producer is kept only after a task that delivered everything and left nothing queued.
_KEPT: dict[tuple[tuple[str, str], ...], tuple[Producer, float]] = {}
_KEEP_IDLE_S = 600.0  # close producers no task has used for this long

# max.message.bytes of the topics this worker's tasks met through a topic column:
# (bootstrap.servers, topic) -> (the limit, or None when the cluster did not describe
# it; when asked), asked again after librdkafka's own metadata refresh interval.
_LIMITS: dict[tuple[str, str], tuple[Optional[int], float]] = {}
_LIMITS_TTL_S = 300.0
# The limits this worker's earlier tasks of a write met, by the write's producer config:
# the next task starts sized for them, and so takes the producer they kept.
_MET: dict[tuple[tuple[str, str], ...], dict[str, int]] = {}


class _Sizing:
    """A write's batch sizing for the topics its rows name.  The driver read the limits
    of the write's topic or of ``topics=`` (``plan.topic_limits``).  Outside
    transactions a task that meets another topic through the topic column reads its
    limit (once per worker and cluster) and, when it is below the producer's
    ``batch.size``, goes on with a producer sized for it (:meth:`meet`): the broker
    refuses a larger record batch whole and librdkafka fails every row in it."""

    def __init__(self, plan: WritePlan, resolved: ResolvedConfig, transactional: bool) -> None:
        self.config = plan.options.config
        self.base = resolved
        # A unit's transaction is its producer's: it cannot change inside it.
        self.column = plan.topic_col is not None
        self.fixed = transactional or not self.column
        self.write = _keep_key(resolved)
        self.limits: dict[str, int] = {
            **({} if self.fixed else _MET.get(self.write, {})),
            **plan.topic_limits,
        }
        self.met: set[str] = set(self.limits)
        self.resolved = resolved.sized_for(self.limits)

    def batch_size(self) -> int:
        return int(self.resolved.effective("batch.size").value)

    def meet(self, topics: Sequence[str]) -> Optional[str]:
        """What the topics of an Arrow batch change: ``"resize"`` when one lowers the
        batch size (then :attr:`resolved` is the config to go on with), ``"limits"``
        when only :attr:`limits` grew (the producer's error notes need them), else
        None."""
        if self.fixed:
            return None
        new = [t for t in dict.fromkeys(topics) if t not in self.met]
        if not new:
            return None
        self.met.update(new)
        found = self._limits(new)
        if not found:
            return None
        self.limits.update(found)
        _MET.setdefault(self.write, {}).update(found)
        if min(found.values()) >= self.batch_size():
            return "limits"
        self.resolved = self.base.sized_for(self.limits)
        return "resize"

    def _limits(self, topics: list[str]) -> dict[str, int]:
        """``topics``' limits, those this worker does not know asked in one request."""
        from .._native import KafkaError
        from ..cluster.admin import topic_limits

        servers = str(self.config["bootstrap.servers"])
        now = time.monotonic()
        ask = [
            t
            for t in topics
            if (servers, t) not in _LIMITS or now - _LIMITS[(servers, t)][1] > _LIMITS_TTL_S
        ]
        if ask:
            try:
                answered = topic_limits(self.config, ask)
            except KafkaError:
                # Not answered: the rows go as they are, and a refused batch's error
                # says how to size it (refusal_note).
                answered = {}
            for t in ask:
                _LIMITS[(servers, t)] = (answered.get(t), now)
        return {t: n for t in topics if (n := _LIMITS[(servers, t)][0]) is not None}

    def refusal_note(self, topic: str) -> str:
        """For a batch refused as too large: why, and the option that sizes it (the
        native error names ``Producer(topics=...)``, which a Spark user never makes)."""
        fix = (
            f"name the topic in write_kafka(..., topics=[{topic!r}]) to size batches for it"
            if self.column
            else "give producer_config batch_size= at most its max.message.bytes"
        )
        return (
            f"the brokers refused a record batch above topic {topic!r}'s max.message.bytes "
            f"(this task's batch.size is {self.batch_size()}): {fix}"
        )


_SHIM = """
def run(batches):
    try:
        import importlib
        target = getattr(importlib.import_module(MODULE), NAME)
    except ImportError as e:
        import sys
        raise RuntimeError(
            MARK + " cannot import cykafka in the executors' Python (" + sys.executable
            + ": " + str(e) + "); " + HOW
        ) from None
    return target(*ARGS, batches)
"""


def shipped(module: str, name: str, *args: object) -> Batches:
    """A mapInArrow function that imports ``module.name`` on the executor and calls it
    with ``*args`` and the batches.  Defined in a module nobody can import, so Spark's
    cloudpickle sends it by value; ``args`` must be plain data (no cykafka classes)."""
    ns: dict[str, object] = {
        "__name__": "cykafka_shipped",
        "MODULE": module,
        "NAME": name,
        "ARGS": args,
        "MARK": SETUP_MARK,
        "HOW": HOW_TO_SHIP,
    }
    exec(_SHIM, ns)
    # exec defined it from _SHIM: its type is known from there, not from ns
    return cast("Batches", ns["run"])


def _headers_list(col: pa.Array) -> list[Optional[list[tuple[str, Optional[bytes]]]]]:
    out: list[Optional[list[tuple[str, Optional[bytes]]]]] = []
    for hs in col.to_pylist():
        if hs is None:
            out.append(None)
        else:
            out.append([(h["key"], h["value"]) for h in hs if h is not None])
    return out


def _messages(
    batch: pa.RecordBatch, plan: WritePlan
) -> Iterator[Union[tuple[str, Kwargs, int], tuple[None, str, int]]]:
    """(topic, produce_batch keyword arguments, row count) for one Arrow batch; topic
    None: rows that cannot be sent, with why instead of the arguments."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._arrow import record_json

    def kwargs(b: pa.RecordBatch) -> Kwargs:
        def c(name: Optional[str]) -> Optional[pa.Array]:
            return None if name is None else b.column(b.schema.get_field_index(name))

        value = plan.options.value
        if plan.options.value_format or plan.options.key_format:
            return _registry_kwargs(b, plan, c)
        values = c(value) if value else record_json(b, plan.not_json, nonfinite="string")[0]
        kw: Kwargs = {"values": values, "keys": c(plan.key_col)}
        if plan.partition_col:
            kw["partitions"] = c(plan.partition_col)
        if plan.headers_col:
            kw["headers"] = _headers_list(c(plan.headers_col))
        return kw

    topic = plan.options.topic
    if plan.topic_col is None:
        assert topic is not None  # make_plan wants a topic or a topic column
        yield topic, kwargs(batch), batch.num_rows
        return
    tcol = batch.column(batch.schema.get_field_index(plan.topic_col))
    if topic is not None:
        tcol = pc.fill_null(tcol, topic)
    elif tcol.null_count:
        # Not sendable anywhere: counted as failed with this error, never dropped quietly.
        msg = f"{tcol.null_count} rows have a null topic and write_kafka() was given no topic"
        yield None, msg, tcol.null_count
        keep = pc.is_valid(tcol)
        batch, tcol = batch.filter(keep), tcol.filter(keep)
        if batch.num_rows == 0:
            return
    uniq = pc.unique(tcol).to_pylist()
    if len(uniq) == 1:
        yield uniq[0], kwargs(batch), batch.num_rows
        return
    for t in uniq:  # one produce_batch per topic; filter keeps the rows' order
        sub = batch.filter(pc.equal(tcol, pa.scalar(t, tcol.type)))
        yield t, kwargs(sub), sub.num_rows


# one registry client and serializers per worker
_SERIALIZERS: dict[
    tuple[Optional[str], ...], tuple[Optional[Serializer], Optional[Serializer]]
] = {}


def _registry_kwargs(
    b: pa.RecordBatch, plan: WritePlan, c: Callable[[Optional[str]], Optional[pa.Array]]
) -> Kwargs:
    """produce_batch arguments with Schema Registry serializers: the row (minus the
    helper/headers/partition/topic columns) or the value column, the key column."""
    from ..schema_registry import serializers_for

    o = plan.options
    # registry_fields refused value_format/key_format without a registry on the driver
    assert o.schema_registry is not None
    same = (
        o.value_format,
        json.dumps(o.schema_registry, sort_keys=True),
        o.value_schema,
        o.key_format,
        o.key_schema,
    )
    sers = _SERIALIZERS.get(same)
    if sers is None:
        sers = _SERIALIZERS[same] = serializers_for(
            o.value_format, o.schema_registry, o.value_schema, o.key_format, o.key_schema
        )
    if o.value:
        values = c(o.value)
    else:
        values = b.drop_columns([n for n in plan.not_json if n in b.schema.names])
    kw: Kwargs = {"values": values, "keys": c(plan.key_col)}
    if sers[0] is not None:
        kw["value_serializer"] = sers[0]
    elif o.value is None:
        raise ValueError("key_format without value_format needs a value column")
    if sers[1] is not None:
        kw["key_serializer"] = sers[1]
    if plan.partition_col:
        kw["partitions"] = c(plan.partition_col)
    if plan.headers_col:
        kw["headers"] = _headers_list(c(plan.headers_col))
    return kw


def write_task(
    shipped_plan: dict[str, JSONValue], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: one producer for this task, every batch through
    produce_batch, one JSON report row out."""
    import pyarrow as pa
    from pyspark import TaskContext

    from ..producer import Producer

    plan = WritePlan.from_json(shipped_plan)
    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    attempt = ctx.attemptNumber() if ctx is not None else 0
    # The driver resolved the config once (presets, Java names, defaults): built from
    # that, a task's producer is the one the driver explained.
    resolved = plan.producer_config(task)
    found = resolved.explicit("transactional.id") if plan.transactional else None
    txn_id = None if found is None else found[1].value
    result = TaskResult(task, attempt, 0, 0, 0, [], {}, txn_id)
    sizing = _Sizing(plan, resolved, txn_id is not None)
    key = None if txn_id else _keep_key(sizing.resolved)
    kept = _take_kept(key)
    # (not `or`: an idle Producer is falsy, len() == 0)
    producer = kept if kept is not None else Producer(sizing.resolved)
    producer._set_topic_limits(sizing.limits)
    keep = False
    result.producer = f"{os.getpid()}/{producer.name}"
    content = None
    if txn_id:
        from .progress import UnitContent

        content = UnitContent()  # what the unit holds: a re-run compares it

    def resize() -> None:
        """Go on with a producer sized for the topics met: the rows handed to this one
        are delivered first (flush), so each partition still gets them in order."""
        nonlocal producer, key
        producer.flush()
        producer.close()
        producer = Producer(sizing.resolved)
        producer._set_topic_limits(sizing.limits)
        key = _keep_key(sizing.resolved)
        result.producer = f"{os.getpid()}/{producer.name}"

    def send() -> None:
        futures: list[BatchFuture] = []
        for batch in batches:
            result.rows += batch.num_rows
            msgs = list(_messages(batch, plan))
            change = sizing.meet([m[0] for m in msgs if m[0] is not None])
            if change == "resize":
                resize()
            elif change == "limits":
                producer._set_topic_limits(sizing.limits)
            for msg in msgs:
                if msg[0] is None:
                    if len(result.errors) < MAX_ERRORS:
                        result.errors.append(msg[1])
                    continue
                topic, kw, _n = msg
                if content is not None:
                    content.add(topic, kw.get("keys"), kw["values"])
                futures.append(producer.produce_batch(topic, **kw))
        producer.flush()
        for fut in futures:
            rep = fut.result()
            result.delivered += rep.delivered
            result.failed += rep.failed
            for index, exc in rep.errors[: max(0, MAX_ERRORS - len(result.errors))]:
                why = exc.message
                if exc.name == "MSG_SIZE_TOO_LARGE" and rep.topic not in sizing.limits:
                    why = sizing.refusal_note(rep.topic)
                result.errors.append(f"{rep.topic} row {index}: {exc.name}: {why}")
            result.add_offsets(rep.topic, rep.first_offsets, rep.last_offsets)
        # Rows never handed to a produce_batch (a null topic) count as failed.
        result.failed += result.rows - result.delivered - result.failed

    aborted: Optional[str] = None
    try:
        if txn_id:
            from .transaction import run_unit

            aborted = run_unit(producer, plan, task, send, result, content)
        else:
            send()
        keep = key is not None and not result.failed and len(producer) == 0
    finally:
        if keep and key is not None:
            _KEPT[key] = (producer, time.monotonic())
        else:
            producer.close()
    if result.failed and plan.options.on_error == "raise":
        raise RuntimeError(
            f"{TASK_MARK} task {task} (attempt {attempt}): {result.failed:,} of {result.rows:,} "
            f"rows not delivered ({result.delivered:,} delivered"
            + (f", {aborted}" if aborted else "")
            + "); first errors: "
            + "; ".join(result.errors[:MAX_ERRORS])
        )
    yield pa.record_batch({"report": [result.to_json()]})


def _keep_key(resolved: ResolvedConfig) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, s.value) for k, s in resolved.settings.items()))


def _take_kept(key: Optional[tuple[tuple[str, str], ...]]) -> Optional[Producer]:
    """A producer an earlier task of this worker left with this config, or None; also
    closes kept producers idle for longer than _KEEP_IDLE_S."""
    now = time.monotonic()
    for k, (p, used) in list(_KEPT.items()):
        if now - used > _KEEP_IDLE_S:
            del _KEPT[k]
            p.close()
    if key is None or key not in _KEPT:
        return None
    producer, _ = _KEPT.pop(key)
    return None if producer.closed else producer


@atexit.register
def _close_kept() -> None:
    """At the worker's exit: close kept producers (nothing is queued in them)."""
    while _KEPT:
        _, (p, _used) = _KEPT.popitem()
        p.close()
