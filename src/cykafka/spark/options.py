"""What :func:`~cykafka.spark.write_kafka` and :func:`~cykafka.spark.kafka_batch_writer`
both take: :class:`WriteOptions`, checked and resolved once, before any DataFrame.

Each option is written once, here: a field of :class:`WriteOptions` with its doc line.
The front doors' signatures and the ``Args`` of their docstrings (``help(write_kafka)``,
the API pages) are made from the fields by :class:`OptionArguments`, which also turns a
call's arguments into a WriteOptions through that same signature."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import textwrap
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, TypeVar, Union

from ..config import ResolvedConfig
from ..presets import PresetSpec

if TYPE_CHECKING:
    from ..config.types import JSONValue
    from ..explain import Guarantees

__all__ = [
    "BOOTSTRAP_ENV",
    "OptionArguments",
    "WriteOptions",
    "check_job_name",
    "producer_options",
    "transactional_id",
]

#: Environment variable naming the brokers when ``bootstrap_servers`` is not given.
BOOTSTRAP_ENV = "CYKAFKA_BOOTSTRAP_SERVERS"
# Spark's Kafka sink options that cykafka cannot honour, with the reason.
_SPARK_REFUSED = {
    "key.serializer": "keys are written as the key column's bytes (string or binary)",
    "value.serializer": "values are written as the value column's bytes (string or binary)",
}
_T = TypeVar("_T")
_F = TypeVar("_F")


def _option(default: _T, doc: str) -> _T:
    """A field of :class:`WriteOptions` with its doc line (``Args`` of the front doors)."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class WriteOptions:
    """A Spark write's options, checked and its producer config resolved when made: a
    bad option fails here, before any DataFrame (and for ``kafka_batch_writer`` when
    the writer is made, not at the first micro-batch).  ``write_kafka(df, options=o)``
    and ``kafka_batch_writer(options=o)`` take one made ahead; the keywords of both
    make one.

    Schema files are read into text when made (executors need not see the file)."""

    topic: Optional[str] = _option(
        None, "the topic (a string ``topic`` column, if present, overrides it per row)."
    )
    bootstrap_servers: Optional[str] = _option(
        None,
        "brokers (default ``kafka.bootstrap.servers`` among the producer config, then "
        f"``${BOOTSTRAP_ENV}``).",
    )
    preset: PresetSpec = _option(
        "ordered",
        "cykafka preset(s); ordering presets repartition by the key's Kafka partition "
        "(see :mod:`cykafka.spark`).  ``None`` for librdkafka's defaults.",
    )
    key: Optional[str] = _option(
        "key",
        'key column (string/binary).  The default ``"key"`` is used only if the '
        "DataFrame has it; ``None``: no key.",
    )
    value: Optional[str] = _option(
        "value",
        "value column (string/binary), or ``None`` for each row as JSON (all columns "
        "except the ``headers``/``partition``/``topic`` ones).",
    )
    headers: Optional[str] = _option(
        None,
        "header column, array<struct<key: string, value: binary>>; ``None``: the "
        "``headers`` column if there is one.",
    )
    partition: Optional[str] = _option(
        None,
        "int column with explicit partitions; ``None``: the ``partition`` column if there is one.",
    )
    on_error: str = _option(
        "raise",
        '``"raise"`` (a task that cannot deliver every row fails the job) or '
        '``"report"`` (failures are counted in the report).',
    )
    repartition: Optional[bool] = _option(
        None,
        "``None`` (default): repartition by Kafka partition under an ordering preset "
        "with a key or partition column.  ``False`` skips that shuffle: per-key order "
        "then holds only if you already put each key's rows in one Spark partition in "
        'order (``df.repartition(n, "key").sortWithinPartitions("ts")``).  ``True`` '
        "forces it under any preset.",
    )
    writers: Optional[int] = _option(
        None,
        "ordered writes: how many Spark tasks write, each owning whole Kafka "
        "partitions.  ``None`` (default): one per Kafka partition, after a shuffle that "
        "routes each row to its partition's task (scales out with the cluster).  ``1``: "
        "one task writes every row in the DataFrame's order with no shuffle at all "
        "(``coalesce(1)``): about twice as fast on a small machine, but one producer's "
        "throughput is the ceiling.",
    )
    order_by: Union[str, Sequence[str], None] = _option(
        None,
        "ordered writes: a column name or a list of them; each Kafka partition gets its "
        "rows in this order (ties: the DataFrame's order), however Spark split and "
        "shuffled the rows -- no global sort needed.  Without it a partition gets its "
        "rows in the DataFrame's order, which is only defined after ``df.orderBy(...)``.  "
        "Each attempt of a task writes in this order: a task retried without "
        "``exactly_once`` writes its rows again after those its failed attempt wrote "
        "(``report.duplicates`` counts them).",
    )
    value_format: Optional[str] = _option(
        None,
        '``"avro"``, ``"json-schema"`` or ``"protobuf"``: serialize the value (the '
        "``value`` column, or the row) for a Confluent Schema Registry "
        "(:mod:`cykafka.schema_registry`); a row that does not fit the schema fails "
        "alone (counted, with its error).",
    )
    key_format: Optional[str] = _option(None, "the same for the key column.")
    schema_registry: Union[str, Mapping[str, object], None] = _option(
        None, "the registry's URL or client config dict (each executor makes its own client)."
    )
    value_schema: Optional[str] = _option(
        None,
        "schema file or inline JSON (Avro: derived from the DataFrame's columns when "
        "omitted); protobuf: ``module:Message``.",
    )
    key_schema: Optional[str] = _option(None, "the same for the key.")
    job_id: Optional[str] = _option(
        None,
        "``exactly_once``: a stable name for this write.  Pass the same name when you run "
        "the same write again (after a driver crash, say): the units it committed are "
        "then skipped, not written twice.  Default: a name unique to this call (task "
        "retries and speculative copies within the call are covered either way).",
    )
    progress_topic: Optional[str] = _option(
        None,
        "``exactly_once``: where each unit's transaction records that it committed "
        '(default ``"<topic>.cykafka-progress"``, or ``"cykafka-spark-progress"`` with '
        "a ``topic`` column; created compacted, with one partition, if missing).",
    )
    topics: Optional[Sequence[str]] = _option(
        None,
        "with a ``topic`` column: the topics it holds.  Their ``max.message.bytes`` is read "
        "once, on the driver, and every task's batches sized for the smallest (a broker "
        "refuses a record batch above a topic's limit whole).  Needed under "
        "``exactly_once``, whose producer cannot change inside a unit's transaction; "
        "other writes size a topic when a task first meets it.",
    )
    producer_config: Mapping[str, object] = field(
        default_factory=dict,
        metadata={
            "doc": "producer properties: librdkafka or Java names, underscores standing "
            "for dots (``linger_ms=20``), or Spark's Kafka sink options as they are "
            '(``**{"kafka.bootstrap.servers": ..., "kafka.acks": "all"}``).'
        },
    )

    # Made from the options above when the options are made; never given.
    #: the producer config as given (dots, ``kafka.`` prefix removed), bootstrap
    #: included, without ``transactional.id`` (each unit gets its own)
    config: dict[str, object] = field(init=False, repr=False, compare=False)
    #: that config resolved (presets, Java names, defaults); every task's producer is
    #: built from it (with its unit's ``transactional.id`` under ``exactly_once``)
    resolved: ResolvedConfig = field(init=False, repr=False, compare=False)
    #: whether each work unit is written in one transaction (``exactly_once``)
    transactional: bool = field(init=False, repr=False, compare=False)
    #: the caller's ``transactional.id``, which begins each unit's (:func:`transactional_id`)
    transactional_base: Optional[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from .. import presets as _presets
        from ..config import resolve

        if self.on_error not in ("raise", "report"):
            raise ValueError(f"on_error must be 'raise' or 'report', not {self.on_error!r}")
        if self.repartition not in (None, True, False):
            raise ValueError(f"repartition must be None, True or False, not {self.repartition!r}")
        w = self.writers
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise ValueError(f"writers must be a positive int or None, not {w!r}")
        for c in self.order_columns:
            if not isinstance(c, str):
                raise ValueError(f"order_by: {c!r} is not a column name")
        t = self.topics
        if t is not None and (
            isinstance(t, (str, bytes))
            or not isinstance(t, Sequence)
            or not t
            or not all(isinstance(n, str) and n for n in t)
        ):
            raise ValueError(f"topics must be a non-empty list of topic names, not {t!r}")
        if t is not None:
            object.__setattr__(self, "topics", tuple(t))
        presets = tuple(_presets.parse(self.preset)) if self.preset else ()
        config = producer_options(self.producer_config)
        servers = (
            self.bootstrap_servers
            or config.get("bootstrap.servers")
            or os.environ.get(BOOTSTRAP_ENV)
        )
        if not servers:
            raise ValueError(
                f"bootstrap_servers is required (or kafka.bootstrap.servers, or ${BOOTSTRAP_ENV})"
            )
        config["bootstrap.servers"] = servers
        base = config.pop("transactional.id", None)
        transactional = _presets.needs_transactional_id(list(presets))
        if self.job_id is not None:
            check_job_name(self.job_id)
        if not transactional and (self.job_id is not None or self.progress_topic is not None):
            raise ValueError("job_id= and progress_topic= apply to preset='exactly_once'")
        if self.value_format or self.key_format or self.schema_registry:
            from ..schema_registry.formats import registry_fields

            reg = registry_fields(
                self.value_format,
                self.key_format,
                self.schema_registry,
                self.value_schema,
                self.key_schema,
            )
            for name in ("schema_registry", "value_schema", "key_schema"):
                object.__setattr__(self, name, reg[name])
        # The resolution has no transactional.id: each unit's is laid on it (unit_config).
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "resolved", resolve(config, list(presets)))
        object.__setattr__(self, "transactional", transactional)
        object.__setattr__(self, "transactional_base", None if base is None else str(base))

    @property
    def order_columns(self) -> tuple[str, ...]:
        """``order_by`` as a tuple of column names."""
        o = self.order_by
        return (o,) if isinstance(o, str) else tuple(o or ())

    @property
    def partitioner(self) -> str:
        """librdkafka's partitioner, after presets and translation."""
        return str(self.resolved.effective("partitioner").value)

    def unit_config(self, job: Optional[str], unit: int) -> ResolvedConfig:
        """The config the producer of one Spark task runs with: the driver's resolution,
        with unit ``unit`` of ``job``'s transactional.id under ``exactly_once``."""
        if not self.transactional:
            return self.resolved
        assert job is not None  # make_plan names every exactly_once write
        txn_id = transactional_id(self.transactional_base, job, unit)
        return self.resolved.with_default("transactional.id", txn_id, "cykafka.spark")

    def sized_for(self, limits: Mapping[str, int]) -> WriteOptions:
        """These options with the producer's batches sized for ``limits`` (topic -> its
        ``max.message.bytes``; :meth:`ResolvedConfig.sized_for`): the same options when
        nothing changes."""
        resolved = self.resolved.sized_for(limits)
        if resolved is self.resolved:
            return self
        sized = copy.copy(self)
        object.__setattr__(sized, "resolved", resolved)
        return sized

    def guarantees(self, job: Optional[str]) -> Guarantees:
        """What the tasks' producers guarantee (their configs differ only in their
        transactional.id, so unit 0's stands for all); ValueError if librdkafka would
        refuse the config."""
        from ..explain import explain

        found = explain(self.unit_config(job, 0))
        if found.refused:
            raise ValueError(f"producer config refused: {found.summary()}")
        return found

    def to_json(self) -> dict[str, JSONValue]:
        """Plain data for the executors (unpickling it needs no cykafka)."""
        d: dict[str, JSONValue] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["producer_config"] = dict(self.producer_config)
        d["resolved"] = self.resolved.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, JSONValue]) -> WriteOptions:
        """The options :meth:`to_json` gave, as the driver checked and resolved them:
        set as they are, neither checked nor resolved again (a task's producer is the
        one the driver explained)."""
        resolved = d["resolved"]
        assert isinstance(resolved, dict)
        options = object.__new__(cls)
        for f in dataclasses.fields(cls):
            object.__setattr__(options, f.name, d[f.name])
        object.__setattr__(options, "resolved", ResolvedConfig.from_json(resolved))
        return options


