"""Producer configuration: the resolver, Java-name translation and secret masking.

Pure Python, below the producer: nothing here imports the producer, a front door or the
extension (importing ``cykafka.config`` still runs ``cykafka/__init__``, which loads it).
"""

from __future__ import annotations

from .java import (
    ConfigWarning,
    Note,
    Translation,
    translate,
    translate_detailed,
)
from .java_names import JAVA_ONLY_KEYS, JAVA_PRODUCER_KEYS, SAME_MEANING
from .properties import (
    ALIASES,
    CYKAFKA_KEYS,
    KEYS_PARTITION_COUNT,
    LIBRDKAFKA_PROPERTIES,
    RANGES,
    Properties,
    canonical,
    normalise_value,
    suggest_property,
)
from .resolve import (
    DEFAULT_MAX_BLOCK_MS,
    INT32_MAX,
    LIBRDKAFKA_DEFAULTS,
    ResolvedConfig,
    Setting,
    Source,
    batch_sizing,
    number_property,
    resolve,
    same_value,
    sized_topic,
)
from .secrets import is_secret_key, mask_secrets, redact, secret_values

__all__ = [
    "ALIASES",
    "CYKAFKA_KEYS",
    "DEFAULT_MAX_BLOCK_MS",
    "INT32_MAX",
    "JAVA_ONLY_KEYS",
    "KEYS_PARTITION_COUNT",
    "JAVA_PRODUCER_KEYS",
    "LIBRDKAFKA_DEFAULTS",
    "LIBRDKAFKA_PROPERTIES",
    "RANGES",
    "SAME_MEANING",
    "ConfigWarning",
    "Note",
    "Properties",
    "ResolvedConfig",
    "Setting",
    "Source",
    "Translation",
    "batch_sizing",
    "canonical",
    "is_secret_key",
    "mask_secrets",
    "normalise_value",
    "number_property",
    "redact",
    "resolve",
    "same_value",
    "secret_values",
    "suggest_property",
    "sized_topic",
    "translate",
    "translate_detailed",
]
