"""An Apache Kafka node that enforces security, and what its tests share (the
integration tests and the Spark ones): certificates made with the ``openssl`` command,
SCRAM users, topics.  Listeners:

* ``PLAINTEXT``: the super user (``User:ANONYMOUS``); the tests' admin and read-back.
* ``SSL``: a certificate for 127.0.0.1 signed by the test CA.
* ``BADHOST``: TLS with a certificate signed by the same CA for another host name
  (``kafka.invalid``): a client that verifies host names must refuse it.
* ``SASL_SSL``: TLS (as ``SSL``) and SCRAM-SHA-512 logins of users made by the tests.

Kafka's ``StandardAuthorizer`` runs: a SCRAM user may do only what its ACLs allow.
"""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cykafka.launchers.kafka import KafkaCluster, Listener, Security

__all__ = [
    "PASSWORD",
    "Certs",
    "User",
    "make_certs",
    "new_topic",
    "no_secret",
    "records",
    "revoke",
    "sasl",
    "secure_cluster",
    "set_password",
    "transactional_writer",
    "user",
    "writer",
]

PASSWORD = "Okapi-Pa55-" + uuid.uuid4().hex[:8]  # never to appear in any output


# --------------------------------------------------------------------------- certificates


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _ca(d: Path, name: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return cert, key


def _server_cert(d: Path, name: str, san: str, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    cert, key, csr, ext = (d / f"{name}{s}" for s in (".pem", ".key", ".csr", ".ext"))
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
        "-subj", f"/CN={san.split(':', 1)[1]}",
    )  # fmt: skip
    ext.write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
        "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(ext),
    )  # fmt: skip
    return cert, key


@dataclass
class Certs:
    ca: Path  # signed the brokers' certificates
    other_ca: Path  # signed nothing the brokers serve
    server: tuple[Path, Path]  # for 127.0.0.1
    wrong_host: tuple[Path, Path]  # for kafka.invalid, signed by `ca`


def make_certs(d: Path) -> Certs:
    """A CA, another CA, and two server certificates signed by the first, in ``d``."""
    ca = _ca(d, "cykafka-test-ca")
    return Certs(
        ca=ca[0],
        other_ca=_ca(d, "another-ca")[0],
        server=_server_cert(d, "broker", "IP:127.0.0.1", ca),
        wrong_host=_server_cert(d, "elsewhere", "DNS:kafka.invalid", ca),
    )


def secure_cluster(certs: Certs, **broker_config: Any) -> KafkaCluster:
    """The node described above (not started), with more ``server.properties``."""
    listeners = (
        Listener("PLAINTEXT"),
        Listener("SSL", "SSL"),
        Listener("BADHOST", "SSL", certificate=certs.wrong_host[0], key=certs.wrong_host[1]),
        Listener("SASL_SSL", "SASL_SSL"),
    )
    security = Security(certificate=certs.server[0], key=certs.server[1], ca=certs.ca, acls=True)
    return KafkaCluster(
        nodes=1, listeners=listeners, security=security, broker_config=broker_config
    )


@dataclass
class User:
    name: str
    password: str

    @property
    def principal(self) -> str:
        return f"User:{self.name}"


def user(cluster: KafkaCluster, prefix: str) -> User:
    u = User(f"{prefix}-{uuid.uuid4().hex[:6]}", PASSWORD)
    cluster.add_scram_user(u.name, u.password)
    return u


def sasl(cluster: KafkaCluster, user: User, **extra: Any) -> dict[str, Any]:
    return cluster.listener_config(
        "SASL_SSL", **{"sasl.username": user.name, "sasl.password": user.password, **extra}
    )


def new_topic(cluster: KafkaCluster, partitions: int = 1) -> str:
    return cluster.create_topic(f"sec-{uuid.uuid4().hex[:8]}", partitions=partitions)


def no_secret(where: str, text: str) -> None:
    assert PASSWORD not in text, f"the password leaked in {where}: {text!r}"


def records(cluster: KafkaCluster, topic: str, read_back: Any) -> int:
    return sum(len(v) for v in read_back(cluster.bootstrap_servers, topic).values())


def writer(cluster: KafkaCluster, topic: str, prefix: str = "writer") -> User:
    """A user allowed to write ``topic`` (WRITE implies DESCRIBE)."""
    u = user(cluster, prefix)
    cluster.allow(u.principal, "TOPIC", topic, ["WRITE"])
    return u


def transactional_writer(cluster: KafkaCluster) -> tuple[str, str, User]:
    """(topic, progress topic, user) for an exactly-once write whose user has every
    right it needs but none on any transactional id: WRITE on the topic, and on the
    progress topic WRITE, READ and DESCRIBE_CONFIGS (it is checked to be compacted)."""
    topic = new_topic(cluster)
    u = writer(cluster, topic)
    progress = f"{topic}.progress"
    cluster.create_topic(progress, config={"cleanup.policy": "compact"})
    cluster.allow(u.principal, "TOPIC", progress, ["WRITE", "READ", "DESCRIBE_CONFIGS"])
    return topic, progress, u


def revoke(cluster: KafkaCluster, principal: str, topic: str, timeout: float = 30.0) -> None:
    """Delete every ACL of ``principal`` on ``topic`` with AdminClient ``delete_acls``, as
    an operator would, and wait until the broker's authorizer no longer lists one."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    flt = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        principal,
        "*",
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    for f in cluster.admin.delete_acls([flt], request_timeout=timeout).values():
        f.result(timeout=timeout)
    cluster.wait_for(
        lambda: not cluster.admin.describe_acls(flt, request_timeout=5).result(timeout=5),
        timeout,
        f"the ACLs of {principal} on {topic} to be gone",
    )


def set_password(cluster: KafkaCluster, u: User, password: str) -> None:
    """Rotate ``u``'s SCRAM credentials to ``password`` (AdminClient
    ``alter_user_scram_credentials``): ``u.password`` is the new one."""
    cluster.add_scram_user(u.name, password)
    u.password = password
