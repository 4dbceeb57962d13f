"""The one place the effective producer configuration is worked out.

``resolve(config, preset=...)`` layers, from the bottom up: librdkafka's defaults (and its
automatic adjustments for idempotence), cykafka's defaults, the presets, and the user's
config (Java names translated).  The result is immutable and records where every value
came from, so the Producer, ``explain``, the importer and ``write_kafka`` all see the
same configuration and ``explain`` can say why each value is what it is.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Optional, Union

from .. import presets as _presets
from ..presets import INT32_MAX
from .java import ConfigWarning, Note, translate_detailed
from .properties import CYKAFKA_KEYS, Properties, canonical
from .secrets import mask_secrets

if TYPE_CHECKING:
    from ..presets import PresetSpec
    from .types import JSONValue

__all__ = [
    "DEFAULT_MAX_BLOCK_MS",
    "INT32_MAX",
    "LIBRDKAFKA_DEFAULTS",
    "ResolvedConfig",
    "Setting",
    "Source",
    "resolve",
    "same_value",
]

#: Java's producer default for max.block.ms (a cykafka key: librdkafka has none).
DEFAULT_MAX_BLOCK_MS = 60000

#: librdkafka 2.16 defaults that matter for guarantees, by canonical property name
#: (CONFIGURATION.md, checked against rd_kafka_conf_dump() of the bundled runtime).
LIBRDKAFKA_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "request.required.acks": "-1",
        "enable.idempotence": "false",
        "enable.gapless.guarantee": "false",
        "max.in.flight.requests.per.connection": "1000000",
        "message.send.max.retries": str(INT32_MAX),
        "message.timeout.ms": "300000",
        "queue.buffering.max.ms": "5",
        "request.timeout.ms": "30000",
        "retry.backoff.ms": "100",
        "retry.backoff.max.ms": "1000",
        "batch.num.messages": "10000",
        "batch.size": "1000000",
        "message.max.bytes": "1000000",
        "queue.buffering.max.kbytes": "1048576",
        "partitioner": "consistent_random",
        "sticky.partitioning.linger.ms": "10",
        "transaction.timeout.ms": "60000",
        "queuing.strategy": "fifo",
        "statistics.interval.ms": "0",
    }
)

# CONFIGURATION.md, enable.idempotence: "The following configuration properties are
# adjusted automatically (if not modified by the user) when idempotence is enabled:
# max.in.flight.requests.per.connection=5, retries=INT32_MAX, acks=all".
_IDEMPOTENCE_ADJUSTS: Mapping[str, str] = MappingProxyType(
    {
        "max.in.flight.requests.per.connection": "5",
        "message.send.max.retries": str(INT32_MAX),
        "request.required.acks": "-1",
    }
)

#: user: set by the caller under its librdkafka name; translated: set by the caller under
#: a Java name (``origin`` names it); preset: a preset's (``origin``); default: cykafka's
#: or librdkafka's own (``origin`` says which).
Source = Literal["user", "translated", "preset", "default"]


@dataclass(frozen=True)
class Setting:
    """One property's effective value and where it came from."""

    value: str
    source: Source
    #: The caller's key (translated), the preset name (preset), "cykafka" or
    #: "librdkafka" (default), or the key itself (user).
    origin: str

    def describe(self) -> str:
        if self.source == "user":
            return "config"
        if self.source == "translated":
            return f"from {self.origin}"
        if self.source == "preset":
            return f"preset {self.origin}"
        return f"{self.origin} default"