def transactional_id(base: Optional[str], job: str, unit: int) -> str:
    """The ``transactional.id`` of work unit ``unit`` of the ``exactly_once`` write
    ``job``: the same for every attempt of the unit, so that each fences the ones
    before, and for no other unit or job.  ``base``: the caller's transactional.id,
    else ``cykafka-spark``."""
    return f"{base or 'cykafka-spark'}-{job}-{unit}"


def check_job_name(job: object) -> None:
    """A write's name (``job_id``, or a streaming ``query``) goes into transactional ids
    and progress keys ``<job>/<unit>``."""
    if not isinstance(job, str) or not job or "/" in job:
        raise ValueError(f"job_id/query must be a non-empty string without '/', not {job!r}")


def producer_options(options: Mapping[str, object]) -> dict[str, object]:
    """Producer config from the front doors' keyword options: ``linger_ms=20`` means
    ``linger.ms``; Spark's Kafka sink names (``kafka.bootstrap.servers``, any
    ``kafka.``-prefixed Kafka property) lose the prefix and then go through cykafka's
    config layer like any Java property name."""
    out: dict[str, object] = {}
    origin: dict[str, str] = {}
    for given, v in options.items():
        k = given if "." in given else given.replace("_", ".")
        if k.startswith("kafka."):
            k = k[len("kafka.") :]
            if k in _SPARK_REFUSED:
                raise ValueError(f"{given}: not supported ({_SPARK_REFUSED[k]})")
        if callable(v):
            raise TypeError(f"producer config {given!r}: callables cannot travel to executors")
        if k in out and str(out[k]) != str(v):
            raise ValueError(f"{origin[k]} and {given} both set {k} with different values")
        out[k], origin[k] = v, given
    return out


