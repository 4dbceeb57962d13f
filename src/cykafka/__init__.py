"""cykafka: a fast Kafka producer for Python, in Cython over librdkafka.

Every delivery comes back as a future; whole columns go to librdkafka in one
C loop; presets and an explainer say what a config guarantees.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._load import install_native_finder

# Any module may be the first to import the extension: this finds its librdkafka then.
install_native_finder()

from . import presets  # noqa: E402
from .config import mask_secrets, translate  # noqa: E402
from .explain import Guarantees, explain  # noqa: E402

if TYPE_CHECKING:
    from ._native import (
        BatchFuture,
        BatchReport,
        DeliveryFuture,
        DeliveryTimeoutError,
        ErrorCode,
        KafkaAuthenticationError,
        KafkaConfigError,
        KafkaDeliveryError,
        KafkaError,
        KafkaTimeoutError,
        ProducerClosedError,
        ProducerForkedError,
        QueueFullError,
        RecordMetadata,
        all_delivered,
        librdkafka_version,
    )
    from .cluster.reach import ClusterSeen, ClusterUnreachable
    from .producer import Producer

# PEP 562: the extension and the producer load when first used, so that the CLI, the
# embedded broker and Kafka launcher, and whatever imports only those, start without
# them (``import cykafka.cli`` loaded the extension, the producer and the inspector).
_LAZY = {
    "BatchFuture": "._native",
    "BatchReport": "._native",
    "DeliveryFuture": "._native",
    "DeliveryTimeoutError": "._native",
    "ErrorCode": "._native",
    "KafkaAuthenticationError": "._native",
    "KafkaConfigError": "._native",
    "KafkaDeliveryError": "._native",
    "KafkaError": "._native",
    "KafkaTimeoutError": "._native",
    "ProducerClosedError": "._native",
    "ProducerForkedError": "._native",
    "QueueFullError": "._native",
    "RecordMetadata": "._native",
    "all_delivered": "._native",
    "librdkafka_version": "._native",
    "Producer": ".producer",
    "ClusterSeen": ".cluster.reach",
    "ClusterUnreachable": ".cluster.reach",
}


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "BatchFuture",
    "BatchReport",
    "ClusterSeen",
    "ClusterUnreachable",
    "DeliveryFuture",
    "DeliveryTimeoutError",
    "ErrorCode",
    "Guarantees",
    "KafkaAuthenticationError",
    "KafkaConfigError",
    "KafkaDeliveryError",
    "KafkaError",
    "KafkaTimeoutError",
    "Producer",
    "ProducerClosedError",
    "ProducerForkedError",
    "QueueFullError",
    "RecordMetadata",
    "all_delivered",
    "explain",
    "librdkafka_version",
    "mask_secrets",
    "presets",
    "translate",
]
