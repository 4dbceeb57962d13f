"""One import, decided once: :class:`ImportJob`.

``cykafka import`` (and a Python caller) builds the job from its arguments with
:meth:`ImportJob.build`: the inputs are planned and checked, the producer configuration
is resolved with its provenance (the import's defaults, the presets, the transactional
id of an exactly-once import), what that configuration guarantees is explained, and the
reading options learn the largest record the producer may send.  The dry run, the plain
and the exactly-once import and the summary read the job; nothing below resolves again.

The decision that waits for the cluster, the topic's partition count (it bounds an
idempotent producer's queue, :func:`~.pipeline.bound_queue`), and the brokers of an
embedded broker, are added by :meth:`ImportJob.on_cluster`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..cluster.reach import CONNECT_TIMEOUT_S
from ..config import KEYS_PARTITION_COUNT, Properties, ResolvedConfig
from ..inputs import DEFAULT_OPTIONS, NO_FIELDS, Fields, ReadOptions, Source, plan_files
from .pipeline import bound_queue, resolve_import, with_max_record

if TYPE_CHECKING:
    from ..explain import Guarantees
    from ..presets import PresetSpec
    from .exactly_once_options import ExactlyOnce

__all__ = ["ImportJob"]


@dataclass(frozen=True)
class ImportJob:
    """Everything an import decided before it sends a row (frozen: build one with
    :meth:`build`)."""

    topic: str
    #: The inputs as given (globs, directories, ``-``): they name an exactly-once import.
    inputs: tuple[str, ...]
    #: Each input found, checked, with its format.
    plan: tuple[tuple[Source, str], ...]
    #: The caller's producer config (clients the import makes beside the producer, for
    #: the topic and the progress topic, take their connection settings from it).
    config: Properties
    #: The caller's presets, parsed (an exactly-once import adds ``exactly_once`` in
    #: :attr:`resolved`, not here: a rerun's placement is checked against these).
    presets: tuple[str, ...]
    #: The producer configuration, with where each setting came from.
    resolved: ResolvedConfig
    #: What :attr:`resolved` guarantees (:func:`cykafka.explain`): the summary's and
    #: the dry run's sentence, and whether librdkafka would refuse the configuration.
    explanation: Guarantees
    fields: Fields = NO_FIELDS
    #: How inputs are read; records longer than the producer's message.max.bytes skipped.
    options: ReadOptions = DEFAULT_OPTIONS
    static_headers: tuple[tuple[str, bytes], ...] = ()
    #: Every row to this partition (None: by key or the partitioner).
    partition: Optional[int] = None
    #: At most this many rows per second.
    rate: Optional[float] = None
    exactly_once: Optional[ExactlyOnce] = None
    #: An exactly-once import's producers' id (None for a plain import).
    transactional_id: Optional[str] = None
    #: Start after this many rows of the inputs (a stopped plain import's summary says).
    skip_rows: int = 0
    #: Write rows not delivered here, as JSON Lines.
    dead_letter: Optional[str] = None
    #: The topic's partition count, once known (:meth:`on_cluster`).
    topic_partitions: Optional[int] = None
    #: Create the topic with this many partitions when it is missing (an embedded
    #: broker's topic: 3 unless given); None: a missing topic is refused.
    partitions: Optional[int] = None
    #: librdkafka's refusal of :attr:`resolved` in its own words, None when it builds a
    #: producer from it: asked once, before anything starts (:attr:`explanation` says
    #: the same, and the import's producer is then made from the same resolution).
    refusal: Optional[str] = None
    #: Seconds to wait for the cluster's first answer before the import fails with
    #: :class:`~cykafka.cluster.reach.ClusterUnreachable`.
    connect_timeout: float = CONNECT_TIMEOUT_S

    @classmethod
    def build(
        cls,
        inputs: Sequence[str],
        topic: str,
        config: Properties,
        *,
        preset: PresetSpec = "ordered",
        fmt: Optional[str] = None,
        fields: Fields = NO_FIELDS,
        options: ReadOptions = DEFAULT_OPTIONS,
        static_headers: Sequence[tuple[str, bytes]] = (),
        partition: Optional[int] = None,
        rate: Optional[float] = None,
        exactly_once: Optional[ExactlyOnce] = None,
        skip_rows: int = 0,
        dead_letter: Optional[str] = None,
        topic_partitions: Optional[int] = None,
        partitions: Optional[int] = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> ImportJob:
        """Check and decide an import of ``inputs`` into ``topic``.

        ``config`` is the producer config (with ``bootstrap.servers``, or given later by
        :meth:`on_cluster`); ``preset`` as for :class:`cykafka.Producer`.  ``fmt`` forces
        a format for every input (else each file's extension decides); ``options`` says
        how to read them.  ``exactly_once``: an :class:`~cykafka.importer.ExactlyOnce`:
        send in transactions that also commit the input position, resuming a run that
        stopped.  ``skip_rows``: start after this many rows of the inputs, as a stopped
        import's summary says (:attr:`~cykafka.importer.ImportResult.settled_rows`).
        ``partitions``: create a missing topic with that many partitions.
        ``connect_timeout``: seconds to wait for the cluster's first answer.

        Raises :class:`~cykafka.importer.ImportInputError` for bad input (a missing file,
        an unknown format or field; an input an exactly-once import cannot resume), and
        ValueError for presets or Java names the resolver refuses (or a preset's
        required key missing), each naming the culprit, before anything is sent (a
        value librdkafka refuses is in :attr:`refusal` and ``explanation.refused``, and
        fails the producer).
        """
        from ..explain import explain
        from ..explain.rules import librdkafka_refusal
        from ..presets import parse

        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout must be > 0 seconds, not {connect_timeout:g}")
        inputs = tuple(inputs)
        plan = tuple(plan_files(inputs, fmt, fields, options))
        presets = tuple(parse(preset))
        key = None
        if exactly_once is not None:
            from .exactly_once_options import check_resumable, derive_transactional_id

            check_resumable(plan, exactly_once)  # before a topic or a record is made
            key = exactly_once.transactional_id or derive_transactional_id(topic, inputs)
        resolved = resolve_import(config, presets, topic_partitions, key).require()
        # librdkafka asked once, with every property but the brokers: the explanation
        # reads the same verdict.
        refusal = librdkafka_refusal(resolved, whole=True)
        return cls(
            topic=topic,
            inputs=inputs,
            plan=plan,
            config=dict(config),
            presets=presets,
            resolved=resolved,
            explanation=explain(resolved, refusal=refusal),
            fields=fields,
            options=with_max_record(options, resolved.librdkafka()),
            static_headers=tuple(static_headers),
            partition=partition,
            rate=rate,
            exactly_once=exactly_once,
            transactional_id=key,
            skip_rows=skip_rows,
            dead_letter=dead_letter,
            topic_partitions=topic_partitions,
            partitions=partitions,
            refusal=refusal,
            connect_timeout=connect_timeout,
        )

    def on_cluster(
        self,
        bootstrap_servers: str,
        partitions: Optional[int],
        max_message_bytes: Optional[int] = None,
    ) -> ImportJob:
        """This job on the cluster found: its brokers (when the config named none: an
        embedded broker's), the topic's partition count, which bounds an idempotent
        producer's queue (:func:`~.pipeline.bound_queue`), and its max.message.bytes,
        which caps the batches (:meth:`~cykafka.config.ResolvedConfig.sized_for`)."""
        resolved = self.resolved
        explanation = self.explanation
        if max_message_bytes is not None:
            sized = resolved.sized_for({self.topic: max_message_bytes})
            if sized is not resolved:
                from ..explain import explain

                resolved = sized
                explanation = explain(resolved, refusal=self.refusal)
        config = self.config
        if resolved.explicit("bootstrap.servers") is None:
            resolved = resolved.with_default(
                "bootstrap.servers", bootstrap_servers, "cykafka import (embedded broker)"
            )
            config = {**config, "bootstrap.servers": bootstrap_servers}
        if partitions and resolved.idempotent and resolved.explicit(KEYS_PARTITION_COUNT) is None:
            # Every producer of this import (a replaced one, each exactly-once attempt)
            # places keys over the count the import started with, not the one it first
            # sees: partitions added mid-run never split a key.
            resolved = resolved.with_default(
                KEYS_PARTITION_COUNT, str(partitions), "cykafka import (the topic's partitions)"
            )
        return dataclasses.replace(
            self,
            config=config,
            resolved=bound_queue(resolved, partitions),
            explanation=explanation,
            topic_partitions=partitions,
        )

    @property
    def guarantees(self) -> str:
        """What the import's producers guarantee, in one sentence."""
        return self.explanation.summary()

    @property
    def bootstrap_servers(self) -> Optional[str]:
        """The brokers the job writes to (None: none named yet, :meth:`on_cluster`)."""
        found = self.resolved.explicit("bootstrap.servers")
        return found[1].value if found is not None else None

    @property
    def fmt(self) -> str:
        """The inputs' formats, ``+``-joined in order of appearance (the summary's)."""
        return "+".join(dict.fromkeys(f for _, f in self.plan))
