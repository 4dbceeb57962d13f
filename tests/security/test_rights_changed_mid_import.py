"""Rights taken away while an import writes, on Apache Kafka with TLS, SCRAM and ACLs
(tests/support/security.py): the WRITE ACL deleted, and the user's SCRAM password
changed, each with AdminClient as an operator would.  The import stops within seconds
(not ``message.timeout.ms``, 300 s) naming the principal, the topic and what it lacks;
its counts add up; the rows it had not handed over are left for the command it prints
(not dead-lettered one by one); and once the right is back, that command and the
dead letters it names finish the import with every row exactly once, read back with a
plain ``read_committed`` consumer."""

from __future__ import annotations

import json
import shlex
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka.launchers.kafka import KafkaCluster
from support.cli import child_env, import_command
from support.cluster_faults import Watermarks, summary_count, wait_until
from support.cluster_rules import keyed_rows
from support.security import new_topic, no_secret, revoke, sasl, set_password, writer

N = 200_000

# Every test runs an import against a secured Apache Kafka node (a module fixture
# starts one of its own).
pytestmark = pytest.mark.broker

#: KIP-368: "a session lifetime that will not exceed the configured value will be
#: communicated to v2.2.0 or later clients when they authenticate.  The broker will
#: disconnect any such connection that is not re-authenticated within the session
#: lifetime" (Kafka's connections.max.reauth.ms, default 0: never).  librdkafka
#: re-authenticates within it (KIP-368 since 2.2.0), with the password it was given.
REAUTH_MS = 3000


@pytest.fixture(scope="module")
def scram_reauth(certs) -> Iterator[KafkaCluster]:
    """The secure node, its SASL sessions re-authenticated every few seconds: a password
    changed on the broker meets the producer's connections within REAUTH_MS, as a
    rotation meets a long-running client on its next reconnect."""
    from support.security import secure_cluster

    with secure_cluster(certs, **{"connections.max.reauth.ms": str(REAUTH_MS)}) as c:
        yield c


def _config_file(tmp_path: Path, conf: dict[str, Any]) -> Path:
    path = tmp_path / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items() if k != "bootstrap.servers"))
    return path


def _commands(out: str) -> list[list[str]]:
    """The commands the summary prints under ``to finish``, as runnable argvs."""
    lines = [x.strip() for x in out.split("  to finish", 1)[1].splitlines()]
    return [
        [sys.executable, "-m", "cykafka.cli", *shlex.split(x)[1:]]
        for x in lines
        if x.startswith("cykafka import ")
    ]


def _import_until_changed(cluster, conf, topic, tmp_path, change) -> tuple[int, str, float, Path]:
    """Run an import of N keyed rows at 20,000 rows/s, ``change()`` the cluster once a
    tenth is in the topic: (exit status, output, seconds from the change to the exit,
    the dead-letter file)."""
    import subprocess

    rows = keyed_rows(tmp_path / "rows.jsonl", N, keys=100)
    dead = tmp_path / "dead.jsonl"
    cmd = import_command(
        conf["bootstrap.servers"], str(rows), "-t", topic, "--format", "jsonl",
        "--key-field", "k", "--rate", "20000", "-F", str(_config_file(tmp_path, conf)),
        "--dead-letter", str(dead),
    )  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    marks = Watermarks(cluster.bootstrap_servers, topic)  # (PLAINTEXT: the super user)
    try:
        assert wait_until(lambda: marks.total() >= N // 10, 120, "a tenth of the rows", proc)
    finally:
        marks.close()
    change()
    changed = time.monotonic()
    out, err = proc.communicate(timeout=280)
    took = time.monotonic() - changed
    return proc.returncode, out + err, took, dead


def _check_stop(out: str, took: float, dead: Path) -> tuple[int, int]:
    """Counts add up, the unread rows are left to the command: (rows read, dead letters)."""
    print(out)
    print(f"stopped {took:.1f} s after the change")
    assert took < 30, f"{took:.1f} s: the import waited instead of stopping"
    read = summary_count(out, "rows read")
    delivered, not_sent = summary_count(out, "delivered"), summary_count(out, "not sent")
    unknown = summary_count(out, "unknown")
    assert read == delivered + not_sent + unknown, out
    assert N // 10 <= delivered and read < N, out  # stopped: the rest was never read
    letters = dead.read_text().splitlines() if dead.exists() else []
    assert len(letters) == not_sent + unknown, (len(letters), out)
    assert len(letters) < N - read, "dead-lettered the rows it never read"
    print(f"read {read}, delivered {delivered}, not sent {not_sent}, unknown {unknown}")
    return read, len(letters)


def _finish(cluster, out: str, topic: str, dead: Path, read_back) -> None:
    """Run what the summary says finishes the import; every row is then in the topic
    once.  When a delivered row came after a refused one (requests to two partitions on
    either side of the change) the summary says to send the rows not sent again, from
    the dead letters, as well: done here as it says."""
    import subprocess

    cmds = _commands(out)
    assert len(cmds) == 1, out
    done = subprocess.run(cmds[0], capture_output=True, text=True, env=child_env(), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    resend = []
    if "so this sends each once" not in out:
        assert "and send again the" in out, out
        resend = [json.loads(x) for x in dead.read_text().splitlines()]
        assert {e["fate"] for e in resend} == {"not sent"}, out
    print("finished by the printed command" + (f" and {len(resend)} dead letters" * bool(resend)))
    got = read_back(cluster.bootstrap_servers, topic, expected=N - len(resend))
    seen = Counter(json.loads(r.value)["i"] for rs in got.values() for r in rs)
    seen.update(json.loads(e["value"])["i"] for e in resend)
    assert sorted(seen) == list(range(N)) and max(seen.values()) == 1


@pytest.mark.parametrize("preset", ["default", "at_least_once"])
def test_write_acl_deleted_mid_import_stops_it_naming_principal_and_topic(
    secure, read_back, tmp_path, preset
) -> None:
    topic = new_topic(secure, partitions=3)
    u = writer(secure, topic)
    conf = sasl(secure, u, **({"enable.idempotence": False} if preset != "default" else {}))
    rc, out, took, dead = _import_until_changed(
        secure, conf, topic, tmp_path, lambda: revoke(secure, u.principal, topic)
    )
    assert rc == 1, out
    assert u.principal in out and repr(topic) in out and "WRITE" in out, out
    _check_stop(out, took, dead)
    secure.allow(u.principal, "TOPIC", topic, ["WRITE"])
    _finish(secure, out, topic, dead, read_back)


def test_scram_password_changed_mid_import_stops_it_naming_the_credential(
    scram_reauth, read_back, tmp_path
) -> None:
    cluster = scram_reauth
    topic = new_topic(cluster, partitions=3)
    u = writer(cluster, topic)
    conf = sasl(cluster, u)
    old = u.password
    rotated = old + "-rotated"
    rc, out, took, dead = _import_until_changed(
        cluster, conf, topic, tmp_path, lambda: set_password(cluster, u, rotated)
    )
    assert rc == 1, out
    assert u.principal in out and "SCRAM-SHA-512" in out and "password" in out, out
    no_secret("the import's output", out)
    assert rotated not in out
    _check_stop(out, took, dead)
    set_password(cluster, u, old)  # the client's file still holds the old one
    _finish(cluster, out, topic, dead, read_back)
