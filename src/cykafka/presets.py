"""Named, documented producer config fragments ("presets").

A preset is a small frozen set of librdkafka properties that buys one delivery
guarantee.  This module is the data and its lookup only: ``cykafka.config.resolve(config,
"ordered+java_compatible")`` is the one place presets are laid under a config (explicit
keys win; ``cykafka.explain`` warns when an override breaks the preset's guarantee) and
their required keys checked (``ResolvedConfig.require()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Union

__all__ = [
    "INT32_MAX",
    "Preset",
    "PresetSpec",
    "describe",
    "get",
    "names",
    "needs_transactional_id",
    "parse",
]

#: librdkafka's maximum (and 2.x default) for message.send.max.retries.
INT32_MAX = 2147483647

#: A preset name, several joined with "+" or ",", a sequence of names, or None.
PresetSpec = Union[str, Sequence[str], None]


@dataclass(frozen=True)
class Preset:
    """One preset: what it sets and what it promises."""

    name: str
    summary: str
    settings: Mapping[str, str]
    guarantees: str
    #: Keys the user must supply (a preset cannot invent them, e.g. transactional.id).
    requires: tuple[str, ...] = field(default=())


_IDEMPOTENT = {
    # librdkafka: "When set to `true`, the producer will ensure that messages are
    # successfully produced exactly once and in the original produce order."
    "enable.idempotence": "true",
    # The values idempotence would auto-adjust to; written out so the preset is explicit
    # and so explain() can flag an override (librdkafka refuses acks!=all, in-flight > 5
    # and retries=0 with idempotence).
    "acks": "all",
    "max.in.flight.requests.per.connection": "5",
    # Retries are bounded by message.timeout.ms (delivery.timeout.ms, default 300000), not
    # by count: "Delivery error occurs when either the retry count or the message timeout
    # are exceeded."
    "message.send.max.retries": str(INT32_MAX),
}

_PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="ordered",
            summary="Per-partition order, no duplicates from producer retries (idempotent).",
            settings=MappingProxyType(dict(_IDEMPOTENT)),
            guarantees=(
                "Messages to one partition are written in produce() order and at most once "
                "per produce() call, despite retries with 5 requests in flight. Retries "
                "continue until message.timeout.ms (default 300000 ms). A batch failing with "
                "a permanent error is skipped (its messages get a delivery error) and "
                "later messages still go out - a gap, not a fatal error; use strict_ordered "
                "to stop instead. Note: on librdkafka max.in.flight=1 WITHOUT idempotence "
                "does not keep order (measured: reorders under retriable errors)."
            ),
        ),
        Preset(
            name="strict_ordered",
            summary="As 'ordered', but a gap in the sequence is a fatal error, not a skip.",
            settings=MappingProxyType({**_IDEMPOTENT, "enable.gapless.guarantee": "true"}),
            guarantees=(
                'As ordered, plus gapless (EXPERIMENTAL in librdkafka): "any error that '
                "could result in a gap in the produced message series when a batch of "
                "messages fails, will raise a fatal error (ERR__GAPLESS_GUARANTEE) and stop "
                'the producer". The series may be cut short but never has holes - except '
                'that "Messages failing due to message.timeout.ms are not covered".'
            ),
        ),
        Preset(
            name="exactly_once",
            summary="Transactional producer; you must supply transactional.id.",
            settings=MappingProxyType(dict(_IDEMPOTENT)),
            requires=("transactional.id",),
            guarantees=(
                "Idempotent ordering plus atomic multi-partition writes via transactions; "
                "read_committed consumers see each committed message once and never see "
                "aborted ones. Needs a transactional.id that is stable across restarts and "
                "unique per producer instance (it fences off zombies). librdkafka lowers "
                "message.timeout.ms to transaction.timeout.ms (default 60000) and refuses "
                "a larger explicit value."
            ),
        ),
        Preset(
            name="throughput",
            summary="Big compressed batches, leader-only acks: fast, weaker guarantees.",
            settings=MappingProxyType(
                {
                    "acks": "1",
                    # Tens of ms of linger fills batches (librdkafka default: 5 ms).
                    "linger.ms": "20",
                    "batch.num.messages": "100000",
                    # librdkafka's default and cap-by-message.max.bytes (1000000).
                    "batch.size": "1000000",
                    "compression.type": "lz4",
                }
            ),
            guarantees=(
                "No ordering guarantee: order may change on retry, duplicates possible "
                "(retries without idempotence). acks=1: a message acknowledged by the "
                "leader is lost if the leader dies before followers copy it."
            ),
        ),
        Preset(
            name="at_most_once",
            summary="Fire and forget: acks=0, no retries; each message written at most once.",
            settings=MappingProxyType({"acks": "0", "message.send.max.retries": "0"}),
            guarantees=(
                'Never duplicates; messages may be lost silently (acks=0: "Broker does not '
                'send any response/ack to client", so a delivery report only means the '
                "request was sent). No ordering guarantee is made."
            ),
        ),
        Preset(
            name="java_compatible",
            summary="Java client's partitioning for keyed messages (murmur2_random); NULL keys differ.",
            settings=MappingProxyType({"partitioner": "murmur2_random"}),
            guarantees=(
                "Keyed messages go to the partition the Java producer's default partitioner "
                'would pick (librdkafka: murmur2_random is "functionally equivalent to the '
                'default partitioner in the Java Producer"). NULL keys do NOT follow the '
                "Java client's KIP-794 uniform sticky partitioner: librdkafka picks a random "
                "available partition and keeps it for sticky.partitioning.linger.ms (default "
                "10 ms), then picks again at random. Combine with any other preset."
            ),
        ),
    )
}


def names() -> list[str]:
    """All preset names, sorted."""
    return sorted(_PRESETS)


def _lookup(name: str) -> Preset:
    try:
        return _PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(names())}") from None


def describe(name: str) -> Preset:
    """The Preset (name, summary, settings, guarantees) called ``name``."""
    return _lookup(name.strip())


def needs_transactional_id(preset: PresetSpec) -> bool:
    """Whether a chosen preset requires a ``transactional.id`` (``exactly_once``): a
    front door that writes transactionally then supplies the id itself."""
    return any("transactional.id" in describe(name).requires for name in parse(preset))


def get(name: str) -> dict[str, str]:
    """A fresh, mutable copy of the preset's settings."""
    return dict(describe(name).settings)


def parse(preset: PresetSpec) -> list[str]:
    """Normalise a preset spec to a list of known names ("a+b", "a,b", [..], None)."""
    if preset is None:
        return []
    if not isinstance(preset, (str, list, tuple)):
        raise TypeError(
            f"preset must be a preset name (str, e.g. 'ordered' or 'ordered+java_compatible') "
            f"or a list of names, not {type(preset).__name__} ({preset!r:.40})"
        )
    parts: list[str] = []
    for item in [preset] if isinstance(preset, str) else list(preset):
        if not isinstance(item, str):
            raise TypeError(f"preset names must be str, got {type(item).__name__}")
        parts.extend(p.strip() for p in item.replace(",", "+").split("+") if p.strip())
    seen: list[str] = []
    for p in parts:
        _lookup(p)  # raise early, naming the bad one
        if p not in seen:
            seen.append(p)
    return seen
