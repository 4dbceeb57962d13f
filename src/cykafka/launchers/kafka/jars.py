"""Apache Kafka's jars: Maven Central's ``org.apache.kafka:kafka_2.13`` and
``kafka-tools`` with a log4j2 binding, fetched once into a cache
(``$CYKAFKA_KAFKA_LIBS``, default ``~/.cache/cykafka/kafka-<version>``), and the
``java`` that runs them.  Maven resolves the same jars the Kafka distribution ships.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import jvm
from ..errors import KafkaStartError

__all__ = ["KAFKA_VERSION", "LIBS_ENV", "java_executable", "kafka_classpath"]

#: The Apache Kafka release the cluster runs (Maven coordinates ``org.apache.kafka``).
KAFKA_VERSION = "4.4.0"
#: log4j2 and the SLF4J 2 API it binds to: Kafka's own jars bring SLF4J 1.7, which
#: finds no binding and logs nothing (``StaticLoggerBinder`` warning).
_LOG4J_VERSION = "2.26.1"
_SLF4J_VERSION = "2.0.17"
#: Environment variable naming the cache directory of Kafka's jars.
LIBS_ENV = "CYKAFKA_KAFKA_LIBS"

_INSTALL_HINT = jvm.install_hint("Apache Kafka")


def _cache_root(version: str) -> Path:
    override = os.environ.get(LIBS_ENV)
    if override:
        return Path(override)
    return jvm.cache_dir(f"kafka-{version}")


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH; :class:`KafkaStartError` if neither."""
    return jvm.java_executable(KafkaStartError, _INSTALL_HINT)


def kafka_classpath(
    version: str = KAFKA_VERSION,
    *,
    extra: Sequence[str] = (),
    log: Callable[[str], None] | None = None,
) -> str:
    """The Java classpath (``dir/*``) of Apache Kafka ``version``'s jars, fetched with
    Maven into the cache the first time.  ``extra`` adds ``group:artifact:version``
    coordinates (they get a cache directory of their own).

    Concurrent callers (several test processes) wait on one lock; the cache directory
    appears whole or not at all.
    """
    root = _cache_root(version)
    if extra:
        root = root.with_name(
            root.name + "-" + uuid.uuid5(uuid.NAMESPACE_URL, ",".join(extra)).hex[:10]
        )
    coordinates = [
        ("org.apache.kafka", "kafka_2.13", version),
        ("org.apache.kafka", "kafka-tools", version),
        ("org.apache.logging.log4j", "log4j-core", _LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-slf4j2-impl", _LOG4J_VERSION),
        ("org.slf4j", "slf4j-api", _SLF4J_VERSION),
    ]
    for coord in extra:
        g, a, v = coord.split(":")
        coordinates.append((g, a, v))
    return jvm.maven_classpath(
        root,
        coordinates,
        what=f"Apache Kafka {version}",
        error=KafkaStartError,
        hint=_INSTALL_HINT,
        log=log,
    )
