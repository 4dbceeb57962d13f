"""Java producer property names and values -> librdkafka's, with a note for each change.

A Java config either translates (same meaning, possibly another name or unit), is mapped
to the nearest value librdkafka accepts with a warning saying what changed, or is refused
with a ValueError in the user's own (Java) terms.  Nothing Java-only reaches librdkafka,
whose errors would name its own properties instead of the user's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from .properties import (
    LIBRDKAFKA_PROPERTIES,
    RANGES,
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


_JAVA_PARTITIONERS = "org.apache.kafka.clients.producer."
# Java class -> (librdkafka partitioner, note).
_PARTITIONERS: Mapping[str, tuple[str, str]] = {
    "DefaultPartitioner": (
        "murmur2_random",
        "partitioner.class DefaultPartitioner -> partitioner=murmur2_random: librdkafka "
        'documents murmur2_random as "functionally equivalent to the default partitioner in '
        'the Java Producer" (murmur2 of the key; NULL keys spread, sticky per '
        "sticky.partitioning.linger.ms).",
    ),
    "RoundRobinPartitioner": (
        "random",
        "partitioner.class RoundRobinPartitioner -> partitioner=random: librdkafka has no "
        "round-robin partitioner; random also ignores keys and spreads evenly on average, "
        "but not in strict rotation (and NULL-key messages stay sticky for "
        "sticky.partitioning.linger.ms).",
    ),
    "UniformStickyPartitioner": (
        "random",
        "partitioner.class UniformStickyPartitioner -> partitioner=random: keys are ignored "
        "as in Java; librdkafka's stickiness (sticky.partitioning.linger.ms) applies to "
        "NULL-key messages only, keyed messages are placed randomly one by one.",
    ),
}

# Java producer/common client properties that librdkafka does not have and that we do
# not translate: name -> why / what to use instead.
_NO_EQUIVALENT: Mapping[str, str] = {
    "interceptor.classes": "Java interceptors cannot run in librdkafka; use "
    "plugin.library.paths for librdkafka plugins",
    "metric.reporters": "use statistics.interval.ms and a stats callback",
    "metrics.num.samples": "use statistics.interval.ms and a stats callback",
    "metrics.recording.level": "use statistics.interval.ms and a stats callback",
    "metrics.sample.window.ms": "use statistics.interval.ms and a stats callback",
    "auto.include.jmx.reporter": "there is no JMX in librdkafka",
    "metadata.max.idle.ms": "librdkafka expires unused topics from metadata.max.age.ms",
    "partitioner.adaptive.partitioning.enable": "librdkafka's sticky partitioner is not "
    "load-adaptive",
    "partitioner.availability.timeout.ms": "librdkafka's sticky partitioner is not load-adaptive",
    "socket.connection.setup.timeout.max.ms": "librdkafka has a single "
    "socket.connection.setup.timeout.ms",
    "sasl.client.callback.handler.class": "Java callback classes cannot run in librdkafka",
    "sasl.login.callback.handler.class": "Java callback classes cannot run in librdkafka",
    "sasl.login.class": "Java callback classes cannot run in librdkafka",
    "security.providers": "librdkafka uses OpenSSL; see ssl.providers / ssl.engine.location",
    "ssl.protocol": "OpenSSL negotiates the protocol version",
    "ssl.enabled.protocols": "OpenSSL negotiates the protocol version",
    "ssl.provider": "librdkafka uses OpenSSL; see ssl.providers",
    "ssl.engine.factory.class": "librdkafka uses OpenSSL; see ssl.engine.location",
    "ssl.keymanager.algorithm": "OpenSSL has no key manager factories",
    "ssl.trustmanager.algorithm": "OpenSSL has no trust manager factories",
    "ssl.secure.random.implementation": "OpenSSL seeds its own RNG",
    "ssl.truststore.location": "librdkafka reads CA certificates in PEM form: export the "
    "truststore and use ssl.ca.location",
    "ssl.truststore.password": "librdkafka reads CA certificates in PEM form: export the "
    "truststore and use ssl.ca.location",
    "ssl.truststore.type": "librdkafka reads CA certificates in PEM form: use ssl.ca.location",
    "ssl.truststore.certificates": "use ssl.ca.pem",
    "ssl.keystore.certificate.chain": "use ssl.certificate.pem",
    "ssl.keystore.key": "use ssl.key.pem",
    "sasl.kerberos.ticket.renew.jitter": "librdkafka renews with sasl.kerberos.kinit.cmd "
    "every sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.ticket.renew.window.factor": "librdkafka renews with "
    "sasl.kerberos.kinit.cmd every sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.min.time.before.relogin.ms": "use sasl.kerberos.min.time.before.relogin",
    "config.providers": "config providers (${file:...} substitution) run in the JVM; resolve "
    "the values in Python before building the config",
    "sasl.oauthbearer.header.urlencode": "librdkafka sends client credentials as given; "
    "URL-encode them yourself if your identity provider needs it",
    "sasl.oauthbearer.jwt.retriever.class": "Java callback classes cannot run in librdkafka; "
    "see sasl.oauthbearer.method=oidc",
    "sasl.oauthbearer.jwt.validator.class": "Java callback classes cannot run in librdkafka",
}
_NO_EQUIVALENT_PREFIXES: tuple[str, ...] = (
    "sasl.login.",
    "sasl.oauthbearer.jwks.endpoint.",
    "sasl.oauthbearer.expected.",
    "sasl.oauthbearer.clock.skew.",
    "sasl.oauthbearer.scope.claim.",
    "sasl.oauthbearer.iat.",
    "sasl.oauthbearer.jti.",
    "metrics.",
)

_SERIALIZER_REASON = (
    "{key} is Java-only: cykafka does no serialisation - produce() takes bytes or str "
    "(str is UTF-8 encoded) for keys and values, so serialise in Python before calling it "
    "(a Java class name cannot run in a Python/librdkafka producer)"
)

#: Java producer property names that librdkafka does not know. Some are translated, the
#: rest raise; none is ever passed through to librdkafka.
JAVA_ONLY_KEYS: frozenset[str] = frozenset(
    {
        "buffer.memory",
        "max.block.ms",
        "max.request.size",
        "partitioner.class",
        "partitioner.ignore.keys",
        "key.serializer",
        "value.serializer",
        "receive.buffer.bytes",
        "send.buffer.bytes",
        "sasl.jaas.config",
        "ssl.keystore.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        *_NO_EQUIVALENT,
    }
)


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
        if short in _PARTITIONERS and (cls == short or cls.startswith(_JAVA_PARTITIONERS)):
            name, note = _PARTITIONERS[short]
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
        raise ValueError(_SERIALIZER_REASON.format(key=key))
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
    reason = _NO_EQUIVALENT.get(key, "")
    raise ValueError(
        f"{key} is a Java client property with no librdkafka equivalent"
        + (f": {reason}" if reason else "")
    )


def _is_java_only(key: str) -> bool:
    return key in JAVA_ONLY_KEYS or (
        key not in LIBRDKAFKA_PROPERTIES and key.startswith(_NO_EQUIVALENT_PREFIXES)
    )


# Java names librdkafka also accepts, but whose meaning or default differs.
_SAME_NAME_NOTES: Mapping[str, Callable[[str], str]] = {
    "max.in.flight.requests.per.connection": lambda v: (
        f"max.in.flight.requests.per.connection={v} kept (librdkafka default is 1000000, "
        "Java's 5). On librdkafka a value of 1 alone does NOT keep order under retries; "
        "use enable.idempotence=true (preset 'ordered')."
    ),
    "batch.size": lambda v: (
        f"batch.size={v} kept, but librdkafka's batch.size caps a whole MessageSet per "
        "partition request (default 1000000), Java's a per-partition batch (default 16384); "
        "a Java-sized value shrinks librdkafka batches. batch.num.messages also applies."
    ),
    "linger.ms": lambda v: f"linger.ms={v} kept (librdkafka default 5 ms; Java's 0 before 4.0).",
    "acks": lambda v: f"acks={v} kept (librdkafka default all, as Java 3.0+).",
    "enable.idempotence": lambda v: (
        f"enable.idempotence={v} kept; librdkafka adjusts max.in.flight to 5, retries to "
        "INT32_MAX and acks to all when it is true and refuses conflicting values."
    ),
    "request.timeout.ms": lambda v: (
        f"request.timeout.ms={v} kept; in librdkafka it is the broker-side ack timeout; the "
        "client-side wait is bounded by socket.timeout.ms and message.timeout.ms."
    ),
    "connections.max.idle.ms": lambda v: (
        f"connections.max.idle.ms={v} kept (librdkafka's default is 0 = never close idle "
        "connections, Java's 540000)."
    ),
    "client.id": lambda v: f"client.id={v} kept (librdkafka's default is 'rdkafka', Java's '').",
    "metadata.max.age.ms": lambda v: (
        f"metadata.max.age.ms={v} kept (librdkafka's default 900000, Java's 300000)."
    ),
    "reconnect.backoff.ms": lambda v: (
        f"reconnect.backoff.ms={v} kept (librdkafka's default 100, Java's 50)."
    ),
    "socket.connection.setup.timeout.ms": lambda v: (
        f"socket.connection.setup.timeout.ms={v} kept (librdkafka's default 30000, Java's "
        "10000; librdkafka has no .max variant and does not back off exponentially)."
    ),
    "ssl.cipher.suites": lambda v: (
        f"ssl.cipher.suites={v} kept, but librdkafka reads an OpenSSL cipher list "
        "(ECDHE-RSA-AES128-GCM-SHA256:...), not Java's IANA names "
        "(TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,...): names OpenSSL does not know fail at "
        "the first TLS connection."
    ),
    "ssl.keystore.location": lambda v: (
        "ssl.keystore.location kept, but librdkafka reads PKCS#12 keystores only (Java's "
        "default keystore type was JKS before Java 9): convert a JKS store with keytool "
        "-importkeystore -deststoretype PKCS12."
    ),
}

#: Same-name notes that describe a behaviour change the user should see as a warning.
_SAME_NAME_WARN = frozenset(
    {
        "max.in.flight.requests.per.connection",
        "batch.size",
        "request.timeout.ms",
        "ssl.cipher.suites",
        "ssl.keystore.location",
    }
)

# Java names renamed to the librdkafka property (aliases, but the target is clearer).
_RENAMES: Mapping[str, tuple[str, str]] = {
    "delivery.timeout.ms": (
        "message.timeout.ms",
        "delivery.timeout.ms -> message.timeout.ms: librdkafka's local limit on a message's "
        "whole life (queue time and retries); unlike Java it need not exceed linger.ms + "
        "request.timeout.ms (it must exceed linger.ms), and with transactional.id it must not "
        "exceed transaction.timeout.ms (default 60000).",
    ),
    "retries": (
        "message.send.max.retries",
        "retries -> message.send.max.retries (same meaning; librdkafka's doc: \"retrying may "
        'cause reordering unless enable.idempotence is set to true").',
    ),
}


#: Every producer property of the Java client (Kafka 4.1 ``ProducerConfig.configNames()``
#: plus the SSL/SASL common configs).  Each is translated, refused with a reason, carries a
#: note, or is in SAME_MEANING: none passes through unexplained.
JAVA_PRODUCER_KEYS: frozenset[str] = frozenset(
    """acks auto.include.jmx.reporter batch.size bootstrap.servers buffer.memory
    client.dns.lookup client.id compression.gzip.level compression.lz4.level compression.type
    compression.zstd.level config.providers connections.max.idle.ms delivery.timeout.ms
    enable.idempotence enable.metrics.push interceptor.classes key.serializer linger.ms
    max.block.ms max.in.flight.requests.per.connection max.request.size metadata.max.age.ms
    metadata.max.idle.ms metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy
    metric.reporters metrics.num.samples metrics.recording.level metrics.sample.window.ms
    partitioner.adaptive.partitioning.enable partitioner.availability.timeout.ms
    partitioner.class partitioner.ignore.keys receive.buffer.bytes reconnect.backoff.max.ms
    reconnect.backoff.ms request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms
    sasl.client.callback.handler.class sasl.jaas.config sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
    sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
    sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms
    sasl.login.retry.backoff.ms sasl.mechanism sasl.oauthbearer.clock.skew.seconds
    sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.header.urlencode sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class
    sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url security.protocol security.providers
    send.buffer.bytes socket.connection.setup.timeout.max.ms
    socket.connection.setup.timeout.ms ssl.cipher.suites ssl.enabled.protocols
    ssl.endpoint.identification.algorithm ssl.engine.factory.class ssl.key.password
    ssl.keymanager.algorithm ssl.keystore.certificate.chain ssl.keystore.key
    ssl.keystore.location ssl.keystore.password ssl.keystore.type ssl.protocol ssl.provider
    ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.certificates
    ssl.truststore.location ssl.truststore.password ssl.truststore.type
    transaction.timeout.ms transactional.id value.serializer""".split()
)

#: Java names librdkafka takes with the same meaning (and, where it matters, default).
SAME_MEANING: frozenset[str] = frozenset(
    {
        "bootstrap.servers",
        "client.dns.lookup",
        "compression.type",
        "enable.metrics.push",
        "metadata.recovery.rebootstrap.trigger.ms",
        "metadata.recovery.strategy",
        "reconnect.backoff.max.ms",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.service.name",
        "sasl.mechanism",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
        "security.protocol",
        "ssl.endpoint.identification.algorithm",
        "ssl.key.password",
        "ssl.keystore.password",
        "transaction.timeout.ms",
        "transactional.id",
    }
)


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


def translate_detailed(java_config: Mapping[str, Any]) -> Translation:
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
        elif key in _RENAMES:
            target, note = _RENAMES[key]
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
            if key in _SAME_NAME_NOTES:
                # max.in.flight matters only at 1, where a Java user expects order.
                warn = key in _SAME_NAME_WARN and (
                    key != "max.in.flight.requests.per.connection" or mapped[1].strip() == "1"
                )
                t.note(key, _SAME_NAME_NOTES[key](mapped[1]), warn=warn)
            elif key not in LIBRDKAFKA_PROPERTIES:
                t.note(
                    key,
                    f"{key} is not a librdkafka 2.16 producer property; passed through "
                    "unchanged (librdkafka rejects it unless a plugin defines it).",
                    warn=True,
                )
    _compression_levels(t, levels)
    keys = {canonical(k) for k in t.config}
    if "enable.idempotence" not in keys and "transactional.id" not in keys:
        t.note(
            "enable.idempotence",
            "enable.idempotence not set: the Java client (3.0+) defaults to true, librdkafka "
            "to false - without it retries may reorder or duplicate messages "
            "(use preset 'ordered').",
        )
    if "partitioner" not in keys:
        t.note(
            "partitioner",
            "No partitioner: librdkafka defaults to consistent_random (CRC32), so keyed "
            "messages land on different partitions than with the Java client; set "
            "partitioner=murmur2_random (preset 'java_compatible') to match it.",
        )
    return t


def translate(java_config: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
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
