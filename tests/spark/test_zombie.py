"""A zombie Spark task attempt, for real: the host running it is frozen (SIGSTOP to its
Spark Worker, its executor JVM, the PySpark daemon and the Python worker of the task)
while the task holds an open Kafka transaction, the driver gives the executor up and
runs the task again on the other host, the job finishes; then the host is woken
(SIGCONT) and the old attempt goes on with its commit.

The whole host is frozen, not only the executor: a running Worker kills an executor
its driver gave up (its log shows it once woken), and the PySpark daemon then sends
SIGHUP to its Python workers.  A frozen or cut-off host has nobody to kill it.

Its own module, so its own two-host cluster: a frozen Worker must not slow the
other tests' jobs."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from support.cluster_faults import job_result, new_topic, start_job, wait_until

#: The driver gives an executor up after 15 s without a heartbeat (default 120 s;
#: checked every second, default 60 s); the Master keeps a silent Worker 60 s.  The
#: new attempt of task 0 first asks the frozen executor for its shuffle output (the
#: driver keeps it registered): give up after 10 s and one retry (default: 120 s, 3
#: retries 5 s apart, 8 minutes) before re-running the map task that wrote it.
CONF = {
    "spark.executor.memory": "512m",
    "spark.cores.max": "2",
    "spark.executor.heartbeatInterval": "1s",
    "spark.storage.blockManagerHeartbeatTimeoutMs": "15000",
    "spark.network.timeoutInterval": "1s",
    "spark.shuffle.io.connectionTimeout": "10s",
    "spark.shuffle.io.maxRetries": "1",
    "spark.shuffle.io.retryWait": "1s",
}


def _ppid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _state(pid: int) -> str:
    """The process's state letter (T: stopped), or "gone"."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "gone"
    state = stat[stat.rindex(")") + 2]
    return "gone" if state in "ZX" else state


def _host(pid: int) -> dict[str, int]:
    """The processes of the host running the Python worker ``pid``, walking its parents:
    PySpark daemon, executor JVM, Spark Worker (each checked by its command line)."""
    daemon = _ppid(pid)
    executor = _ppid(daemon)
    worker = _ppid(executor)
    assert "pyspark.daemon" in _cmdline(daemon), _cmdline(daemon)
    assert "CoarseGrainedExecutorBackend" in _cmdline(executor), _cmdline(executor)
    assert "org.apache.spark.deploy.worker.Worker" in _cmdline(worker), _cmdline(worker)
    return {"python worker": pid, "daemon": daemon, "executor": executor, "worker": worker}


def _lines(text: str, *marks: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if any(m in ln for m in marks))


def _log(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else f"({path}: none)"


@pytest.mark.parametrize("when", ["before_commit", "after_commit"])
def test_frozen_host_zombie_is_fenced(kafka, read_back, two_host_cluster, tmp_path, when) -> None:
    """Task 0 holds at ``when`` (its rows sent, its transaction open; or committed) and
    its host is frozen.  The job succeeds without it: task 0 runs again on the other
    host, fences the old attempt and commits (before_commit) or finds the unit
    committed and skips it (after_commit).  Woken, the old attempt's commit is refused
    by the broker; a read_committed reader finds each row once, before and after."""
    bs, n = kafka.bootstrap_servers, 10_000
    t = new_topic(kafka, "spark-zombie", partitions=2)
    hold = tmp_path / "hold"
    hold.mkdir()
    job = {"mode": "batch", "master": two_host_cluster, "conf": CONF, "executors": 2,
           "bootstrap": bs, "topic": t, "rows": n, "keys": 97, "log_level": "WARN"}  # fmt: skip
    proc = start_job(job, {"tasks": [0], "when": when, "hold": str(hold)})
    host: dict[str, int] = {}
    stopped: list[int] = []
    try:
        assert wait_until((hold / "held").exists, 300, "task 0 to hold", alive=proc), (
            proc.communicate()[1][-5000:]
        )
        host = _host(int((hold / "held").read_text()))
        work = Path(os.readlink(f"/proc/{host['executor']}/cwd"))  # .../work<i>/<app>/<id>
        for name in ("worker", "executor", "daemon", "python worker"):
            os.kill(host[name], signal.SIGSTOP)
            stopped.append(host[name])
        wait_until(lambda: all(_state(p) == "T" for p in stopped), 30, "the host stopped")
        (hold / "go").touch()  # the hook goes on once the Python worker runs again
        rc, reports, err = job_result(proc)
        print(f"{when}: the job ended (exit {rc}) with task 0's first attempt frozen; driver:")
        print(_lines(err, "HeartbeatReceiver", "Lost executor", "Lost task"))
        assert rc == 0, err[-5000:]
        assert {p: _state(p) for p in stopped} == {p: "T" for p in stopped}
        assert not (hold / "outcome").exists() or when == "after_commit"
        (report,) = reports
        assert report["ok"] and report["rows"] == report["delivered"] == n, report["text"]
        tasks = {r["task"]: r for r in report["tasks"]}
        assert sorted(tasks) == [0, 1]
        assert tasks[0]["skipped"] == (when == "after_commit"), report["tasks"]
        got = read_back(bs, t, expected=n)
        assert sorted(int(r.value) for rs in got.values() for r in rs) == list(range(n))

        # Wake the old attempt first, the JVMs after: it goes on with its commit before
        # anything on its host can kill it.
        os.kill(host["python worker"], signal.SIGCONT)
        wait_until((hold / "outcome").exists, 120, "the old attempt's commit")
        outcome = (hold / "outcome").read_text()
        for name in ("daemon", "executor", "worker"):
            os.kill(host[name], signal.SIGCONT)
        stopped.clear()
        print(f"{when}: the woken attempt's commit: {outcome}")
        if when == "before_commit":
            assert "FENCED" in outcome, outcome
        else:
            assert outcome == "committed"
        got = read_back(bs, t, expected=n)
        values = sorted(int(r.value) for rs in got.values() for r in rs)
        print(f"{when}: read_committed after the zombie woke: {len(values)} records, "
              f"{len(set(values))} distinct of {n}")  # fmt: skip
        assert values == list(range(n))
        # The woken host cleans up: the old attempt's processes end.
        gone = (host["python worker"], host["executor"])
        wait_until(lambda: all(_state(p) == "gone" for p in gone), 120, "the zombie to end")
        marks = ("TID", "ence", "FENCED", "hut", "Driver", "SIGTERM", "isassociated")
        print(f"{when}: executor log ({work}):\n{_lines(_log(work / 'stderr'), *marks)}")
        # The Worker's log: <tmp>/worker<i>.log beside its work dir <tmp>/work<i>.
        worker_log = _log(
            work.parents[2] / (work.parents[1].name.replace("work", "worker") + ".log")
        )
        print(f"{when}: Worker log:\n{_lines(worker_log, work.parent.name)}")
    finally:
        for p in stopped:
            os.kill(p, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
