"""librdkafka's mock Kafka cluster (``rdkafka_mock.h``), with faults by name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Optional, Union

from .._load import load_native

_native = load_native()

__all__ = ["API_KEYS", "ErrorSpec", "MockCluster", "error_code"]

#: Kafka protocol request names -> ApiKey (the numbers the mock's error stacks use).
API_KEYS: Mapping[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "OffsetDelete": 47,
    "DescribeCluster": 60,
    "DescribeProducers": 61,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "GetTelemetrySubscriptions": 71,
    "PushTelemetry": 72,
}
_API_BY_LOWER = {k.lower(): v for k, v in API_KEYS.items()}

ErrorSpec = Union[str, int]


def _api_key(api: Union[str, int]) -> int:
    if isinstance(api, bool):
        raise TypeError("api must be a request name or an ApiKey number, not bool")
    if isinstance(api, int):
        if not 0 <= api <= 0x7FFF:
            raise ValueError(f"ApiKey must be between 0 and 32767, not {api}")
        return api
    if isinstance(api, str):
        key = _API_BY_LOWER.get(api.strip().lower().replace("request", ""))
        if key is None:
            raise ValueError(
                f"unknown Kafka request name {api!r}; known: {', '.join(API_KEYS)} "
                "(or pass the ApiKey number)"
            )
        return key
    raise TypeError(f"api must be a request name or an ApiKey number, not {type(api).__name__}")


def _lookup_error(e: ErrorSpec) -> Optional[int]:
    codes = _native.ErrorCode
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return int(e)
    if not isinstance(e, str):
        return None
    name = e.strip().upper()
    if name.startswith("RD_KAFKA_RESP_ERR_"):
        name = name[len("RD_KAFKA_RESP_ERR_") :]
    if name.startswith("_"):
        name = "LOCAL" + name  # ErrorCode spells librdkafka's _TRANSPORT as LOCAL_TRANSPORT
    if name in ("", "NONE", "OK"):
        name = "NO_ERROR"
    # Kafka renamed it (KIP-392); librdkafka's table keeps the old name for code 6.
    if name == "NOT_LEADER_OR_FOLLOWER":
        name = "NOT_LEADER_FOR_PARTITION"
    member = codes.__members__.get(name)
    return None if member is None else int(member)


def error_code(e: ErrorSpec) -> int:
    """The librdkafka error code for a name ("NOT_ENOUGH_REPLICAS", "_TRANSPORT",
    "NO_ERROR"), an :class:`cykafka.ErrorCode` or an int."""
    code = _lookup_error(e)
    if code is None:
        raise ValueError(f"unknown librdkafka error {e!r}")
    return code


def _error_codes(errors: Iterable[ErrorSpec]) -> list[int]:
    if isinstance(errors, (str, int)):
        errors = [errors]
    errors = list(errors)
    codes = [_lookup_error(e) for e in errors]
    bad = sorted({repr(e) for e, c in zip(errors, codes, strict=True) if c is None})
    if bad:
        raise ValueError(
            f"unknown librdkafka error name(s): {', '.join(bad)} (use names like "
            "'NOT_ENOUGH_REPLICAS', '_TRANSPORT' or 'NO_ERROR', or codes)"
        )
    return [c for c in codes if c is not None]


class MockCluster:
    """librdkafka's mock Kafka cluster with ``num_brokers`` brokers (ids 1..n).

    Every method is safe to call while producers and consumers are connected;
    faults apply to requests received afterwards.
    """

    def __init__(self, num_brokers: int = 3) -> None:
        self._impl = _native._MockCluster(num_brokers)

    # -- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Shut the brokers down and free them.  Idempotent."""
        self._impl.close()

    @property
    def closed(self) -> bool:
        return bool(self._impl.closed)

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.bootstrap_servers
        return f"<cykafka.testing.MockCluster {self.num_brokers} brokers {state}>"

    # -- topology ---------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of the brokers, for ``bootstrap.servers``."""
        return str(self._impl.bootstrap_servers)

    @property
    def num_brokers(self) -> int:
        return int(self._impl.num_brokers)

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.num_brokers + 1))

    def _broker(self, broker_id: int, allow_all: bool = False) -> int:
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise TypeError(f"broker_id must be an int, not {type(broker_id).__name__}")
        if allow_all and broker_id == -1:
            return -1
        if not 1 <= broker_id <= self.num_brokers:
            raise ValueError(
                f"no broker {broker_id}: the mock's broker ids are 1..{self.num_brokers}"
                + (" (or -1 for all)" if allow_all else "")
            )
        return broker_id

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
        """Create ``name`` and return it, like ``LocalBroker.create_topic``.  (Topics
        are also auto-created on first use, with the mock's default of 4 partitions.)"""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, not {partitions}")
        if not 1 <= replication_factor <= self.num_brokers:
            raise ValueError(
                f"replication_factor must be between 1 and {self.num_brokers} (the number "
                f"of brokers), not {replication_factor}"
            )
        self._impl.create_topic(name, partitions, replication_factor)
        return name

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` the leader of ``topic[partition]``.  Clients learn it from
        their next metadata refresh (e.g. after a NOT_LEADER_OR_FOLLOWER reply)."""
        if broker_id == -1:
            # librdkafka 2.16's mock dereferences the missing leader when a Produce for
            # the partition arrives and the whole process dies (SIGSEGV), so a
            # leaderless partition cannot be offered safely.
            raise ValueError(
                f"set_partition_leader({topic!r}, {partition}, -1): a leaderless partition "
                "crashes librdkafka's mock cluster (segmentation fault) on the next Produce "
                "to it. To make the partition unavailable, use set_broker_down(<its "
                "leader>) or push_request_errors('Produce', ['LEADER_NOT_AVAILABLE', ...])."
            )
        self._impl.set_partition_leader(topic, partition, self._broker(broker_id))

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the ``"transaction"`` or ``"group"`` coordinator for ``key``."""
        if key_type not in ("transaction", "group"):
            raise ValueError(f"key_type must be 'transaction' or 'group', not {key_type!r}")
        self._impl.set_coordinator(key_type, key, self._broker(broker_id))

    # -- faults -----------------------------------------------------------------

    def push_request_errors(self, api: Union[str, int], errors: Iterable[ErrorSpec]) -> None:
        """The next ``len(errors)`` requests of type ``api`` (on any broker) fail
        with these errors, in order; ``"NO_ERROR"``/0 lets one through.  librdkafka:
        "Passing RD_KAFKA_RESP_ERR__TRANSPORT will make the mock broker disconnect
        the client"."""
        key = _api_key(api)
        self._impl.push_request_errors(key, _error_codes(errors))

    def clear_request_errors(self, api: Union[str, int]) -> None:
        """Drop the errors still queued for ``api``."""
        self._impl.clear_request_errors(_api_key(api))

    def set_broker_down(self, broker_id: int) -> None:
        """Disconnect clients from the broker and refuse new connections
        (librdkafka: "This does NOT trigger leader change")."""
        self._impl.set_broker_down(self._broker(broker_id, True))

    def set_broker_up(self, broker_id: int) -> None:
        self._impl.set_broker_up(self._broker(broker_id, True))

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay the broker's responses by ``ms`` (0: no delay)."""
        if ms < 0:
            raise ValueError(f"ms must be >= 0, not {ms}")
        self._impl.set_rtt(self._broker(broker_id, True), int(ms))

    def heal(self) -> None:
        """Undo faults: every broker up, no added RTT, no queued Produce errors."""
        for b in self.broker_ids:
            self._impl.set_broker_up(b)
            self._impl.set_rtt(b, 0)
        self._impl.clear_request_errors(API_KEYS["Produce"])
