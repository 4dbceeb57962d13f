"""cykafka: a fast Kafka producer for Python, in Cython over librdkafka.

Every delivery comes back as a future; whole columns go to librdkafka in one
C loop; presets and an explainer say what a config guarantees.
"""

from __future__ import annotations

from ._load import load_native

load_native()  # finds librdkafka before the imports below need it

from . import presets  # noqa: E402
from ._native import (  # noqa: E402
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
from .config import mask_secrets, translate  # noqa: E402
from .explain import Guarantees, explain  # noqa: E402
from .producer import Producer  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BatchFuture",
    "BatchReport",
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
