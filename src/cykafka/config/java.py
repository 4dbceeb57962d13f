"""Java producer property names and values -> librdkafka's, with a note for each change.

A Java config either translates (same meaning, possibly another name or unit), is mapped
to the nearest value librdkafka accepts with a warning saying what changed, or is refused
with a ValueError in the user's own (Java) terms.  Nothing Java-only reaches librdkafka,
whose errors would name its own properties instead of the user's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .java_names import (
    JAVA_ONLY_KEYS,
    JAVA_PARTITIONERS,
    JAVA_PRODUCER_KEYS,
    NO_EQUIVALENT,
    NO_EQUIVALENT_PREFIXES,
    PARTITIONERS,
    RENAMES,
    SAME_NAME_NOTES,
    SAME_NAME_WARN,
    SERIALIZER_REASON,
)
from .properties import (
    CYKAFKA_KEYS,
    LIBRDKAFKA_PROPERTIES,
    RANGES,
    Properties,
    canonical,
    normalise_value,
    parse_bool,
    parse_int,
)
from .secrets import jaas_module, jaas_options, shown

__all__ = [
    "JAVA_ONLY_KEYS",
    "JAVA_PRODUCER_KEYS",
    "Note",
    "Translation",
    "translate",
    "translate_detailed",
]


@dataclass(frozen=True)
class Note:
    """What translation did to one property.  ``warn``: the behaviour differs from what
    the Java client would do with the same setting (a value mapped, dropped or read
    differently); the Producer raises these as :class:`ConfigWarning`."""

    key: str
    text: str
    warn: bool = False


class ConfigWarning(UserWarning):
    """A setting means something different on librdkafka than in the user's config."""


def _translate_jaas(value: str) -> tuple[dict[str, str], str]:
    """sasl.jaas.config -> librdkafka SASL properties; never echoes the value."""
    module = jaas_module(value).rsplit(".", 1)[-1]
    opts = dict(jaas_options(value))
    if module in ("PlainLoginModule", "ScramLoginModule"):
        if "username" not in opts or "password" not in opts:
            raise ValueError(f"sasl.jaas.config ({module}) needs username and password options")
        return (
            {"sasl.username": opts["username"], "sasl.password": opts["password"]},
            f"sasl.jaas.config ({module}) -> sasl.username + sasl.password; keep "
            "sasl.mechanism (PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512) as in the Java config.",
        )
    if module == "Krb5LoginModule":
        out = {}
        if "principal" in opts:
            out["sasl.kerberos.principal"] = opts["principal"]
        if "keyTab" in opts:
            out["sasl.kerberos.keytab"] = opts["keyTab"]
        return (
            out,
            "sasl.jaas.config (Krb5LoginModule) -> sasl.kerberos.principal/keytab; librdkafka "
            "obtains tickets by running sasl.kerberos.kinit.cmd.",
        )
    raise ValueError(
        f"sasl.jaas.config with login module {module or '(unparsed)'!s} has no librdkafka "
        "equivalent; set the sasl.* properties directly (for OAUTHBEARER see "
        "sasl.oauthbearer.method=oidc and sasl.oauthbearer.*)"
    )


