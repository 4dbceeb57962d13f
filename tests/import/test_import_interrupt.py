"""Ctrl-C at a random point of a real `cykafka import`: every row's reported fate is
its real fate.  A real SIGINT goes to a real subprocess; the topic is then read back
from offset 0 with assign() and compared with the summary and the dead-letter file:
no "not sent" row is in the topic, every delivered row is, and every row in the topic
is counted delivered or unknown."""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.cluster_faults import Watermarks
from support.consume import committed_records
from support.import_signals import stop_after

ROWS = 3_000_000
#: The client's wait for the stalled broker's answers in the "stall" mode (librdkafka's
#: socket.timeout.ms, 60 s by default): a stop that waited for them would take this long
#: at least.  The import purges them instead once its INTERRUPT_WAIT_S is up, then
#: reports every row purged: work of its own that grows with the rows (6 s on a quiet
#: machine, 27.7 s on a loaded one), bounded by STOP_S.
STALL_SOCKET_MS = 120_000
STOP_S = 60


def _rows(tmp_path_factory: pytest.TempPathFactory, n: int) -> Path:
    """A rows.txt of ``n`` 13-byte lines ``row-00000000`` ..."""
    f = tmp_path_factory.mktemp("interrupt") / "rows.txt"
    with open(f, "wb") as out:
        for lo in range(0, n, 100_000):
            out.write(b"".join(b"row-%08d\n" % i for i in range(lo, lo + 100_000)))
    return f


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _rows(tmp_path_factory, ROWS)


@pytest.fixture(scope="module")
def long_rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twice the rows: an import of 3 M lines can finish within the soak's 1.2 s."""
    return _rows(tmp_path_factory, 2 * ROWS)


@dataclass
class Run:
    mode: str
    delay: float
    status: int
    read: int
    delivered: int
    not_sent: int
    unknown: int
    in_topic: int
    unknown_in_topic: int
    took: float

    def line(self) -> str:
        return (
            f"{self.mode:6} Ctrl-C at +{self.delay:.2f}s exit {self.status}: read {self.read:,} = "
            f"delivered {self.delivered:,} + not sent {self.not_sent:,} + unknown "
            f"{self.unknown:,}; topic {self.in_topic:,} (of which unknown "
            f"{self.unknown_in_topic:,}); stopped in {self.took:.1f}s"
        )


def _count(out: str, label: str) -> int:
    return int(out.split(f"\n  {label}")[1].split()[0].replace(",", ""))


def _fates(out: str) -> tuple[int, int, int, int]:
    """The summary's rows read, delivered, not sent and unknown."""
    read, delivered = _count(out, "rows read"), _count(out, "delivered")
    return read, delivered, _count(out, "not sent"), _count(out, "unknown")