@dataclass(frozen=True)
class ResolvedConfig:
    """The effective configuration: what librdkafka gets, plus provenance."""

    #: Explicit properties, by the name handed to librdkafka.
    settings: Mapping[str, Setting]
    presets: tuple[str, ...]
    #: What translation did to the caller's Java names (``warn`` ones are behaviour changes).
    notes: tuple[Note, ...]
    max_block_ms: float

    def to_json(self) -> dict[str, JSONValue]:
        """Plain JSON, for a process that must not resolve again (Spark's executors
        build their producers from the driver's resolution): :meth:`from_json`."""
        return {
            "settings": {k: [s.value, s.source, s.origin] for k, s in self.settings.items()},
            "presets": list(self.presets),
            "notes": [[n.key, n.text, n.warn] for n in self.notes],
            "max_block_ms": self.max_block_ms,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, JSONValue]) -> ResolvedConfig:
        sources = {"user", "translated", "preset", "default"}
        settings = {}
        for k, (value, source, origin) in dict(d["settings"]).items():
            if source not in sources:
                raise ValueError(f"resolved config: {k!r} has no source {source!r}")
            settings[str(k)] = Setting(str(value), source, str(origin))
        return cls(
            settings=MappingProxyType(settings),
            presets=tuple(str(p) for p in d["presets"]),
            notes=tuple(Note(str(k), str(t), bool(w)) for k, t, w in d["notes"]),
            max_block_ms=float(d["max_block_ms"]),
        )

    def with_default(self, key: str, value: str, origin: str) -> ResolvedConfig:
        """This config with ``key`` set to ``value`` as ``origin``'s default, unless a
        setting (any alias) already decides it: a front door's decision that waits for
        something only it learns later (a topic's partition count, an embedded broker's
        address), laid under what was resolved without resolving again."""
        if self.explicit(key) is not None:
            return self
        settings = {**self.settings, key: Setting(value, "default", origin)}
        return dataclasses.replace(self, settings=MappingProxyType(settings))

    def sized_for(self, limits: Mapping[str, int]) -> ResolvedConfig:
        """This config with ``batch.size`` lowered to the smallest of ``limits`` (topic ->
        the largest record batch its brokers accept, its ``max.message.bytes``) when it is
        above it.  The broker refuses a whole batch above that limit
        (MESSAGE_TOO_LARGE) and librdkafka 2.16 fails every message in it, where the Java
        producer splits the batch and sends the halves (measured on Apache Kafka 4.4,
        with and without idempotence); a batch never above the limit only fails a
        message too large alone.  librdkafka's ``batch.size`` counts the record batch
        with its framing, as the broker does (measured: batch.size equal to the limit
        delivers every message that fits)."""
        if not limits:
            return self
        topic, limit = min(limits.items(), key=lambda item: (item[1], item[0]))
        if int(self.effective("batch.size").value) <= limit:
            return self
        key = self.explicit("batch.size")
        settings = {k: s for k, s in self.settings.items() if key is None or k != key[0]}
        settings["batch.size"] = Setting(str(limit), "default", sizing_origin(topic, limit))
        return dataclasses.replace(self, settings=MappingProxyType(settings))

    def without(self, name: str) -> ResolvedConfig:
        """This config without the property ``name`` (any alias)."""
        canon = canonical(name)
        settings = {k: s for k, s in self.settings.items() if canonical(k) != canon}
        return dataclasses.replace(self, settings=MappingProxyType(settings))

    def librdkafka(self) -> dict[str, str]:
        """The properties for ``rd_kafka_conf_set`` (cykafka's own keys removed)."""
        return {k: s.value for k, s in self.settings.items() if k not in CYKAFKA_KEYS}

    def masked(self) -> dict[str, str]:
        """:meth:`librdkafka` safe to print."""
        return mask_secrets(self.librdkafka())

    def explicit(self, name: str) -> Optional[tuple[str, Setting]]:
        """(key as written, Setting) of the explicit property ``name`` (any alias)."""
        canon = canonical(name)
        for key, s in self.settings.items():
            if canonical(key) == canon:
                return key, s
        return None

    @property
    def transactional(self) -> bool:
        found = self.explicit("transactional.id")
        return found is not None and bool(found[1].value.strip())

    @property
    def idempotent(self) -> bool:
        """Whether librdkafka runs the idempotent producer (transactional.id implies it)."""
        found = self.explicit("enable.idempotence")
        if found is not None:
            return found[1].value.strip().lower() == "true"
        return self.transactional

    def effective(self, name: str) -> Setting:
        """``name``'s value in force: explicit, or librdkafka's (adjusted) default."""
        found = self.explicit(name)
        if found is not None:
            return found[1]
        canon = canonical(name)
        if canon == "enable.idempotence" and self.transactional:
            return Setting("true", "default", "librdkafka (implied by transactional.id)")
        if self.idempotent and canon in _IDEMPOTENCE_ADJUSTS:
            return Setting(
                _IDEMPOTENCE_ADJUSTS[canon], "default", "librdkafka (adjusted for idempotence)"
            )
        if canon == "message.timeout.ms" and self.transactional:
            # "The message timeout is automatically adjusted to transaction.timeout.ms if
            # transactional.id is configured."
            return Setting(
                self.effective("transaction.timeout.ms").value,
                "default",
                "librdkafka (= transaction.timeout.ms)",
            )
        if canon not in LIBRDKAFKA_DEFAULTS:
            raise KeyError(f"{name}: not set and no librdkafka default recorded for it")
        return Setting(LIBRDKAFKA_DEFAULTS[canon], "default", "librdkafka")

    def missing_required(self) -> list[tuple[str, str]]:
        """(preset, key) for each key a chosen preset needs and the config lacks (a
        preset cannot choose a ``transactional.id``: it must be the caller's)."""
        missing = []
        for name in self.presets:
            for key in _presets.describe(name).requires:
                found = self.explicit(key)
                if found is None or not found[1].value.strip():
                    missing.append((name, key))
        return missing

    def require(self) -> ResolvedConfig:
        """This config, if every chosen preset's required keys are there; else ValueError
        naming the preset and the key (``explain`` reports the same as a warning)."""
        for name, key in self.missing_required():
            raise ValueError(
                f"preset {name!r} needs {key} in your config (e.g. "
                f"{{'{key}': 'orders-writer-1'}}): a preset cannot choose it, it must be "
                "stable across restarts and unique per producer instance"
            )
        return self

    def warn(self, stacklevel: int = 2) -> None:
        """Raise a :class:`ConfigWarning` for each behaviour change made in translation."""
        for note in self.notes:
            if note.warn:
                warnings.warn(note.text, ConfigWarning, stacklevel=stacklevel + 1)


