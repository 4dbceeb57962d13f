"""Config plumbing: Java producer property translation, cykafka-only keys, secret masking.

Pure Python and import-light so the CLI and tests can use it without the extension.
librdkafka facts quoted here come from its CONFIGURATION.md / INTRODUCTION.md; the
property list and defaults were checked against the 2.16.0 runtime bundled in
confluent-kafka 2.16.1 (``rd_kafka_conf_properties_show`` / ``rd_kafka_conf_dump``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Callable

__all__ = [
    "ALIASES",
    "CYKAFKA_KEYS",
    "JAVA_ONLY_KEYS",
    "LIBRDKAFKA_PROPERTIES",
    "canonical",
    "is_secret_key",
    "mask_secrets",
    "normalise_value",
    "redact",
    "translate",
]

#: Keys the cykafka Producer consumes itself; they must be stripped before the config
#: reaches librdkafka, which rejects them ("No such configuration property").
CYKAFKA_KEYS: frozenset[str] = frozenset({"max.block.ms"})

#: Global + producer (C/P = "*" or "P") property names of librdkafka 2.16.0, generated from
#: rd_kafka_conf_properties_show() of the bundled library (tests re-check it at run time).
LIBRDKAFKA_PROPERTIES: frozenset[str] = frozenset(
    {
        "acks",
        "allow.auto.create.topics",
        "api.version.fallback.ms",
        "api.version.request",
        "api.version.request.timeout.ms",
        "background_event_cb",
        "batch.num.messages",
        "batch.size",
        "bootstrap.servers",
        "broker.address.family",
        "broker.address.ttl",
        "broker.version.fallback",
        "builtin.features",
        "client.dns.lookup",
        "client.id",
        "client.rack",
        "closesocket_cb",
        "compression.codec",
        "compression.level",
        "compression.type",
        "connect_cb",
        "connections.max.idle.ms",
        "debug",
        "default_topic_conf",
        "delivery.report.only.error",
        "delivery.timeout.ms",
        "dr_cb",
        "dr_msg_cb",
        "enable.gapless.guarantee",
        "enable.idempotence",
        "enable.metrics.push",
        "enable.random.seed",
        "enable.sasl.oauthbearer.unsecure.jwt",
        "enable.ssl.certificate.verification",
        "enabled_events",
        "error_cb",
        "https.ca.location",
        "https.ca.pem",
        "interceptors",
        "internal.termination.signal",
        "linger.ms",
        "log.connection.close",
        "log.queue",
        "log.thread.name",
        "log_cb",
        "log_level",
        "max.in.flight",
        "max.in.flight.requests.per.connection",
        "message.copy.max.bytes",
        "message.max.bytes",
        "message.send.max.retries",
        "message.timeout.ms",
        "metadata.broker.list",
        "metadata.max.age.ms",
        "metadata.recovery.rebootstrap.trigger.ms",
        "metadata.recovery.strategy",
        "msg_order_cmp",
        "oauthbearer_token_refresh_cb",
        "opaque",
        "open_cb",
        "partitioner",
        "partitioner_cb",
        "plugin.library.paths",
        "produce.offset.report",
        "queue.buffering.backpressure.threshold",
        "queue.buffering.max.kbytes",
        "queue.buffering.max.messages",
        "queue.buffering.max.ms",
        "queuing.strategy",
        "receive.message.max.bytes",
        "reconnect.backoff.jitter.ms",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "request.required.acks",
        "request.timeout.ms",
        "resolve_cb",
        "retries",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "sasl.kerberos.keytab",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal",
        "sasl.kerberos.service.name",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.oauthbearer.assertion.algorithm",
        "sasl.oauthbearer.assertion.claim.aud",
        "sasl.oauthbearer.assertion.claim.exp.seconds",
        "sasl.oauthbearer.assertion.claim.iss",
        "sasl.oauthbearer.assertion.claim.jti.include",
        "sasl.oauthbearer.assertion.claim.nbf.seconds",
        "sasl.oauthbearer.assertion.claim.sub",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.assertion.jwt.template.file",
        "sasl.oauthbearer.assertion.private.key.file",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.extensions",
        "sasl.oauthbearer.grant.type",
        "sasl.oauthbearer.metadata.authentication.type",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.password",
        "sasl.username",
        "security.protocol",
        "socket.blocking.max.ms",
        "socket.connection.setup.timeout.ms",
        "socket.keepalive.enable",
        "socket.max.fails",
        "socket.nagle.disable",
        "socket.receive.buffer.bytes",
        "socket.send.buffer.bytes",
        "socket.timeout.ms",
        "socket_cb",
        "ssl.ca.certificate.stores",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.certificate.verify_cb",
        "ssl.cipher.suites",
        "ssl.crl.location",
        "ssl.curves.list",
        "ssl.endpoint.identification.algorithm",
        "ssl.engine.id",
        "ssl.engine.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.providers",
        "ssl.sigalgs.list",
        "ssl_ca",
        "ssl_certificate",
        "ssl_engine_callback_data",
        "ssl_key",
        "statistics.interval.ms",
        "stats_cb",
        "sticky.partitioning.linger.ms",
        "throttle_cb",
        "topic.blacklist",
        "topic.metadata.propagation.max.ms",
        "topic.metadata.refresh.fast.cnt",
        "topic.metadata.refresh.fast.interval.ms",
        "topic.metadata.refresh.interval.ms",
        "topic.metadata.refresh.sparse",
        "transaction.timeout.ms",
        "transactional.id",
    }
)

#: librdkafka aliases ("Alias for `x`" in CONFIGURATION.md) -> the property they set.
#: Two spellings of one property in a config would silently fight (last one wins), so
#: presets/explain compare keys through this table.
ALIASES: Mapping[str, str] = {
    "acks": "request.required.acks",
    "bootstrap.servers": "metadata.broker.list",
    "compression.type": "compression.codec",
    "delivery.timeout.ms": "message.timeout.ms",
    "linger.ms": "queue.buffering.max.ms",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "retries": "message.send.max.retries",
    "sasl.mechanism": "sasl.mechanisms",
    "sasl.oauthbearer.client.credentials.client.id": "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.credentials.client.secret": "sasl.oauthbearer.client.secret",
}


def canonical(key: str) -> str:
    """The librdkafka property a key really sets (aliases resolved)."""
    return ALIASES.get(key, key)


# --------------------------------------------------------------------------- secrets

_SECRET_KEYS: frozenset[str] = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "ssl_key",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.private.key.pem",
        # Free-form strings that routinely embed credentials.
        "sasl.oauthbearer.config",
        "sasl.jaas.config",
        "ssl.keystore.key",
    }
)
_SECRET_WORDS = re.compile(r"password|secret|passphrase|jaas", re.IGNORECASE)
_MASK = "***"


def is_secret_key(key: str) -> bool:
    """True for keys whose value must never be shown (logs, reports, exceptions)."""
    return key.lower() in _SECRET_KEYS or _SECRET_WORDS.search(key) is not None


def _secret_values(config: Mapping[str, Any]) -> list[str]:
    """Every string that would leak a secret of ``config``, longest first."""
    found: set[str] = set()
    for key, value in config.items():
        if isinstance(value, Mapping):
            found.update(_secret_values(value))
            continue
        if not is_secret_key(str(key)) or value is None or callable(value):
            continue
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        if not text:
            continue
        found.add(text)
        # A PEM key or JAAS line may be logged reformatted: also hide its pieces.
        found.update(line.strip() for line in text.splitlines() if len(line.strip()) >= 8)
        found.update(v for _, v in _jaas_options(text) if v)
    return sorted(found, key=len, reverse=True)


# key=value / "key": "value" fragments naming a secret-like key, for secrets that are not
# in the config we were given (e.g. an error quoting another client's settings).
_SECRET_ASSIGNMENT = re.compile(
    r"""(?P<key>[\w.\-]*(?:password|secret|passphrase)[\w.\-]*)(?P<sep>["']?\s*[=:]\s*)"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s,;}\]]+)""",
    re.IGNORECASE,
)


def redact(text: str, config: Mapping[str, Any]) -> str:
    """Remove the secret values of ``config`` (and ``secret-key=value`` pairs) from text.

    Used on log lines and exception messages before they reach the user. Values are
    replaced in a single regex pass, longest first, so one secret that is a prefix of
    another cannot leave the tail of the longer one visible.
    """
    secrets = _secret_values(config)
    if secrets:
        pattern = re.compile("|".join(re.escape(s) for s in secrets))
        text = pattern.sub(_MASK, text)
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m['key']}{m['sep']}{_MASK}", text)


def mask_secrets(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` safe to print: secret-like keys get ``"***"``.

    Secret values that also appear inside other string values (say a password pasted
    into ``sasl.oauthbearer.extensions``) are blanked there too; nested mappings are
    masked recursively; non-string values (callbacks, numbers) are kept.
    """
    secrets = _secret_values(config)
    pattern = re.compile("|".join(re.escape(s) for s in secrets)) if secrets else None
    out: dict[str, Any] = {}
    for key, value in config.items():
        if is_secret_key(str(key)):
            out[key] = _MASK
        elif isinstance(value, Mapping):
            out[key] = mask_secrets(value)
        elif isinstance(value, str) and pattern is not None:
            out[key] = pattern.sub(_MASK, value)
        else:
            out[key] = value
    return out


