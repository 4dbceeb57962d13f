"""A real Apache Kafka cluster (KRaft, one node or several on loopback) for tests and
benchmarks: the broker our users run, started from Maven Central's jars.

:class:`KafkaCluster` fetches ``org.apache.kafka:kafka_2.13`` and ``kafka-tools`` (with
a log4j2 binding) once into a cache with Maven, formats one storage directory per node
(``kafka.tools.StorageTool format``) and starts each node as a combined broker and
controller (``process.roles=broker,controller``) with a static controller quorum, so
three nodes give real replication, leader fail-over and fencing.  Each node can be
SIGKILLed, SIGSTOPped and SIGCONTed, stopped, and restarted *with its data*.

Example::

    with KafkaCluster(nodes=3) as cluster:
        cluster.create_topic("events", partitions=3)   # replication factor 3, min ISR 2
        producer = cykafka.Producer(cluster.client_config())
        ...
        cluster.node(cluster.leader("events", 0)).kill()

Needs Java 17 (``java`` on PATH or ``$JAVA_HOME``) and Maven (``mvn``) the first time,
to fill the cache (``$CYKAFKA_KAFKA_LIBS``, default ``~/.cache/cykafka/kafka-<version>``).
Nothing is vendored and no tarball is downloaded: Maven resolves the same jars the
Kafka distribution ships.

This module imports only the standard library, the launchers' shared toolkit and
:mod:`cykafka.cluster.admin` at import time; ``confluent_kafka`` is imported where a
Kafka client is needed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ...cluster.admin import find_topic
from ..errors import KafkaClusterError, KafkaStartError
from ..process import free_port, poll_until, tcp_open, unregister
from ..topics import admin_client, create_topic, delete_topic, topic_names
from .jars import KAFKA_VERSION, java_executable, kafka_classpath
from .node import KafkaNode
from .security import Listener, Security

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = ["KafkaCluster"]


class KafkaCluster:
    """Apache Kafka in KRaft mode: ``nodes`` combined broker+controller JVMs on loopback.

    Args:
        nodes: how many nodes; each is a voter of the static controller quorum.
        listeners: the client listeners of every node, the first one also between
            brokers.  Default: one ``PLAINTEXT`` listener.
        broker_config: more ``server.properties`` (they win over the defaults of
            :meth:`default_config`).
        data_dir: where each node keeps ``node-<id>/`` (log dirs, config, logs).  Default:
            a temporary directory deleted by :meth:`stop`.
        version: the Apache Kafka release, from Maven Central.
        heap: each JVM's heap (``-Xmx``).
        startup_timeout: seconds :meth:`start` waits for every node to serve metadata.
        security: TLS certificates, SASL mechanisms and ACLs (:class:`Security`); needed
            by ``SSL``/``SASL_*`` listeners.  The first listener stays the one between
            brokers and the cluster's own admin client's.
        port: the first node's first client listener's port (its bootstrap address);
            default, as every other port: a free one.
    """

    def __init__(
        self,
        nodes: int = 1,
        *,
        listeners: Sequence[Listener] = (Listener("PLAINTEXT"),),
        broker_config: Mapping[str, Any] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        version: str = KAFKA_VERSION,
        host: str = "127.0.0.1",
        heap: str = "512m",
        startup_timeout: float = 90.0,
        security: Security | None = None,
        port: int | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"nodes must be >= 1, not {nodes}")
        if not listeners:
            raise ValueError("a cluster needs at least one client listener")
        secured = [ln.name for ln in listeners if ln.tls or ln.sasl]
        if secured and security is None:
            raise ValueError(f"listeners {secured} need security=Security(...)")
        self.security = security
        self.host = host
        self.version = version
        self.heap = heap
        self.listeners = tuple(listeners)
        self.broker_config = dict(broker_config or {})
        self.startup_timeout = startup_timeout
        self.cluster_id = _cluster_id()
        self._owns_dir = data_dir is None
        self.data_dir = (
            Path(data_dir)
            if data_dir is not None
            else Path(tempfile.mkdtemp(prefix="cykafka-kafka-"))
        )
        self._classpath: str | None = None
        self._admin_client: AdminClient | None = None
        self._admin_nodes: tuple[int, ...] = ()
        self._client_conf: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._pid = os.getpid()  # the process whose exit stops the nodes
        names = [ln.name for ln in self.listeners] + ["CONTROLLER"]
        self.nodes = [
            KafkaNode(self, i + 1, {n: free_port(host) for n in names}) for i in range(nodes)
        ]
        if port:  # the first node's first client listener where asked: the bootstrap address
            self.nodes[0].ports[self.listeners[0].name] = port

    # -- configuration
    def default_config(self) -> dict[str, str]:
        """What a test cluster sets beyond Kafka's defaults, and why."""
        n = len(self.nodes)
        rf, isr = str(min(3, n)), str(min(2, n))
        return {
            # Internal topics replicated as production does, once there are 3 nodes.
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": isr,
            "default.replication.factor": rf,
            "min.insync.replicas": isr,
            # Fewer partitions of the internal topics: each is created on first use, and 50
            # of them on a 2-core machine delay a test's first transaction by seconds.
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            # A dead node is noticed in 3 s rather than 9, and a paused follower leaves the
            # ISR in 5 s rather than 30: fault tests wait on fail-over, not on timers.
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "replica.lag.time.max.ms": "5000",
            "num.partitions": "1",
        }

    def classpath(self) -> str:
        if self._classpath is None:
            self._classpath = kafka_classpath(
                self.version, log=lambda m: print(f"cykafka: {m}", file=sys.stderr)
            )
        return self._classpath

    @property
    def bootstrap_servers(self) -> str:
        """Every node's first client listener, ``host:port,...``."""
        return self.bootstrap(self.listeners[0].name)

    def bootstrap(self, listener: str) -> str:
        return ",".join(n.address(listener) for n in self.nodes)

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """A librdkafka config that reaches the cluster on its first listener."""
        return {"bootstrap.servers": self.bootstrap_servers, **self._client_conf, **overrides}

    def listener(self, name: str) -> Listener:
        for ln in self.listeners:
            if ln.name == name:
                return ln
        raise KeyError(f"no listener {name!r} (listeners: {[ln.name for ln in self.listeners]})")

    def listener_config(self, name: str, **overrides: Any) -> dict[str, Any]:
        """A librdkafka config for listener ``name``: its servers, its security protocol
        and, for TLS, the CA of :class:`Security` (``ssl.ca.location``).  Credentials
        (``sasl.username``/``sasl.password``) are the caller's, in ``overrides``."""
        ln = self.listener(name)
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap(name),
            "security.protocol": ln.protocol,
        }
        if ln.tls and self.security is not None and self.security.ca is not None:
            conf["ssl.ca.location"] = str(self.security.ca)
        if ln.sasl and self.security is not None:
            conf["sasl.mechanism"] = self.security.sasl_mechanisms[0]
        return {**conf, **overrides}

    def add_scram_user(
        self,
        user: str,
        password: str,
        mechanism: str = "SCRAM-SHA-512",
        iterations: int = 8192,
        timeout: float = 30.0,
    ) -> None:
        """Create (or update) SCRAM credentials of ``user``, and wait until the brokers
        know them."""
        from confluent_kafka.admin import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        mech = ScramMechanism[mechanism.replace("-", "_")]
        futs = self._admin().alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    user, ScramCredentialInfo(mech, iterations), password.encode()
                )
            ]
        )
        for f in futs.values():
            f.result(timeout=timeout)

        def known() -> bool:
            futs = self._admin().describe_user_scram_credentials([user])
            assert isinstance(futs, dict)  # one future per user named
            desc = futs[user].result(timeout=5)
            return any(info.mechanism == mech for info in desc.scram_credential_infos)

        self.wait_for(known, timeout, f"SCRAM credentials of {user!r}")

    def allow(
        self,
        principal: str,
        resource_type: str,
        name: str,
        operations: Sequence[str],
        pattern: str = "LITERAL",
        timeout: float = 30.0,
    ) -> None:
        """Add ALLOW ACLs: ``principal`` (``"User:alice"``) may do ``operations``
        (``"WRITE"``, ``"DESCRIBE"``, ...) on the ``resource_type`` (``"TOPIC"``,
        ``"TRANSACTIONAL_ID"``, ``"CLUSTER"``, ``"GROUP"``) called ``name`` (``"*"``: all;
        ``pattern="PREFIXED"``: names starting with it).  Waits until the broker
        enforces them (its authorizer lists them)."""
        from confluent_kafka.admin import (
            AclBinding,
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        rtype, ptype = ResourceType[resource_type], ResourcePatternType[pattern]
        bindings = [
            AclBinding(
                rtype, name, ptype, principal, "*", AclOperation[op], AclPermissionType.ALLOW
            )
            for op in operations
        ]
        for f in self._admin().create_acls(bindings, request_timeout=timeout).values():
            f.result(timeout=timeout)
        flt = AclBindingFilter(
            rtype, name, ptype, principal, "*", AclOperation.ANY, AclPermissionType.ANY
        )

        def enforced() -> bool:
            found = self._admin().describe_acls(flt, request_timeout=5).result(timeout=5)
            return {b.operation for b in bindings} <= {b.operation for b in found}

        self.wait_for(enforced, timeout, f"the ACLs of {principal} on {resource_type} {name}")

    def node(self, node_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} (nodes: {[n.node_id for n in self.nodes]})")

    # -- lifecycle
    def start(self) -> KafkaCluster:
        with self._lock:
            self.classpath()
            for n in self.nodes:
                n.start()
            self.wait_ready(self.startup_timeout)
            return self

    def wait_ready(self, timeout: float | None = None, nodes: Sequence[int] | None = None) -> None:
        """Block until every running, unpaused node is registered as a broker, so that
        the cluster serves metadata and produce requests."""
        timeout = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        want = (
            set(nodes)
            if nodes is not None
            else {n.node_id for n in self.nodes if n.is_running() and not n.paused}
        )
        last: Exception | None = None
        while True:
            for n in self.nodes:
                if n.node_id in want and not n.is_running():
                    raise KafkaStartError(
                        f"Kafka node {n.node_id} exited (code {n._proc.returncode if n._proc else '?'})"
                        f"\n  log: {n.dir}\n  last log lines:\n    "
                        + n.log_tail().replace("\n", "\n    ")
                    )
            live = [n for n in self.nodes if n.node_id in want]
            if all(tcp_open(self.host, n.ports[self.listeners[0].name]) for n in live):
                try:
                    md = self._admin().list_topics(timeout=2.0)
                    if want <= set(md.brokers):
                        return
                    last = KafkaClusterError(f"brokers registered: {sorted(md.brokers)}")
                except Exception as exc:  # KafkaException; imported lazily
                    last = exc
            if time.monotonic() > deadline:
                raise KafkaStartError(
                    f"Kafka nodes {sorted(want)} not ready within {timeout:.0f}s (last: {last})\n"
                    + "\n".join(f"  node {n.node_id} log: {n.log_path}" for n in live)
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node and, when the cluster made its own data directory, delete it."""
        with self._lock:
            self._admin_client = None
            for n in self.nodes:
                if n.paused:
                    n.resume()
            # Signal all first, then wait: shutting down one at a time makes each wait
            # for the others' controlled shutdown to move leadership.
            for n in self.nodes:
                if n._proc is not None:
                    with contextlib.suppress(ProcessLookupError):
                        n._proc.terminate()
            for n in self.nodes:
                n._reap(timeout)
            unregister(self)
            if self._owns_dir:
                shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- admin
    def _admin(self) -> AdminClient:
        # A paused node keeps its connections open and answers nothing, and librdkafka
        # sends a metadata request to its least idle connected broker: the client that
        # was talking to a node before it paused would wait out every request on it.
        # So the admin client reaches only the nodes that answer, and a new one is made
        # when that set changes.
        answering = tuple(n.node_id for n in self.nodes if n.is_running() and not n.paused)
        if self._admin_client is None or answering != self._admin_nodes:
            reach = [n for n in self.nodes if n.node_id in answering] or self.nodes
            self._admin_nodes = answering
            self._admin_client = admin_client(
                self.client_config(
                    **{
                        "bootstrap.servers": ",".join(
                            n.address(self.listeners[0].name) for n in reach
                        )
                    }
                )
            )
        return self._admin_client

    @property
    def admin(self) -> AdminClient:
        """A confluent_kafka AdminClient on the cluster (shared; do not close)."""
        return self._admin()

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: Mapping[str, str] | None = None,
        timeout: float = 60.0,
    ) -> str:
        """Create ``name`` (replication factor ``min(3, nodes)`` by default) and wait until
        every partition has a leader and a full ISR."""
        rf = replication_factor if replication_factor is not None else min(3, len(self.nodes))
        create_topic(self._admin(), name, partitions, rf, config, timeout, error=KafkaClusterError)

        def ready() -> bool:
            t = find_topic(self._admin(), name, 5)
            return (
                t is not None
                and len(t.partitions) == partitions
                and all(p.leader >= 0 and len(p.isrs) == rf for p in t.partitions.values())
            )

        self.wait_for(ready, timeout, f"topic {name!r} to have leaders and full ISRs")
        return name

    def delete_topic(self, name: str, timeout: float = 60.0) -> None:
        """Delete ``name`` and wait until it is gone from metadata."""
        delete_topic(self._admin(), name, timeout, error=KafkaClusterError)

    def list_topics(self, timeout: float = 10.0) -> list[str]:
        """Names of all topics the cluster reports."""
        return topic_names(self._admin(), timeout)

    def partitions(self, topic: str, timeout: float = 10.0) -> dict[int, Any]:
        """``{partition: PartitionMetadata}`` (leader, replicas, isrs) as the cluster says
        now.  Each node learns a new topic from the metadata log on its own: one asked
        just after the topic was created may not know it yet, so an unknown topic is
        asked about again for up to ``timeout`` seconds before it is an error."""
        found: list[Any] = []

        def known() -> bool:
            t = find_topic(self._admin(), topic, timeout)
            if t is None:
                raise KafkaClusterError(f"topic {topic!r} not found")
            found.append(t)
            return True

        self.wait_for(known, timeout, f"topic {topic!r} in the metadata")
        return dict(found[-1].partitions)

    def leader(self, topic: str, partition: int = 0, timeout: float = 30.0) -> int:
        """The node id leading ``topic``/``partition`` (waits while it has none)."""
        found: list[int] = []

        def has_leader() -> bool:
            p = self.partitions(topic)[partition]
            if p.leader >= 0:
                found.append(p.leader)
                return True
            return False

        self.wait_for(has_leader, timeout, f"{topic}[{partition}] to have a leader")
        return found[-1]

    def elect_preferred_leaders(
        self, topic: str, partitions: Sequence[int], timeout: float = 30.0
    ) -> None:
        """Move leadership back to each partition's preferred replica (the first of its
        replica list), as ``kafka-leader-election --election-type preferred`` does."""
        from confluent_kafka import ElectionType, TopicPartition

        fut = self._admin().elect_leaders(
            ElectionType.PREFERRED, [TopicPartition(topic, p) for p in partitions]
        )
        fut.result(timeout=timeout)

    def reassign(
        self, topic: str, replicas: Mapping[int, Sequence[int]], timeout: float = 60.0
    ) -> None:
        """Give partitions new replica lists (the first is the preferred leader) with
        ``kafka-reassign-partitions``, and wait until it is done."""
        import json

        plan = {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": p, "replicas": list(r)} for p, r in replicas.items()
            ],
        }
        path = self.data_dir / f"reassign-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(plan))
        self._tool(
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--bootstrap-server",
            self.bootstrap_servers,
            "--reassignment-json-file",
            str(path),
            "--execute",
        )

        def done() -> bool:
            parts = self.partitions(topic)
            return all(
                list(parts[p].replicas) == list(r) and len(parts[p].isrs) == len(r)
                for p, r in replicas.items()
            )

        self.wait_for(done, timeout, f"the reassignment of {topic!r} to finish")

    def _tool(self, main: str, *args: str) -> str:
        proc = subprocess.run(
            [java_executable(), "-cp", self.classpath(), main, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise KafkaClusterError(
                f"{main.rsplit('.', 1)[-1]} failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
            )
        return proc.stdout

    def wait_for(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        poll_until(cond, timeout, what, KafkaClusterError)

    # -- protocol
    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.stop(timeout=5.0)
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __iter__(self) -> Iterator[KafkaNode]:
        return iter(self.nodes)

    def __repr__(self) -> str:
        return f"KafkaCluster({self.version}, nodes={self.nodes!r})"


def _cluster_id() -> str:
    # A KRaft cluster id is a base64url-encoded UUID of 22 characters (what
    # `kafka-storage random-uuid` prints).  Like Kafka's own Uuid.randomUuid(), never
    # one that starts with "-": the storage tool would read it as an option.
    import base64

    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
