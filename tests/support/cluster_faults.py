"""Shared by the fault tests on a three-node Apache Kafka cluster (tests/cluster_faults
and the soaks): keyed rows, the leader of a partition killed at a chosen
point, an import run as a real process, and the checks of what a ``read_committed``
reader gets back."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Optional

import cykafka
from cykafka.launchers.kafka import KafkaCluster

from .cli import child_env, import_command

KEYS = 13
N = 3000
PROGRESS_TOPIC = "cykafka-import-progress"

#: How each import front door is run: its options.  ``plain`` is the default import
#: (preset ``ordered``: idempotent, per-key order); ``exactly-once`` commits every
#: 250 rows.  --rate spreads the rows over ~6 s so that the kill lands mid-stream: a
#: kill point at 70 % leaves 1.8 s of rows for the poll that sees it.  (At 1,500 rows/s
#: a loaded CI run once saw an import finish all 3,000 rows before a poll saw 1,092 of
#: them: 1.3 s of rows after the point.)
IMPORTS = {
    "plain": ["--rate", "500"],
    "preset-ordered": ["--preset", "ordered", "--rate", "500"],
    "exactly-once": ["--exactly-once", "--commit-every", "250", "--rate", "500"],
}


def seeded(label: str) -> random.Random:
    """A random source for the fault points, its seed printed (rerun with
    CYKAFKA_FAULT_SEED=...)."""
    seed = int(os.environ.get("CYKAFKA_FAULT_SEED", random.randrange(1 << 30)))
    print(f"{label}: CYKAFKA_FAULT_SEED={seed}")
    return random.Random(seed)


def new_topic(cluster: KafkaCluster, label: str, partitions: int = 3) -> str:
    return cluster.create_topic(f"{label}-{uuid.uuid4().hex[:8]}", partitions=partitions)


def rows(n: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of row i: key ``k<i % KEYS>``, value ``i``."""
    return [(f"k{i % KEYS}".encode(), str(i).encode()) for i in range(n)]


def rows_file(path: Path, n: int) -> Path:
    """The rows as ``KEY:VALUE`` lines (``cykafka import FILE -K :``)."""
    path.write_text("".join(f"{k.decode()}:{v.decode()}\n" for k, v in rows(n)))
    return path


def kill_leader(cluster: KafkaCluster, topic: str, partition: int = 0) -> int:
    """SIGKILL the node leading ``topic``/``partition``; its id."""
    node = cluster.leader(topic, partition)
    cluster.node(node).kill()
    return node


class Watermarks:
    """The sum of ``topic``'s high watermarks (records written, committed or not): how
    far a writer in another process has got."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "cykafka-watermarks", "log_level": 0}
        )
        md = self.consumer.list_topics(topic, timeout=30)
        self.parts = sorted(md.topics[topic].partitions)
        self.polls = 0
        self.longest = 0.0
        self.last = "nothing yet"

    def total(self) -> int:
        """The sum, or -1 while a partition's leader cannot say (it moved, or died)."""
        from confluent_kafka import KafkaException, TopicPartition

        start = time.monotonic()
        try:
            marks = [
                self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), 5, False)[1]
                for p in self.parts
            ]
            self.last = f"{sum(marks)} ({marks})"
            return sum(marks)
        except KafkaException as e:
            self.last = f"no answer ({e})"
            return -1
        finally:
            self.polls += 1
            self.longest = max(self.longest, time.monotonic() - start)

    def report(self) -> str:
        """What the polls saw: for a failure's message when the writer got away."""
        return (
            f"{self.topic}: last poll saw {self.last}; {self.polls} polls, "
            f"the longest {self.longest:.2f} s"
        )

    def close(self) -> None:
        self.consumer.close()