class OptionArguments:
    """How a front door takes the options: the first ``positional`` also by position,
    all but ``leave_out`` by keyword, any other keyword as producer config."""

    def __init__(self, positional: int, leave_out: tuple[str, ...] = ()) -> None:
        hints = typing.get_type_hints(WriteOptions)
        P = inspect.Parameter
        fields = [f for f in dataclasses.fields(WriteOptions) if f.init and f.name not in leave_out]
        *named, config = fields
        self.fields = fields
        self.params = [
            P(
                f.name,
                P.POSITIONAL_OR_KEYWORD if i < positional else P.KEYWORD_ONLY,
                default=f.default,
                annotation=hints[f.name],
            )
            for i, f in enumerate(named)
        ]
        self.config = P(config.name, P.VAR_KEYWORD, annotation=object)
        self.signature = inspect.Signature([*self.params, self.config])

    def document(self, fn: _F) -> _F:
        """``fn`` (written ``(lead, *args, own keywords, **given)``) with the options in
        its signature and its docstring's ``Args``, for ``help()`` and the API pages."""
        assert callable(fn)
        own = inspect.signature(fn).parameters.values()
        lead = [p for p in own if p.kind is p.POSITIONAL_OR_KEYWORD]
        keywords = [p for p in own if p.kind is p.KEYWORD_ONLY]
        params = [*lead, *self.params, *keywords, self.config]
        signature = inspect.Signature(
            params, return_annotation=inspect.signature(fn).return_annotation
        )
        vars(fn)["__signature__"] = signature  # what inspect.signature() reads
        fn.__doc__ = _with_args(inspect.cleandoc(fn.__doc__ or ""), self.fields, self.config.name)
        return fn

    def options(
        self, args: tuple[object, ...], given: Mapping[str, object], ready: Optional[WriteOptions]
    ) -> WriteOptions:
        """A call's options: ``ready`` (``options=``), else those its arguments give."""
        if ready is not None:
            if args or given:
                raise TypeError(
                    "options= takes a whole WriteOptions: give the other options in it, "
                    f"not beside it ({', '.join(given) or 'positional arguments'})"
                )
            if not isinstance(ready, WriteOptions):
                raise TypeError(f"options= takes a WriteOptions, not {type(ready).__name__}")
            return ready
        return WriteOptions(**self.signature.bind(*args, **given).arguments)


def _with_args(
    doc: str, fields: Sequence[dataclasses.Field[object]], keywords: Optional[str] = None
) -> str:
    """``doc`` with one ``Args`` line per option added at the end of its ``Args``;
    ``keywords``: the field a front door takes as ``**keywords``."""
    lines = doc.splitlines()
    at = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if at is None:
        lines += ["", "Args:"]
        at = len(lines) - 1
    end = at + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" ")):
        end += 1
    while lines[end - 1].strip() == "":
        end -= 1
    added = []
    for f in fields:
        name = f"**{f.name}" if f.name == keywords else f.name
        text = textwrap.fill(
            f"{name}: {f.metadata['doc']}",
            width=88,
            initial_indent="    ",
            subsequent_indent="        ",
            break_on_hyphens=False,
            break_long_words=False,
        )
        added += text.splitlines()
    return "\n".join([*lines[:end], *added, *lines[end:]])


# The class's own Args, from the same doc lines as the front doors'
WriteOptions.__doc__ = _with_args(
    inspect.cleandoc(WriteOptions.__doc__ or ""),
    [f for f in dataclasses.fields(WriteOptions) if f.init],
)
