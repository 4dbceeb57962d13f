"""cykafka: a fast Kafka producer for Python, in Cython over librdkafka.

Every delivery comes back as a future; whole columns go to librdkafka in one
C loop; presets and an explainer say what a config guarantees.
"""

from __future__ import annotations

from ._load import load_native

_native = load_native()

from . import presets  # noqa: E402
from .config import mask_secrets, translate  # noqa: E402
from .explain import Guarantees, explain  # noqa: E402
from .producer import Producer  # noqa: E402

BatchFuture = _native.BatchFuture
BatchReport = _native.BatchReport
DeliveryFuture = _native.DeliveryFuture
RecordMetadata = _native.RecordMetadata
ErrorCode = _native.ErrorCode
KafkaError = _native.KafkaError
KafkaDeliveryError = _native.KafkaDeliveryError
DeliveryTimeoutError = _native.DeliveryTimeoutError
KafkaConfigError = _native.KafkaConfigError
QueueFullError = _native.QueueFullError
KafkaTimeoutError = _native.KafkaTimeoutError
KafkaAuthenticationError = _native.KafkaAuthenticationError
ProducerClosedError = _native.ProducerClosedError
ProducerForkedError = _native.ProducerForkedError
librdkafka_version = _native.librdkafka_version

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
    "explain",
    "librdkafka_version",
    "mask_secrets",
    "presets",
    "translate",
]
