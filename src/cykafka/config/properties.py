"""librdkafka's property names, aliases and value spelling (data, no policy).

The property list and ranges were checked against the librdkafka 2.16.0 runtime bundled
in confluent-kafka 2.16.1 (``rd_kafka_conf_properties_show``); tests re-check them by
constructing producers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .secrets import shown

__all__ = [
    "ALIASES",
    "CYKAFKA_KEYS",
    "KEYS_PARTITION_COUNT",
    "LIBRDKAFKA_PROPERTIES",
    "RANGES",
    "Properties",
    "canonical",
    "normalise_value",
    "parse_bool",
    "parse_int",
    "suggest_property",
]

#: A configuration as a caller gives it (librdkafka or Java names): librdkafka takes
#: strings, a confluent-kafka style config also numbers, booleans and callbacks, so values
#: are ``object`` and checked where they are read (:func:`normalise_value` names a bad one).
Properties = Mapping[str, object]

#: Keys the cykafka Producer consumes itself; they must be stripped before the config
#: reaches librdkafka, which rejects them ("No such configuration property").
CYKAFKA_KEYS: frozenset[str] = frozenset({"max.block.ms", "keys.partition.count"})

#: Which partition count keyed placement uses when partitions are added mid-run:
#: ``first`` (the count the producer saw first: a key stays on its partition), a
#: count (the one a run started with, for every producer of the run), or ``current``
#: (librdkafka: keys hashed over the count of its latest metadata, read every
#: ``topic.metadata.refresh.interval.ms``, so they move).  Default: ``first`` for an
#: idempotent producer (the ordered, strict_ordered, exactly_once presets).
KEYS_PARTITION_COUNT = "keys.partition.count"

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
        # Hidden (not in rd_kafka_conf_properties_show) but accepted; cykafka's resolver
        # sets it for idempotent producers.
        "enable.sparse.connections",
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


#: Integer ranges librdkafka enforces (canonical name -> (min, max)) where the Java
#: client accepts values outside them; java.py maps such values or refuses them.
RANGES: Mapping[str, tuple[int, int]] = {
    "batch.size": (1, 2147483647),
    "queue.buffering.max.ms": (0, 900000),
    "retry.backoff.ms": (1, 300000),
    "retry.backoff.max.ms": (1, 300000),
    "request.timeout.ms": (1, 900000),
    "metadata.max.age.ms": (1, 86400000),
    "reconnect.backoff.ms": (0, 3600000),
    "reconnect.backoff.max.ms": (0, 3600000),
    "socket.connection.setup.timeout.ms": (1000, 2147483647),
    "transaction.timeout.ms": (1000, 2147483647),
    "message.max.bytes": (1000, 1000000000),
    "max.in.flight.requests.per.connection": (1, 1000000),
    "socket.send.buffer.bytes": (0, 100000000),
    "socket.receive.buffer.bytes": (0, 100000000),
    "compression.level": (-1, 12),
}


def normalise_value(value: object, key: str = "") -> str:
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


def parse_int(key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {shown(key, value)}") from None


_BOOL_WORDS = {"true": "true", "false": "false"}


def parse_bool(key: str, value: str) -> str:
    word = _BOOL_WORDS.get(value.strip().lower())
    if word is None:
        raise ValueError(f"{key} must be true or false, got {shown(key, value)}")
    return word


def suggest_property(key: str) -> str:
    """ " (did you mean 'linger.ms'?)" for a key librdkafka does not know, from its own
    property list and the Java producer's names (which the resolver translates); ""
    when nothing is close.  Case is ignored: librdkafka's names are lower case."""
    import difflib

    from .java_names import JAVA_PRODUCER_KEYS

    names = sorted(LIBRDKAFKA_PROPERTIES | JAVA_PRODUCER_KEYS | CYKAFKA_KEYS)
    close = difflib.get_close_matches(key.strip().lower(), names, n=3, cutoff=0.75)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
