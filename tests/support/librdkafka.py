"""Helpers for the config-layer tests (not a conftest.py, so it cannot clash on merge)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest


def librdkafka_accepts(config: Mapping[str, Any]) -> None:
    """Construct (and drop) a confluent_kafka.Producer: librdkafka validates the config."""
    ck = pytest.importorskip("confluent_kafka")
    conf = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0, **config}
    producer = ck.Producer(conf)
    producer.flush(0)
    del producer
