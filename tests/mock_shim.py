"""The mock cluster the reliability tests need, from ``cykafka.testing`` when it is
there, else a stand-in over ctypes with the same method names.

``cykafka.testing.MockCluster`` (librdkafka's ``rdkafka_mock.h`` wrapped in the
extension) is developed on another branch.  Until it is merged, this module drives
the very same C functions through ctypes on the librdkafka that cykafka itself
loads (the one bundled in confluent-kafka), so the fault tests run now and switch
to the real class, unchanged, once it exists.  Only the subset the tests use is
provided: ``bootstrap_servers``, ``create_topic``, ``set_broker_down/up``,
``set_rtt``, ``set_partition_leader``, ``push_request_errors`` and ``close``.
"""

from __future__ import annotations

import ctypes
import glob
import os
from importlib.util import find_spec
from typing import Any, Iterable, Union

try:  # the real thing, once merged from the mock branch
    from cykafka.testing import MockCluster as MockCluster  # type: ignore[attr-defined]

    SOURCE = "cykafka.testing"
except ImportError:  # pragma: no cover - depends on what is merged
    SOURCE = "ctypes"

    def _lib() -> ctypes.CDLL:
        spec = find_spec("confluent_kafka")
        assert spec is not None and spec.submodule_search_locations
        site = os.path.dirname(next(iter(spec.submodule_search_locations)))
        (path,) = glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        vp, i32, cp = ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p
        sigs = {
            "rd_kafka_conf_new": ([], vp),
            "rd_kafka_conf_set": ([vp, cp, cp, cp, ctypes.c_size_t], ctypes.c_int),
            "rd_kafka_new": ([ctypes.c_int, vp, cp, ctypes.c_size_t], vp),
            "rd_kafka_destroy": ([vp], None),
            "rd_kafka_mock_cluster_new": ([vp, ctypes.c_int], vp),
            "rd_kafka_mock_cluster_destroy": ([vp], None),
            "rd_kafka_mock_cluster_bootstraps": ([vp], cp),
            "rd_kafka_mock_topic_create": ([vp, cp, ctypes.c_int, ctypes.c_int], ctypes.c_int),
            "rd_kafka_mock_broker_set_down": ([vp, i32], ctypes.c_int),
            "rd_kafka_mock_broker_set_up": ([vp, i32], ctypes.c_int),
            "rd_kafka_mock_broker_set_rtt": ([vp, i32, ctypes.c_int], ctypes.c_int),
            "rd_kafka_mock_partition_set_leader": ([vp, cp, i32, i32], ctypes.c_int),
            "rd_kafka_mock_push_request_errors_array": (
                [vp, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)], None),
        }
        for name, (args, res) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        return lib

    _API = {"Produce": 0, "Metadata": 3, "InitProducerId": 22, "ApiVersions": 18}

    class MockCluster:  # type: ignore[no-redef]
        """Stand-in for cykafka.testing.MockCluster (same names, subset)."""

        def __init__(self, num_brokers: int = 3) -> None:
            self._l = _lib()
            err = ctypes.create_string_buffer(512)
            conf = self._l.rd_kafka_conf_new()
            self._l.rd_kafka_conf_set(conf, b"log_level", b"0", err, 512)
            self._rk = self._l.rd_kafka_new(0, conf, err, 512)
            assert self._rk, err.value
            self._mc = self._l.rd_kafka_mock_cluster_new(self._rk, num_brokers)
            assert self._mc, "rd_kafka_mock_cluster_new failed"
            self.num_brokers = num_brokers
            self.bootstrap_servers = self._l.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

        def _ok(self, rc: int, what: str) -> None:
            if rc:
                import cykafka

                raise cykafka.KafkaError(rc, f"mock {what} failed")

        def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
            self._ok(self._l.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions,
                                                        replication_factor), "create_topic")

        def set_broker_down(self, broker_id: int) -> None:
            self._ok(self._l.rd_kafka_mock_broker_set_down(self._mc, broker_id), "down")

        def set_broker_up(self, broker_id: int) -> None:
            self._ok(self._l.rd_kafka_mock_broker_set_up(self._mc, broker_id), "up")

        def set_rtt(self, broker_id: int, ms: int) -> None:
            self._ok(self._l.rd_kafka_mock_broker_set_rtt(self._mc, broker_id, ms), "rtt")

        def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
            self._ok(self._l.rd_kafka_mock_partition_set_leader(
                self._mc, topic.encode(), partition, broker_id), "leader")

        def push_request_errors(self, api: Union[str, int], errors: Iterable[Any]) -> None:
            import cykafka

            key = _API[api] if isinstance(api, str) else int(api)
            codes = [int(e) if isinstance(e, int) else
                     int(cykafka.ErrorCode[("LOCAL" + e) if e.startswith("_") else e])
                     for e in errors]
            arr = (ctypes.c_int * len(codes))(*codes)
            self._l.rd_kafka_mock_push_request_errors_array(self._mc, key, len(codes), arr)

        def close(self) -> None:
            if self._mc:
                self._l.rd_kafka_mock_cluster_destroy(self._mc)
                self._l.rd_kafka_destroy(self._rk)
                self._mc = self._rk = None

        def __enter__(self) -> MockCluster:
            return self

        def __exit__(self, *exc: object) -> None:
            self.close()