def interrupt_import(
    broker, read_back, name, rows_file: Path, tmp: Path, mode: str, delay: float, rows: int = ROWS
):
    """Start `cykafka import`, SIGINT it ``delay`` s after it starts reading (``mode``
    "linger": librdkafka holds batches 4 s, so the purge finds them queued; "stall":
    the broker is SIGSTOPped just before, so requests are in flight), and check every
    row's reported fate against the topic."""
    dead = tmp / f"dead-{name}.jsonl"
    extra = {
        "linger": ["-X", "linger.ms=4000"],
        "stall": ["-X", f"socket.timeout.ms={STALL_SOCKET_MS}"],
    }.get(mode, [])
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", "--dead-letter", str(dead), *extra, str(rows_file)]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    stopped = False
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert "reading" in first, first
        time.sleep(delay)
        if mode == "stall":
            os.kill(broker.pid, signal.SIGSTOP)
            stopped = True
            time.sleep(0.3)
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=STALL_SOCKET_MS / 1000 + 30)
        took = time.monotonic() - t
    finally:
        if stopped:
            os.kill(broker.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # -SIGINT: the import had finished and was exiting when Ctrl-C came; Python then
    # ends by the signal, as a shell expects of an interrupted program.
    assert proc.returncode in (0, 130, -signal.SIGINT), (out, err)
    read, delivered, not_sent, unknown = _fates(out)
    assert read == delivered + not_sent + unknown, out

    entries = [json.loads(line) for line in dead.read_text().splitlines()] if dead.exists() else []
    fates = {int(e["value"][4:]): e["fate"] for e in entries}
    assert len(fates) == len(entries) == not_sent + unknown, out
    assert sum(f == "not sent" for f in fates.values()) == not_sent
    assert set(fates) <= set(range(read))  # rows are read in order
    dl_not_sent = {i for i, f in fates.items() if f == "not sent"}
    dl_unknown = {i for i, f in fates.items() if f == "unknown"}
    dl_delivered = set(range(read)) - set(fates)

    # up to 2 x ROWS rows at the soak's longest delay: more than 30 s of reading on Tansu
    got = read_back(broker.bootstrap_servers, name, timeout=180)
    values = [r.value for rs in got.values() for r in rs]
    in_topic = {int(v[4:]) for v in values}
    assert len(values) == len(in_topic), "duplicates in the topic"
    assert not dl_not_sent & in_topic, "rows reported 'not sent' are in the topic"
    assert dl_delivered <= in_topic, "rows reported delivered are missing"
    assert in_topic <= dl_delivered | dl_unknown, "rows in the topic counted neither way"
    if proc.returncode == 130:
        assert "interrupted (Ctrl-C)" in out and took < STOP_S, (took, out)
        if read:
            # where the rest starts: the first row not read (lines: row = line)
            where = f"the next is rows.txt row {read + 1:,} (line {read + 1:,}, byte {read * 13:,})"
            assert where in out, out
            assert f"--skip-rows {read}" in _printed(out), out
    else:
        assert read == delivered == rows, out
    return Run(mode, delay, proc.returncode, read, delivered, not_sent, unknown,
               len(in_topic), len(in_topic & dl_unknown), took)  # fmt: skip


@pytest.mark.parametrize("mode", ["plain", "linger"])
def test_ctrl_c_fates_match_the_topic(broker, topic, read_back, rows_file, tmp_path, mode):
    run = interrupt_import(
        broker, read_back, topic(partitions=3), rows_file, tmp_path, mode, random.uniform(0.05, 0.6)
    )
    print(run.line())
    if mode == "linger":  # batches held by linger.ms are purged from the queue: not sent
        assert run.status == 130 and run.not_sent > 0, run


def test_ctrl_c_fates_match_the_topic_broker_stalled(fresh_broker, read_back, rows_file, tmp_path):
    name = fresh_broker.create_topic("stall", partitions=3)
    run = interrupt_import(
        fresh_broker, read_back, name, rows_file, tmp_path, "stall", random.uniform(0.05, 0.4)
    )
    print(run.line())
    assert run.status == 130 and run.not_sent + run.unknown > 0, run


@pytest.mark.slow
def test_ctrl_c_fates_match_the_topic_at_24_random_points(
    fresh_broker, read_back, long_rows_file, tmp_path
):
    """The soak: 24 interrupt points, the three modes in turn (`-s` shows the table)."""
    seed = int(os.environ.get("CYKAFKA_INTERRUPT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"\nseed {seed}")
    runs = []
    for i in range(24):
        mode = ("plain", "linger", "stall")[i % 3]
        name = fresh_broker.create_topic(f"soak-{i}", partitions=3)
        delay = rng.uniform(0.05, 1.2)
        runs.append(
            interrupt_import(
                fresh_broker, read_back, name, long_rows_file, tmp_path, mode, delay, 2 * ROWS
            )
        )
        print(f"{i:2} {runs[-1].line()}")
    assert sum(r.status == 130 for r in runs) >= 20


# -- every stop, every path: SIGTERM and SIGHUP as SIGINT, exactly-once as plain ----------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_a_plain_import_like_ctrl_c(
    broker, topic, read_back, rows_file, tmp_path, sig
):
    """What schedulers send (Airflow, systemd, Kubernetes, `timeout`): the same stop as
    Ctrl-C, with the summary, the dead letters and the exit status 128+signal."""
    name = topic(partitions=3)
    dead = tmp_path / "dead.jsonl"
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", "--dead-letter", str(dead), "-X", "linger.ms=4000",
           str(rows_file)]  # fmt: skip
    status, out, err = stop_after(cmd, sig, "reading", 0.3)
    assert status == 128 + sig, (status, out, err)
    read, delivered, not_sent, unknown = _fates(out)
    assert 0 < read < ROWS and read == delivered + not_sent + unknown, out
    assert f"stopped     {signal.Signals(sig).name}" in out, out
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    assert len(entries) == not_sent + unknown > 0, out  # linger.ms holds batches: purged
    got = read_back(broker.bootstrap_servers, name, timeout=120)
    in_topic = {int(r.value[4:]) for rs in got.values() for r in rs}
    assert set(range(read)) - {int(e["value"][4:]) for e in entries} <= in_topic


def _exactly_once_cmd(bootstrap: str, name: str, rows_file: Path) -> list[str]:
    return [sys.executable, "-m", "cykafka.cli", "import", "-b", bootstrap, "-t", name,
            "--no-progress", "--exactly-once", "--commit-every", "200000", "--rate", "200000",
            str(rows_file)]  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_exactly_once_stop_adds_up_and_the_same_command_finishes(
    broker, topic, rows_file, tmp_path, sig
):
    """A stopped --exactly-once import commits what it handed over (or says the open
    transaction's rows were not sent), its counts add up, it says to run the same
    command again, and that command finishes with every row once."""
    name = topic()
    cmd = _exactly_once_cmd(broker.bootstrap_servers, name, rows_file)
    # the first progress line (5 s): commits were made
    status, out, err = stop_after(cmd, sig, " delivered, ")
    assert status == 128 + sig, (status, out, err)
    read, delivered, not_sent, unknown = _fates(out)
    assert read == delivered + not_sent + unknown, out
    committed = committed_records(broker.bootstrap_servers, name, 1)
    assert len(committed) == delivered < ROWS, out
    assert "run the same command again" in out, out
    assert " transactions committed (transactional.id cykafka-import-" in out, out
    assert "Without duplicates: import" not in out and "Or use --exactly-once" not in out, out
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    values = [r.value for r in committed_records(broker.bootstrap_servers, name, 1)]
    assert values == [b"row-%08d" % i for i in range(ROWS)]


@pytest.mark.parametrize("exactly_once", [False, True], ids=["plain", "exactly-once"])
def test_started_in_a_scripts_background_sigint_stops_it(
    broker, topic, rows_file, tmp_path, exactly_once
):
    """`cykafka import ... &` in a script: the shell starts it with SIGINT ignored.
    `kill -INT` stops it all the same, the plain and the exactly-once import alike."""
    name = topic()
    cmd = _exactly_once_cmd(broker.bootstrap_servers, name, rows_file)
    if not exactly_once:
        at = cmd.index("--exactly-once")
        del cmd[at : at + 3]  # --exactly-once --commit-every N
    # (--rate: the import is still running when the signal comes, once rows are in.
    # Rows written, not committed: a read of the log for its commits grows with the log,
    # the high watermarks are one request; on a loaded machine the exactly-once import
    # had ended before the signal came.)
    script = " ".join(f"'{a}'" for a in cmd) + " & echo $! >&2; wait $!"
    marks = Watermarks(broker.bootstrap_servers, name)
    try:
        status, out, err = stop_after(
            ["bash", "-c", script], signal.SIGINT, "reading", pid_first=True,
            ready=lambda: marks.total() > 0,
        )  # fmt: skip
    finally:
        marks.close()
    assert status == 130, (status, out, err)
    read = _count(out, "rows read")
    assert 0 < read < ROWS, out


def _printed_command(out: str) -> list[str]:
    """The command the summary prints to finish the import, as a runnable argv."""
    import shlex

    line = next(x for x in out.splitlines() if x.strip().startswith("cykafka import"))
    argv = shlex.split(line)
    return [sys.executable, "-m", "cykafka.cli", *argv[1:]]


def _printed(out: str) -> str:
    return " ".join(_printed_command(out))


def test_the_printed_command_finishes_a_stopped_plain_import(broker, topic, read_back, tmp_path):
    """SIGTERM a plain import of a glob of CSV files, one compressed: the command the
    summary prints (--skip-rows) imports the rest, and with the rows not sent (dead
    letters) every row is in the topic; only rows reported unknown may be there twice."""
    import gzip

    n = 300_000
    parts = tmp_path / "parts"
    parts.mkdir()
    body = [f"{i},u{i % 7}\n" for i in range(n)]
    (parts / "part-0.csv.gz").write_bytes(
        gzip.compress(("id,user\n" + "".join(body[: n // 2])).encode())
    )
    (parts / "part-1.csv").write_text("id,user\n" + "".join(body[n // 2 :]))
    name = topic(partitions=2)
    dead = tmp_path / "dead.jsonl"
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", "--dead-letter", str(dead), "--rate", "100000",
           str(parts / "part-*")]  # fmt: skip
    # in the second file, once rows of it are written: the skip crosses a file (0.3 s
    # after the import named it, a busy machine had read no row of it yet)
    marks = Watermarks(broker.bootstrap_servers, name)
    try:
        status, out, err = stop_after(
            cmd, signal.SIGTERM, "part-1.csv", ready=lambda: marks.total() > n // 2
        )
    finally:
        marks.close()
    assert status == 143, (out, err)
    read, delivered, not_sent, unknown = _fates(out)
    assert n // 2 < read < n and read == delivered + not_sent + unknown, out
    finish = _printed_command(out)
    assert f"--skip-rows {read}" in " ".join(finish), out
    dead_rows = (
        [json.loads(line) for line in dead.read_text().splitlines()] if dead.exists() else []
    )
    unknown = {json.loads(e["value"])["id"] for e in dead_rows if e["fate"] == "unknown"}
    resend = [e for e in dead_rows if e["fate"] == "not sent"]
    rest = subprocess.run(finish, capture_output=True, text=True, timeout=120)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert _count(rest.stdout, "rows read") == n - read, rest.stdout
    got = read_back(broker.bootstrap_servers, name, timeout=120)
    ids = [json.loads(r.value)["id"] for rs in got.values() for r in rs]
    ids += [json.loads(e["value"])["id"] for e in resend]
    assert sorted(set(ids)) == list(range(n))
    twice = {i for i, k in collections.Counter(ids).items() if k > 1}
    assert twice <= unknown


def test_exactly_once_second_signal_abandons_a_stalled_commit(fresh_broker, rows_file, tmp_path):
    """The broker stops answering, the first SIGTERM's commit waits for it: a second
    SIGTERM abandons the open transaction at once (its rows reported unknown; the broker
    aborts it), and once the broker is back the same command finishes, every row once."""
    from support.import_signals import wait_for

    bs = fresh_broker.bootstrap_servers
    name = fresh_broker.create_topic("stalled", partitions=1)
    cmd = _exactly_once_cmd(bs, name, rows_file)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = False
    try:
        wait_for(proc, " delivered, ")  # commits were made
        os.kill(fresh_broker.pid, signal.SIGSTOP)
        stopped = True
        proc.send_signal(signal.SIGTERM)
        wait_for(proc, "SIGTERM: stopping")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)  # a hang guard: the commit alone waits 10 s
    finally:
        if stopped:
            os.kill(fresh_broker.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, (out, err)
    read, delivered, not_sent, unknown = _fates(out)
    assert read == delivered + not_sent + unknown and unknown > 0, out
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stdout + again.stderr
    values = [r.value for r in committed_records(bs, name, 1)]
    assert values == [b"row-%08d" % i for i in range(ROWS)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_starting_stops_and_says_nothing_was_sent(tmp_path, sig) -> None:
    """A scheduler's SIGTERM can come while the import still checks the cluster: it
    stops then too, saying that nothing was sent, with 128+signal (not killed by it
    with no word)."""
    rows = tmp_path / "rows.txt"
    rows.write_text("a\nb\n")
    with socket.socket() as silent:  # accepts the cluster check's connection, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.settimeout(60)
        proc = subprocess.Popen(
            [sys.executable, "-m", "cykafka.cli", "import", "-b",
             f"127.0.0.1:{silent.getsockname()[1]}", "--topic", "t", "--no-progress",
             str(rows)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        conn, _ = silent.accept()  # the import is starting: it has not read a row
        with conn:
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (proc.returncode, out, err)
    name = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert f"{name} before any row was read: stopped, nothing was sent" in err, err
