"""librdkafka as the tests meet it without a broker: its own verdict on a config, and a
producer that can reach nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import confluent_kafka

#: An address nothing listens on: a producer of it queues and never delivers.
NOWHERE = "127.0.0.1:1"


def librdkafka_accepts(config: Mapping[str, Any]) -> None:
    """Construct (and drop) a confluent_kafka.Producer: librdkafka validates the config."""
    conf = {"bootstrap.servers": NOWHERE, "log_level": 0, **config}
    producer = confluent_kafka.Producer(conf)
    producer.flush(0)
    del producer


def stuck_config(**overrides: Any) -> dict[str, Any]:
    """A producer config whose queue holds one message that is never delivered: the next
    produce waits for room (``max.block.ms``, long unless overridden)."""
    return {
        "bootstrap.servers": NOWHERE,
        "log_level": 0,
        "queue.buffering.max.messages": 1,
        "message.timeout.ms": 60_000,
        "max.block.ms": 600_000,
        **overrides,
    }