def _java_only(key: str, value: str) -> tuple[dict[str, str], str | None]:
    """Translate one Java-only property -> (librdkafka settings, note); raise if impossible."""
    if key == "buffer.memory":
        nbytes = parse_int(key, value)
        if nbytes < 1:
            raise ValueError(f"buffer.memory must be positive, got {nbytes}")
        kib = max(1, math.ceil(nbytes / 1024))
        return (
            {"queue.buffering.max.kbytes": str(kib)},
            f"buffer.memory={nbytes} bytes -> queue.buffering.max.kbytes={kib} (KiB, rounded "
            "up). librdkafka also caps the queue at queue.buffering.max.messages "
            "(default 100000), which Java does not have.",
        )
    if key == "max.block.ms":
        ms = parse_int(key, value)
        if ms < 0:
            raise ValueError(f"max.block.ms must be >= 0, got {ms}")
        return (
            {"max.block.ms": str(ms)},
            f"max.block.ms={ms} is not a librdkafka property; it stays as a cykafka key: "
            "Producer.produce() waits at most this long for queue space (librdkafka itself "
            "fails with QUEUE_FULL immediately) and strips the key before librdkafka sees it.",
        )
    if key == "max.request.size":
        return (
            {"message.max.bytes": str(parse_int(key, value))},
            'max.request.size -> message.max.bytes (librdkafka: "Maximum Kafka protocol '
            "request message size\"; the broker still enforces the topic's max.message.bytes).",
        )
    if key == "partitioner.class":
        cls = value.strip()
        short = cls.rsplit(".", 1)[-1]
        if short in PARTITIONERS and (cls == short or cls.startswith(JAVA_PARTITIONERS)):
            name, note = PARTITIONERS[short]
            return {"partitioner": name}, note
        raise ValueError(
            f"partitioner.class {cls!r} has no librdkafka equivalent: a Java class cannot "
            "run here; choose a librdkafka partitioner (partitioner=murmur2_random, "
            "consistent_random, random, ...) or pass partition= to produce()"
        )
    if key == "partitioner.ignore.keys":
        if parse_bool(key, value) == "true":
            return (
                {"partitioner": "random"},
                "partitioner.ignore.keys=true -> partitioner=random (keys ignored).",
            )
        return {}, "partitioner.ignore.keys=false is the default behaviour; dropped."
    if key in ("key.serializer", "value.serializer"):
        raise ValueError(SERIALIZER_REASON.format(key=key))
    if key in ("receive.buffer.bytes", "send.buffer.bytes"):
        n = parse_int(key, value)
        target = f"socket.{key}"
        # Java: -1 = OS default; librdkafka: 0 = "system default".
        return {target: str(max(n, 0))}, f"{key}={n} -> {target}={max(n, 0)} (0 = OS default)."
    if key == "sasl.jaas.config":
        return _translate_jaas(value)
    if key == "ssl.keystore.type":
        if value.strip().upper() == "PKCS12":
            return (
                {},
                "ssl.keystore.type=PKCS12 dropped: librdkafka's ssl.keystore.location is PKCS#12.",
            )
        raise ValueError(
            f"ssl.keystore.type={value.strip()} has no librdkafka equivalent: librdkafka "
            "reads PKCS#12 keystores (ssl.keystore.location) or PEM (ssl.key.location / "
            "ssl.certificate.location); convert the keystore"
        )
    reason = NO_EQUIVALENT.get(key, "")
    raise ValueError(
        f"{key} is a Java client property with no librdkafka equivalent"
        + (f": {reason}" if reason else "")
    )


def _is_java_only(key: str) -> bool:
    return key in JAVA_ONLY_KEYS or (
        key not in LIBRDKAFKA_PROPERTIES and key.startswith(NO_EQUIVALENT_PREFIXES)
    )


# Java names librdkafka also accepts, but whose meaning or default differs.
@dataclass
class Translation:
    """librdkafka settings (``config``), the input key behind each (``origin``), notes."""

    config: dict[str, str] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)

    def note(self, key: str, text: str, warn: bool = False) -> None:
        self.notes.append(Note(key, text, warn))

    def put(self, src: str, key: str, value: str) -> None:
        """Set ``key`` (from input key ``src``); two spellings of one property must agree."""
        canon = canonical(key)
        prev_key = next((k for k in self.config if canonical(k) == canon), None)
        if prev_key is not None:
            if self.config[prev_key] != value:
                raise ValueError(
                    f"{src} and {self.origin[prev_key]} both set {canon} with different "
                    f"values ({shown(key, value)} vs {shown(key, self.config[prev_key])}); "
                    "keep one"
                )
            return
        self.config[key] = value
        self.origin[key] = src


def _out_of_range(t: Translation, src: str, key: str, value: str) -> tuple[str, str] | None:
    """Map a value librdkafka would refuse (outside its range) to the nearest one it
    takes, with a warning; refuse where no value means the same.  Returns the (key,
    value) to set, or None to set nothing."""
    canon = canonical(key)
    if canon not in RANGES:
        return key, value
    try:
        n = int(value.strip())
    except ValueError:
        return key, value  # librdkafka names the bad value itself
    lo, hi = RANGES[canon]
    if lo <= n <= hi:
        return key, value
    if canon == "batch.size" and n == 0:
        # Java: "A batch size of zero will disable batching entirely".
        t.put(src, "batch.num.messages", "1")
        t.note(
            src,
            "batch.size=0 (Java: no batching) -> batch.num.messages=1: librdkafka's "
            "batch.size must be >= 1, so every request carries one message instead.",
            warn=True,
        )
        return None
    if canon == "request.timeout.ms" and n < lo:
        raise ValueError(
            f"{src}={n}: with the Java client every request would expire at once; "
            "librdkafka's request.timeout.ms (the broker's wait for acks) must be between "
            f"{lo} and {hi} ms. Use the Java default 30000."
        )
    near = min(max(n, lo), hi)
    t.note(
        src,
        f"{src}={n} -> {near}: librdkafka accepts {lo}..{hi} for {canon}, so the nearest "
        f"value is used{' (Java: no backoff; librdkafka waits at least 1 ms)' if n == 0 and lo == 1 else ''}.",
        warn=True,
    )
    return key, str(near)