def _shown(key: str, value: Any) -> str:
    """A value for an error message, masked if the key is secret-like."""
    return _MASK if is_secret_key(key) else repr(value)


# --------------------------------------------------------------------------- values


def normalise_value(value: Any, key: str = "") -> str:
    """librdkafka takes strings: bools become "true"/"false", numbers their decimal form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{key}: {value!r} is not a finite number")
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError(
        f"{key}: unsupported value type {type(value).__name__}; use str, int, float or bool"
    )


def _int(key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {_shown(key, value)}") from None


_BOOL_WORDS = {"true": "true", "false": "false"}


def _bool(key: str, value: str) -> str:
    word = _BOOL_WORDS.get(value.strip().lower())
    if word is None:
        raise ValueError(f"{key} must be true or false, got {_shown(key, value)}")
    return word


# --------------------------------------------------------------------------- translate

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

_JAAS_MODULE = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?:required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r"""(?P<k>[\w.]+)\s*=\s*(?P<v>"(?:[^"\\]|\\.)*"|[^\s;]+)""")


def _jaas_options(text: str) -> list[tuple[str, str]]:
    head = _JAAS_MODULE.match(text)
    if head is None:
        return []
    opts = []
    for m in _JAAS_OPTION.finditer(text, head.end()):
        v = m["v"]
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        opts.append((m["k"], v))
    return opts


