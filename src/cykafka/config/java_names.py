"""The Java producer's property names, as data: what each becomes on librdkafka, or why it
cannot.  java.py holds the rules that use these tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

__all__ = ["JAVA_ONLY_KEYS", "JAVA_PRODUCER_KEYS", "SAME_MEANING"]

JAVA_PARTITIONERS = "org.apache.kafka.clients.producer."
# Java class -> (librdkafka partitioner, note).
PARTITIONERS: Mapping[str, tuple[str, str]] = {
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
NO_EQUIVALENT: Mapping[str, str] = {
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
NO_EQUIVALENT_PREFIXES: tuple[str, ...] = (
    "sasl.login.",
    "sasl.oauthbearer.jwks.endpoint.",
    "sasl.oauthbearer.expected.",
    "sasl.oauthbearer.clock.skew.",
    "sasl.oauthbearer.scope.claim.",
    "sasl.oauthbearer.iat.",
    "sasl.oauthbearer.jti.",
    "metrics.",
)

SERIALIZER_REASON = (
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
        *NO_EQUIVALENT,
    }
)


SAME_NAME_NOTES: Mapping[str, Callable[[str], str]] = {
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
SAME_NAME_WARN = frozenset(
    {
        "max.in.flight.requests.per.connection",
        "batch.size",
        "request.timeout.ms",
        "ssl.cipher.suites",
        "ssl.keystore.location",
    }
)

# Java names renamed to the librdkafka property (aliases, but the target is clearer).
RENAMES: Mapping[str, tuple[str, str]] = {
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