_LEVEL_KEYS = {
    "compression.gzip.level": "gzip",
    "compression.lz4.level": "lz4",
    "compression.zstd.level": "zstd",
}


def _compression_levels(t: Translation, levels: dict[str, str]) -> None:
    """Java's per-codec levels: only the selected codec's applies (as in Java)."""
    if not levels:
        return
    codec_key = next((k for k in t.config if canonical(k) == "compression.codec"), None)
    codec = t.config[codec_key].strip().lower() if codec_key else "none"
    for key, value in levels.items():
        level = parse_int(key, value)
        if _LEVEL_KEYS[key] != codec:
            t.note(
                key,
                f"{key}={level} dropped: compression.type is {codec}, and (as in Java) a "
                "codec's level applies only to that codec.",
                warn=True,
            )
            continue
        lo, hi = RANGES["compression.level"]
        near = min(max(level, lo), hi)
        if near != level:
            t.note(
                key,
                f"{key}={level} -> compression.level={near}: librdkafka accepts {lo}..{hi}.",
                warn=True,
            )
        else:
            t.note(key, f"{key} -> compression.level (the level of the selected codec).")
        t.put(key, "compression.level", str(near))


def translate_detailed(java_config: Properties) -> Translation:
    """:func:`translate` with the input key behind each setting and structured notes."""
    t = Translation()
    levels: dict[str, str] = {}
    for raw_key, raw_value in java_config.items():
        key = str(raw_key).strip()
        if raw_value is None:
            raise ValueError(f"{key} has no value")
        value = normalise_value(raw_value, key)
        if key in _LEVEL_KEYS:
            levels[key] = value
        elif _is_java_only(key):
            settings, note = _java_only(key, value)
            for k, v in settings.items():
                mapped = _out_of_range(t, key, k, v)
                if mapped:
                    t.put(key, *mapped)
            if note:
                t.note(key, note, warn=key.startswith("partitioner."))
        elif key in RENAMES:
            target, note = RENAMES[key]
            mapped = _out_of_range(t, key, target, str(parse_int(key, value)))
            if mapped:
                t.put(key, *mapped)
            t.note(key, note)
        else:
            if key in ("enable.idempotence", "enable.gapless.guarantee"):
                value = parse_bool(key, value)
            if key == "ssl.endpoint.identification.algorithm" and not value.strip():
                # Java's way of turning hostname verification off.
                value = "none"
                t.note(
                    key,
                    'ssl.endpoint.identification.algorithm="" (Java: no hostname '
                    "verification) -> none, librdkafka's spelling of the same.",
                    warn=True,
                )
            mapped = _out_of_range(t, key, key, value)
            if mapped is None:
                continue
            t.put(key, *mapped)
            if key in SAME_NAME_NOTES:
                # max.in.flight matters only at 1, where a Java user expects order.
                warn = key in SAME_NAME_WARN and (
                    key != "max.in.flight.requests.per.connection" or mapped[1].strip() == "1"
                )
                t.note(key, SAME_NAME_NOTES[key](mapped[1]), warn=warn)
            elif key not in LIBRDKAFKA_PROPERTIES and key not in CYKAFKA_KEYS:
                t.note(
                    key,
                    f"{key} is not a librdkafka 2.16 producer property; passed through "
                    "unchanged (librdkafka rejects it unless a plugin defines it).",
                    warn=True,
                )
    _compression_levels(t, levels)
    return t


def translate(java_config: Properties) -> tuple[dict[str, str], list[str]]:
    """Translate Java producer properties to librdkafka's; returns (config, notes).

    * Java-only names are translated (``buffer.memory``, ``max.request.size``,
      ``partitioner.class`` ...) or rejected with a ValueError saying why; they are never
      passed through.
    * Values librdkafka would refuse (``batch.size=0``, ``linger.ms`` above 900000,
      ``retry.backoff.ms=0``, ``ssl.endpoint.identification.algorithm=""``) are mapped to
      the nearest value it takes, with a note; ``request.timeout.ms=0`` is refused.
    * ``compression.<codec>.level`` applies only when that codec is selected.
    * ``max.block.ms`` stays as a cykafka key (see ``CYKAFKA_KEYS``).
    * Properties already in librdkafka form pass through (values normalised to strings).
    * Two keys that end up setting the same librdkafka property with different values
      raise ValueError instead of letting the last one silently win.
    """
    t = translate_detailed(java_config)
    return t.config, [n.text for n in t.notes]