def _translate_jaas(value: str) -> tuple[dict[str, str], str]:
    """sasl.jaas.config -> librdkafka SASL properties; never echoes the value."""
    head = _JAAS_MODULE.match(value)
    module = head["module"].rsplit(".", 1)[-1] if head else ""
    opts = dict(_jaas_options(value))
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
        nbytes = _int(key, value)
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
        ms = _int(key, value)
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
            {"message.max.bytes": str(_int(key, value))},
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
        if _bool(key, value) == "true":
            return (
                {"partitioner": "random"},
                "partitioner.ignore.keys=true -> partitioner=random (keys ignored).",
            )
        return {}, "partitioner.ignore.keys=false is the default behaviour; dropped."
    if key in ("key.serializer", "value.serializer"):
        raise ValueError(_SERIALIZER_REASON.format(key=key))
    if key in ("receive.buffer.bytes", "send.buffer.bytes"):
        n = _int(key, value)
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
    if key.startswith("compression.") and key.endswith(".level"):
        return (
            {"compression.level": str(_int(key, value))},
            f"{key} -> compression.level (librdkafka has one level for the selected codec).",
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
_SAME_NAME_NOTES: Mapping[str, Callable[[str], str | None]] = {
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
}

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


def translate(java_config: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Translate Java producer properties to librdkafka's; returns (config, notes).

    * Java-only names are translated (``buffer.memory``, ``max.request.size``,
      ``partitioner.class`` ...) or rejected with a ValueError saying why; they are never
      passed through.
    * ``max.block.ms`` stays as a cykafka key (see ``CYKAFKA_KEYS``).
    * Properties already in librdkafka form pass through (values normalised to strings).
    * Two keys that end up setting the same librdkafka property with different values
      raise ValueError instead of letting the last one silently win.
    """
    out: dict[str, str] = {}
    origin: dict[str, str] = {}  # canonical property -> input key that set it
    notes: list[str] = []

    def put(src: str, key: str, value: str) -> None:
        canon = canonical(key)
        if canon in origin:
            prev_key = next(k for k in out if canonical(k) == canon)
            if out[prev_key] != value:
                raise ValueError(
                    f"{src} and {origin[canon]} both set {canon} with different values "
                    f"({_shown(key, value)} vs {_shown(key, out[prev_key])}); keep one"
                )
            return
        origin[canon] = src
        out[key] = value

    for raw_key, raw_value in java_config.items():
        key = str(raw_key).strip()
        if raw_value is None:
            raise ValueError(f"{key} has no value")
        value = normalise_value(raw_value, key)
        if _is_java_only(key):
            settings, note = _java_only(key, value)
            for k, v in settings.items():
                put(key, k, v)
            if note:
                notes.append(note)
        elif key in _RENAMES:
            target, note = _RENAMES[key]
            put(key, target, str(_int(key, value)))
            notes.append(note)
        else:
            if key == "enable.idempotence" or key == "enable.gapless.guarantee":
                value = _bool(key, value)
            put(key, key, value)
            if key in _SAME_NAME_NOTES:
                note = _SAME_NAME_NOTES[key](value)
                if note:
                    notes.append(note)
            elif key not in LIBRDKAFKA_PROPERTIES:
                notes.append(
                    f"{key} is not a librdkafka 2.16 producer property; passed through "
                    "unchanged (librdkafka rejects it unless a plugin defines it)."
                )
    if "enable.idempotence" not in out and "transactional.id" not in out:
        notes.append(
            "enable.idempotence not set: the Java client (3.0+) defaults to true, librdkafka "
            "to false - without it retries may reorder or duplicate messages "
            "(use preset 'ordered')."
        )
    if "partitioner" not in out:
        notes.append(
            "No partitioner: librdkafka defaults to consistent_random (CRC32), so keyed "
            "messages land on different partitions than with the Java client; set "
            "partitioner=murmur2_random (preset 'java_compatible') to match it."
        )
    return out, notes