def sizing_origin(topic: str, limit: int) -> str:
    """The origin of a ``batch.size`` lowered for ``topic`` (:meth:`ResolvedConfig.sized_for`)."""
    return f"cykafka, for topic {topic} (its max.message.bytes is {limit})"


_SIZING = re.compile(
    r"cykafka, for topic (?P<topic>\S+) \(its max\.message\.bytes is (?P<limit>\d+)\)"
)


def sized_topic(resolved: ResolvedConfig) -> Optional[tuple[str, int]]:
    """(topic, its max.message.bytes) when :meth:`ResolvedConfig.sized_for` lowered
    ``batch.size`` for it, else None."""
    s = resolved.settings.get("batch.size")
    found = _SIZING.fullmatch(s.origin) if s is not None and s.source == "default" else None
    return (found["topic"], int(found["limit"])) if found is not None else None


def batch_sizing(resolved: ResolvedConfig) -> Optional[str]:
    """What :meth:`ResolvedConfig.sized_for` did, in one line (None: nothing)."""
    found = sized_topic(resolved)
    if found is None:
        return None
    topic, limit = found
    return (
        f"batch.size lowered to {resolved.settings['batch.size'].value} for topic {topic}: "
        f"its max.message.bytes is {limit}"
    )


_ACKS_ALL = {"all", "-1"}


def same_value(a: str, b: str, canon: str) -> bool:
    """Equal as librdkafka would read them (acks all == -1, bools case-insensitive)."""
    a, b = a.strip().lower(), b.strip().lower()
    if canon == "request.required.acks" and a in _ACKS_ALL and b in _ACKS_ALL:
        return True
    return a == b


def number_property(value: Union[str, float], key: str) -> float:
    """A numeric property cykafka reads itself, as milliseconds; bad values name it."""
    try:
        ms = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"config property {key!r} must be a number of milliseconds, not {value!r}"
        ) from None
    if not ms >= 0:  # also NaN
        raise ValueError(f"config property {key!r} must be >= 0 milliseconds, not {value!r}")
    return ms


def resolve(
    config: Optional[Properties] = None,
    preset: PresetSpec = None,
    *,
    defaults: Optional[Properties] = None,
    defaults_origin: str = "cykafka",
) -> ResolvedConfig:
    """Resolve ``config`` (librdkafka or Java names) with ``preset`` (a name, "a+b", a
    list, or None) into the configuration a Producer runs with.  ``defaults`` are a
    front door's own defaults (e.g. the importer's), laid under the presets and recorded
    as ``default`` from ``defaults_origin``.

    Raises ValueError for unknown or incompatible presets, untranslatable Java keys and
    two spellings of one property with different values.  A preset's required keys are
    checked by :meth:`ResolvedConfig.require` (the Producer calls it; ``explain``
    reports them as a warning instead).
    """
    translation = translate_detailed(config or {})
    settings: dict[str, Setting] = {}
    for key, value in translation.config.items():
        src = translation.origin[key]
        settings[key] = (
            Setting(value, "user", key) if src == key else Setting(value, "translated", src)
        )
    chosen = _presets.parse(preset)
    user_canon = {canonical(k) for k in settings}
    for name in chosen:
        for key, value in translate_detailed(_presets.describe(name).settings).config.items():
            canon = canonical(key)
            if canon in user_canon:
                continue
            owner = next((k for k in settings if canonical(k) == canon), None)
            if owner is not None:
                if not same_value(settings[owner].value, value, canon):
                    raise ValueError(
                        f"presets {settings[owner].origin!r} and {name!r} are incompatible: "
                        f"{settings[owner].origin} sets {owner}={settings[owner].value}, "
                        f"{name} sets {key}={value}"
                    )
                continue
            settings[key] = Setting(value, "preset", name)
    for key, value in translate_detailed(defaults or {}).config.items():
        if not any(canonical(k) == canonical(key) for k in settings):
            settings[key] = Setting(value, "default", defaults_origin)
    resolved = ResolvedConfig(MappingProxyType(settings), tuple(chosen), (), DEFAULT_MAX_BLOCK_MS)
    # An idempotent producer sends nothing until it has a producer id, which librdkafka
    # requests on a 500 ms timer and only from an already connected broker.  Connecting
    # to every broker at once, with the metadata requests of the event thread
    # (events.pxi), gets it in 0.02 s instead of 0.05 s (sparse) or 0.5 s (neither).
    # Short-lived producers (an import, a Spark task) pay it each time.
    if resolved.idempotent and "enable.sparse.connections" not in settings:
        settings["enable.sparse.connections"] = Setting("false", "default", "cykafka")
    max_block = settings.get("max.block.ms")
    max_block_ms = (
        number_property(max_block.value, "max.block.ms") if max_block else DEFAULT_MAX_BLOCK_MS
    )
    return ResolvedConfig(
        MappingProxyType(settings), tuple(chosen), tuple(translation.notes), max_block_ms
    )
