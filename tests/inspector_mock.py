"""A stand-in for ``cykafka.testing.MockCluster`` (branch ``mock``, not merged yet).

Same interface subset the inspector tests use, over librdkafka's mock cluster API through
ctypes on the very librdkafka the extension links (so one library serves the process).
Once ``cykafka.testing`` is on main, ``mock_cluster_class()`` returns the real class.
"""

from __future__ import annotations

import ctypes
from typing import Any


def mock_cluster_class() -> Any:
    try:
        from cykafka.testing import MockCluster  # type: ignore[import-not-found]
    except ImportError:
        return _CtypesMockCluster
    return MockCluster


def _lib() -> ctypes.CDLL:
    from cykafka._load import _preload_wheel_librdkafka

    path = _preload_wheel_librdkafka()
    if path is None:
        raise RuntimeError("librdkafka of the confluent-kafka wheel not found")
    lib = ctypes.CDLL(path)
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, res, args in [
        ("rd_kafka_conf_new", vp, []),
        ("rd_kafka_conf_set", i, [vp, cp, cp, cp, ctypes.c_size_t]),
        ("rd_kafka_new", vp, [i, vp, cp, ctypes.c_size_t]),
        ("rd_kafka_destroy", None, [vp]),
        ("rd_kafka_mock_cluster_new", vp, [vp, i]),
        ("rd_kafka_mock_cluster_destroy", None, [vp]),
        ("rd_kafka_mock_cluster_bootstraps", cp, [vp]),
        ("rd_kafka_mock_topic_create", i, [vp, cp, i, i]),
        ("rd_kafka_mock_broker_set_down", i, [vp, ctypes.c_int32]),
        ("rd_kafka_mock_broker_set_up", i, [vp, ctypes.c_int32]),
        ("rd_kafka_mock_broker_set_rtt", i, [vp, ctypes.c_int32, i]),
        ("rd_kafka_mock_partition_set_leader", i, [vp, cp, ctypes.c_int32, ctypes.c_int32]),
    ]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


class _CtypesMockCluster:
    def __init__(self, num_brokers: int = 3) -> None:
        self._l = _lib()
        err = ctypes.create_string_buffer(512)
        conf = self._l.rd_kafka_conf_new()
        self._l.rd_kafka_conf_set(conf, b"log_level", b"0", err, 512)
        self._rk = self._l.rd_kafka_new(0, conf, err, 512)  # owns conf
        if not self._rk:
            raise RuntimeError(err.value.decode())
        self._mc = self._l.rd_kafka_mock_cluster_new(self._rk, num_brokers)
        self.bootstrap_servers: str = self._l.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
        self._check(self._l.rd_kafka_mock_topic_create(
            self._mc, name.encode(), partitions, replication_factor))
        return name

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        self._check(self._l.rd_kafka_mock_partition_set_leader(
            self._mc, topic.encode(), partition, broker_id))

    def set_broker_down(self, broker_id: int) -> None:
        self._check(self._l.rd_kafka_mock_broker_set_down(self._mc, broker_id))

    def set_broker_up(self, broker_id: int) -> None:
        self._check(self._l.rd_kafka_mock_broker_set_up(self._mc, broker_id))

    def set_rtt(self, broker_id: int, ms: int) -> None:
        self._check(self._l.rd_kafka_mock_broker_set_rtt(self._mc, broker_id, ms))

    @staticmethod
    def _check(err: int) -> None:
        if err:
            raise RuntimeError(f"librdkafka mock error {err}")

    def close(self) -> None:
        if self._mc:
            self._l.rd_kafka_mock_cluster_destroy(self._mc)
            self._l.rd_kafka_destroy(self._rk)
            self._mc = self._rk = None

    def __enter__(self) -> _CtypesMockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
