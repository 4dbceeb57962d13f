"""Two `cykafka import --exactly-once` runs of one input at once (one transactional.id):
on Kafka the second fences the first (KIP-98).  The embedded broker (Tansu) does not
fence as Kafka does: a fenced producer's writes and commits can be accepted.  So the
import confirms each commit from the committed view of the log, and a run that cannot
(its progress record did not land, or another run committed in between) stops with a
clear error instead of reporting OK.  Whatever the broker does, a run that exits 0 sent
each of its rows once, and a row twice or missing in the topic is reported by the run
that wrote it (a fenced run the broker let commit after the other's last look)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from support.cli import import_command as _cli
from support.consume import committed_records

ROWS = 3000


def _committed_ids(bootstrap: str, topic: str) -> list[int]:
    return [int(r.value.split(b"-")[1]) for r in committed_records(bootstrap, topic, 1)]


def _two_runs(broker, tmp_path, name: str, second_after: float) -> tuple[list, list[int]]:
    """Start one run, a second one of the same input ``second_after`` s later; both
    (status, stdout, stderr), and the ids in the committed view afterwards."""
    f = tmp_path / "rows.txt"
    if not f.exists():
        f.write_text("".join(f"row-{i}\n" for i in range(ROWS)))
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100", "--rate", "1500"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(_cli(broker.bootstrap_servers, *args), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    time.sleep(second_after)
    second = subprocess.Popen(_cli(broker.bootstrap_servers, *args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    outs = []
    for p in (first, second):
        out, err = p.communicate(timeout=120)
        outs.append((p.returncode, out, err))
    return outs, _committed_ids(broker.bootstrap_servers, name)


def _check(outs: list, ids: list[int]) -> str:
    twice = sum(1 for n in Counter(ids).values() if n > 1)
    missing = ROWS - len(set(ids))
    ok = [rc == 0 for rc, _, _ in outs]
    for rc, out, err in outs:
        assert "Traceback" not in err, err
        if rc != 0:
            assert "does not fence" in out + err or "fenced" in out + err, out + err
    if any(ok) and (twice or missing):
        # A run that says OK sent each of its rows once.  A run this broker did not
        # fence can still commit rows the other one committed, after the other's last
        # look at the log; no client can prevent that on such a broker, but that run
        # then stops and says so.
        assert any(rc != 0 and "does not fence" in out + err for rc, out, err in outs), (
            twice,
            missing,
            [o[:2] for o in outs],
        )
    return f"exit {[rc for rc, _, _ in outs]}, rows twice {twice}, missing {missing}"


def test_second_run_of_one_input_never_leaves_a_false_ok(broker, topic, tmp_path) -> None:
    outs, ids = _two_runs(broker, tmp_path, topic(), 0.8)
    print(_check(outs, ids))


@pytest.mark.slow
def test_concurrent_runs_at_random_points(fresh_broker, tmp_path) -> None:
    import random

    rng = random.Random(int(os.environ.get("CYKAFKA_FENCING_SEED", random.randrange(1 << 30))))
    for i in range(20):
        name = fresh_broker.create_topic(f"twice-{i}", partitions=1)
        outs, ids = _two_runs(fresh_broker, tmp_path, name, rng.uniform(0.0, 1.5))
        print(i, _check(outs, ids))


#: ``cykafka import``, held right after it has read where to resume from until the
#: committed progress of its key grows (``sys.argv[1]``: a file it creates when held):
#: the moment another run can commit in, made wide enough to hit every time.
_HELD_AFTER_RESUME_READ = """
import pathlib, sys, time
import cykafka.importer.progress_records as pt
import cykafka.importer.exactly_once, cykafka.importer.txn_sink
from cykafka.cli.main import main

real, marker, reads = pt.committed_progress, pathlib.Path(sys.argv[1]), []

def held(client, name, key, timeout=60.0, **kw):
    seen = real(client, name, key, timeout, **kw)
    if not reads:  # the run's first read: where it resumes from
        reads.append(len(seen))
        marker.touch()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(real(client, name, key, timeout, **kw)) <= len(seen):
            time.sleep(0.01)
    return seen

for mod in list(sys.modules.values()):
    if getattr(mod, "committed_progress", None) is real:
        mod.committed_progress = held