def wait_until(cond: Callable[[], bool], timeout: float, what: str, alive: Any = None) -> bool:
    """Poll ``cond`` until true (True), or until the process ``alive`` ended (False)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if alive is not None and alive.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)
    return True


def kill_leader_at(
    cluster: KafkaCluster, topic: str, at: int, proc: Any, timeout: float = 120
) -> Optional[int]:
    """SIGKILL the leader of partition 0 once ``at`` records are in ``topic``, written by
    the process ``proc``: the node killed, or None when ``proc`` ended first."""
    marks = Watermarks(cluster.bootstrap_servers, topic)
    try:
        if wait_until(lambda: marks.total() >= at, timeout, f"{at} records", alive=proc):
            return kill_leader(cluster, topic)
        print(f"the writer ended before {at} records were seen: {marks.report()}")
        return None
    finally:
        marks.close()


def import_cmd(bootstrap: str, path: Path, topic: str, *args: str) -> list[str]:
    return import_command(bootstrap, str(path), "-t", topic, "-K", ":", *args)


def start_import(bootstrap: str, path: Path, topic: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        import_cmd(bootstrap, path, topic, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str]:
    """Exit status and stdout+stderr of a started import."""
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def run_import(bootstrap: str, path: Path, topic: str, *args: str) -> tuple[int, str]:
    return finish(start_import(bootstrap, path, topic, *args))


def import_killing_leader(
    cluster: KafkaCluster, path: Path, topic: str, n: int, at: int, *args: str
) -> tuple[int, str, Optional[int]]:
    """Run an import of ``path`` and SIGKILL the leader of partition 0 once ``at`` records
    are in the topic: (exit status, output, the node killed or None when the import
    ended first)."""
    proc = start_import(cluster.bootstrap_servers, path, topic, *args)
    killed = kill_leader_at(cluster, topic, at, proc)
    rc, out = finish(proc)
    return rc, out, killed


def check_once_in_order(got: dict[int, list[Any]], n: int, label: str) -> dict[str, int]:
    """Every row 0..n-1 read back once, each key's rows in one partition in row order;
    the counts, printed."""
    values = [int(r.value) for rs in got.values() for r in rs]
    seen = Counter(values)
    counts = {
        "rows": n,
        "read": len(values),
        "duplicates": sum(c - 1 for c in seen.values()),
        "missing": sum(1 for i in range(n) if i not in seen),
        "out_of_order": 0,
    }
    where: dict[bytes, set[int]] = defaultdict(set)
    for p, rs in got.items():
        last: dict[bytes, int] = {}
        for r in rs:
            where[r.key].add(p)
            v = int(r.value)
            if v < last.get(r.key, -1):
                counts["out_of_order"] += 1
            last[r.key] = v
    counts["keys_split"] = sum(1 for ps in where.values() if len(ps) > 1)
    print(f"{label}: read_committed got {counts}")
    assert counts == {
        "rows": n, "read": n, "duplicates": 0, "missing": 0, "out_of_order": 0, "keys_split": 0
    }, counts  # fmt: skip
    return counts


def summary_count(out: str, name: str) -> int:
    """A count of the import summary (``delivered``, ``not sent``, ``unknown``)."""
    for line in out.splitlines():
        if line.startswith(f"  {name} "):
            return int(line[len(name) + 2 :].split()[0].replace(",", ""))
    raise AssertionError(f"no {name!r} line in the summary:\n{out}")


def produce_killing_leader(cluster, topic: str, n: int, at: int, batch: bool) -> list:
    """Write rows 0..n-1 in chunks of 100 (per-message futures, or one produce_batch
    per chunk) keeping two chunks in flight; SIGKILL the leader of partition 0 before
    the chunk holding row ``at``.  Returns the futures."""
    data = rows(n)
    futs: list = []
    with cykafka.Producer(cluster.client_config(), preset="ordered") as p:
        for lo in range(0, n, 100):
            chunk = data[lo : lo + 100]
            if lo <= at < lo + 100:
                kill_leader(cluster, topic)
            if batch:
                futs.append(p.produce_batch(topic, [v for _, v in chunk], [k for k, _ in chunk]))
            else:
                futs.extend(p.produce(topic, value=v, key=k) for k, v in chunk)
            if len(futs) > 2 * (1 if batch else 100):
                futs[-3 if batch else -300].exception(120)  # two chunks in flight
        assert p.flush(120) == 0
    return futs


SPARK_TESTS = Path(__file__).resolve().parents[1] / "spark"
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def start_job(args: dict[str, Any], fault: Optional[dict[str, Any]] = None) -> subprocess.Popen:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    for k in CONNECT_ENV:
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SPARK_TESTS / "faults"), *filter(None, [env.get("PYTHONPATH")])]
    )
    env.pop("CYKAFKA_FAULT", None)
    if fault is not None:
        env["CYKAFKA_FAULT"] = json.dumps(fault)
    return subprocess.Popen(
        [sys.executable, str(SPARK_TESTS / "eo_job.py"), json.dumps(args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def job_result(proc: subprocess.Popen) -> tuple[int, Any, str]:
    out, err = proc.communicate(timeout=600)
    lines = [ln for ln in out.splitlines() if ln.startswith("REPORTS ")]
    return proc.returncode, json.loads(lines[-1][8:]) if lines else None, err


def write_killing_leader(
    cluster: Any, topic: str, n: int, at: int, preset: str, fault: Optional[dict] = None
) -> tuple[int, Any, str, Optional[int]]:
    """A batch write_kafka of ``n`` keyed rows on ``local[2,3]`` (3 attempts per task);
    the leader of partition 0 SIGKILLed once ``at`` records are in the topic."""
    job = {"mode": "batch", "master": "local[2,3]", "bootstrap": cluster.bootstrap_servers,
           "topic": topic, "rows": n, "keys": 97, "preset": preset}  # fmt: skip
    proc = start_job(job, fault)
    killed = kill_leader_at(cluster, topic, at, proc, timeout=300)
    rc, reports, err = job_result(proc)
    return rc, reports, err, killed
