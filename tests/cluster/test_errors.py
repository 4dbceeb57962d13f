"""What the cluster layer's admin and consumer calls raise when the cluster does not
answer: cykafka's own KafkaError with librdkafka's code, never confluent-kafka's
KafkaException (the same refusal from a live broker: tests/cluster/test_topics.py).
No broker: the address is a closed port."""

from __future__ import annotations

from typing import Callable

import pytest

import cykafka
from cykafka.launchers.process import free_port

TIMEOUT = 1.0


def _servers() -> str:
    return f"127.0.0.1:{free_port('127.0.0.1')}"


def _find_topic(servers: str) -> object:
    from confluent_kafka.admin import AdminClient

    from cykafka.cluster.admin import find_topic

    return find_topic(AdminClient({"bootstrap.servers": servers, "log_level": 0}), "t", TIMEOUT)


def _ensure_topic(servers: str) -> object:
    from confluent_kafka.admin import AdminClient

    from cykafka.cluster.admin import ensure_topic

    admin = AdminClient({"bootstrap.servers": servers, "log_level": 0})
    return ensure_topic(admin, "t", 1, timeout=TIMEOUT)


def _partitions_of(servers: str) -> object:
    from cykafka.cluster.committed import partitions_of

    return partitions_of({"bootstrap.servers": servers, "log_level": 0}, "t", TIMEOUT)


def _committed_messages(servers: str) -> object:
    from cykafka.cluster.committed import committed_messages

    conf = {"bootstrap.servers": servers, "log_level": 0}
    return list(committed_messages(conf, "t", timeout=TIMEOUT))


def _log_ends(servers: str) -> object:
    from cykafka.cluster.wire import log_ends

    return log_ends({"bootstrap.servers": servers, "log_level": 0}, "t", TIMEOUT)


def _read_raw_log(servers: str) -> object:
    from cykafka.testing import read_raw_log

    return read_raw_log(servers, "t", 1, timeout=TIMEOUT)


@pytest.mark.parametrize(
    "ask",
    [_find_topic, _ensure_topic, _partitions_of, _committed_messages, _log_ends, _read_raw_log],
    ids=lambda f: f.__name__.lstrip("_"),
)
def test_an_unreachable_cluster_raises_cykafkas_error_with_the_code(
    ask: Callable[[str], object],
) -> None:
    from confluent_kafka import KafkaException

    with pytest.raises(cykafka.KafkaError) as caught:
        ask(_servers())
    err = caught.value
    assert not isinstance(err, KafkaException)
    assert err.name == "_TRANSPORT", err
    assert err.code == cykafka.ErrorCode.LOCAL_TRANSPORT
    assert err.retriable
    assert "_TRANSPORT" in str(err)