sys.exit(main(sys.argv[2:]))
"""


def _progress(bootstrap: str, tid: str) -> list[bytes]:
    """The committed progress records of transactional.id ``tid``."""
    from cykafka.cluster.committed import committed_messages
    from cykafka.importer.progress_records import DEFAULT_PROGRESS_TOPIC

    try:
        msgs = committed_messages({"bootstrap.servers": bootstrap}, DEFAULT_PROGRESS_TOPIC)
        return [m.value for m in msgs if m.key == tid.encode()]
    except LookupError:  # no import has created the progress topic yet
        return []


def _twin_commits(bootstrap: str, tid: str, value: bytes) -> None:
    """A committed progress record under ``tid``'s key from another transactional.id:
    what a fenced run's commit is on a broker that does not fence."""
    from cykafka import Producer
    from cykafka.importer.progress_records import DEFAULT_PROGRESS_TOPIC

    twin = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{tid}-other"},
                    preset="exactly_once")  # fmt: skip
    twin.init_transactions(10)
    twin.begin_transaction()
    twin.produce(DEFAULT_PROGRESS_TOPIC, value, key=tid.encode())
    twin.commit_transaction(10)
    twin.close()


def test_a_commit_between_the_resume_read_and_the_first_commit_stops_the_import(
    broker, topic, tmp_path
) -> None:
    """A run is killed after some commits; the rerun reads where to resume from, and
    before its first commit another run commits progress of the same import.  The rerun
    resumes from a position that is no longer the last commit: it must notice and stop,
    not confirm its commits against a log it read after that other commit."""
    name, tid = topic(), f"held-{topic()}"
    f = tmp_path / "rows.txt"
    f.write_text("".join(f"row-{i}\n" for i in range(ROWS)))
    args = ["import", "-b", broker.bootstrap_servers, "--no-progress", str(f), "-t", name,
            "--exactly-once", "--commit-every", "100", "--rate", "1500",
            "--transactional-id", tid]  # fmt: skip
    first = subprocess.Popen([sys.executable, "-m", "cykafka.cli", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_progress(broker.bootstrap_servers, tid)) < 2:
        time.sleep(0.05)
    first.kill()
    first.wait()
    last = _progress(broker.bootstrap_servers, tid)[-1]
    marker = tmp_path / "held"
    rerun = subprocess.Popen([sys.executable, "-c", _HELD_AFTER_RESUME_READ, str(marker), *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not marker.exists():
            time.sleep(0.01)
        _twin_commits(broker.bootstrap_servers, tid, last)
        out, err = rerun.communicate(timeout=120)
    finally:
        if rerun.poll() is None:
            rerun.kill()
            rerun.wait()
    assert "Traceback" not in err, err
    assert rerun.returncode == 1, out + err
    assert "another producer of this import committed progress in between" in out, out + err
    assert "result      NOT OK" in out


def test_a_commit_the_committed_log_does_not_confirm_stops_the_import(broker, topic, tmp_path):
    """What a broker that does not fence lets happen: another producer commits progress
    for this import between two of its commits.  Here that producer is real (another
    transactional.id writing a committed record under this import's key, as the
    fenced twin would on such a broker); the import must notice it from the committed
    log, stop with a clear error and exit non-zero, not report OK."""
    from cykafka import Producer
    from cykafka.importer.progress_records import DEFAULT_PROGRESS_TOPIC as PROGRESS

    def progress() -> list[bytes]:  # this import's committed progress records
        from cykafka.cluster.committed import committed_messages

        try:
            msgs = committed_messages({"bootstrap.servers": broker.bootstrap_servers}, PROGRESS)
            return [m.value for m in msgs if m.key == tid.encode()]
        except LookupError:  # the import has not created the progress topic yet
            return []

    name = topic()
    f = tmp_path / "rows.txt"
    f.write_text("".join(f"row-{i}\n" for i in range(ROWS)))
    tid = f"twin-{name}"
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100", "--rate", "1500",
            "--transactional-id", tid]  # fmt: skip
    proc = subprocess.Popen(_cli(broker.bootstrap_servers, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    client = {"bootstrap.servers": broker.bootstrap_servers}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(progress()) < 2:
            time.sleep(0.05)
        last = progress()[-1]
        twin = Producer({**client, "transactional.id": f"{tid}-other"}, preset="exactly_once")
        twin.init_transactions(10)
        twin.begin_transaction()
        twin.produce(PROGRESS, last, key=tid.encode())
        twin.commit_transaction(10)
        twin.close()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    assert "this broker does not fence transactional producers as Kafka does (KIP-98)" in out
    assert "another producer of this import committed progress in between" in out
    assert "result      NOT OK" in out
