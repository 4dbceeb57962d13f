"""`cykafka import --exactly-once`: killed, stalled and rerun imports hold every row once.

Imports run as child processes (``python -m cykafka.cli``), killed with SIGKILL at random
moments; the topic is then read back with ``support.consume.committed_records`` (a plain
read_committed consumer on Apache Kafka, independent of the code under test), and every
row must be there exactly once, in file order.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cykafka.testing import read_raw_log
from support.cli import import_command as _cli
from support.cluster_faults import wait_until
from support.consume import committed_records, committed_so_far
from support.import_signals import lose_the_log_mid_import

SEED = int(os.environ.get("CYKAFKA_PROPERTY_SEED", "0"))


def _run(bootstrap: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run(_cli(bootstrap, *args), capture_output=True, text=True, timeout=timeout)


def _kill_once_committed(
    bootstrap: str, topic: str, rows: int, *args: str, parts: int = 1, then: float = 0.0
) -> int:
    """Start an import, SIGKILL it once ``rows`` rows are committed (``then`` s later:
    inside a transaction); the committed count.  A point reached by a condition, not
    a time since the start, which a busy machine stretches past the whole run."""
    proc = subprocess.Popen(_cli(bootstrap, *args), stdout=subprocess.DEVNULL)

    def reached() -> bool:
        return committed_so_far(bootstrap, topic, parts) >= rows

    # The import may finish first (it had fewer rows left): then there is none to kill.
    wait_until(reached, 120, f"{rows} committed rows of {topic}", alive=proc)
    time.sleep(then)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    return len(_committed(bootstrap, topic, parts))


def _kill_at_random_points(rng: random.Random, bootstrap: str, topic: str, *args: str,
                           parts: int = 1) -> None:  # fmt: skip
    """Three SIGKILLs at random points of a 1,500-row input: after 0 to 1,400 committed
    rows, then up to 0.3 s more (--rate 1000: up to 300 rows into the next ones)."""
    for rows in sorted(rng.randrange(0, 1400) for _ in range(3)):
        _kill_once_committed(
            bootstrap, topic, rows, *args, "--rate", "1000", parts=parts, then=rng.uniform(0, 0.3)
        )


def _committed(bootstrap: str, topic: str, partitions: int = 1) -> list[Any]:
    return committed_records(bootstrap, topic, partitions)


def _write(tmp: Path, fmt: str, name: str, ids: range) -> Path:
    """A file of rows {"id": i, "user": "u<i%5>"}; lines: "line-<i>"."""
    if fmt == "lines":
        f = tmp / f"{name}.txt"
        f.write_text("".join(f"line-{i}\n" for i in ids))
    elif fmt == "csv":
        f = tmp / f"{name}.csv"
        f.write_text("id,user\n" + "".join(f"{i},u{i % 5}\n" for i in ids))
    elif fmt == "jsonl":
        f = tmp / f"{name}.jsonl"
        f.write_text("".join(json.dumps({"id": i, "user": f"u{i % 5}"}) + "\n" for i in ids))
    else:
        f = tmp / f"{name}.parquet"
        table = pa.table({"id": list(ids), "user": [f"u{i % 5}" for i in ids]})
        pq.write_table(table, f, row_group_size=97)
    return f


def _ids(fmt: str, records: list[Any]) -> list[int]:
    if fmt == "lines":
        return [int(r.value.split(b"-")[1]) for r in records]
    return [int(json.loads(r.value)["id"]) for r in records]


def _check_once_in_order(fmt: str, records: list[Any], n: int, keyed: bool) -> None:
    ids = _ids(fmt, records)
    dup = sorted({i for i in ids if ids.count(i) > 1})
    assert not dup, f"rows committed twice: {dup[:10]}"
    assert sorted(ids) == list(range(n)), f"rows missing: {sorted(set(range(n)) - set(ids))[:10]}"
    if keyed:  # file order within each key
        by_key: dict[bytes, list[int]] = {}
        for r, i in zip(records, ids):
            by_key.setdefault(r.key, []).append(i)
        assert all(v == sorted(v) for v in by_key.values())
    else:
        assert ids == sorted(ids)


@pytest.mark.parametrize("fmt", ["lines", "csv", "jsonl", "parquet"])
def test_sigkill_at_random_points_then_rerun_commits_each_row_once(
    broker, topic, tmp_path, fmt
) -> None:
    rng = random.Random(SEED ^ hash(fmt))
    bs = broker.bootstrap_servers
    # Two input files: the kills land in either, and in the switch between them.
    files = [
        _write(tmp_path, fmt, "a", range(0, 700)),
        _write(tmp_path, fmt, "b", range(700, 1500)),
    ]
    keyed = fmt != "lines"
    name = topic(partitions=1 if not keyed else 2)
    args = [*map(str, files), "-t", name, "--exactly-once", "--commit-every", "53"]
    if keyed:
        args += ["--key-field", "user"]
    _kill_at_random_points(rng, bs, name, *args, parts=2 if keyed else 1)
    done = _run(bs, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    records = _committed(bs, name, 2 if keyed else 1)
    _check_once_in_order(fmt, records, 1500, keyed)
    # The final run says where it went on from (or that all was committed already).
    assert re.search(r"resumed at row [\d,]+ of |nothing to do|started", done.stdout), done.stdout
    # And verify agrees, with the same options.
    ver = subprocess.run(
        [sys.executable, "-m", "cykafka.cli", "verify", "-b", bs, *map(str, files), "-t", name]
        + (["--key-field", "user"] if keyed else []),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ver.returncode == 0, ver.stdout + ver.stderr


def test_resume_summary_names_the_row(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "csv", "orders", range(2000))
    name = topic()
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100"]
    committed = _kill_once_committed(bs, name, 300, *args, "--rate", "500")
    assert 300 <= committed < 2000
    done = _run(bs, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"resumed at row {committed + 1:,} of {f}" in done.stdout, done.stdout
    _check_once_in_order("csv", _committed(bs, name), 2000, keyed=False)
    # A third run finds everything committed and sends nothing.
    again = _run(bs, *args)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    assert len(_committed(bs, name)) == 2000


def test_resume_summary_names_the_next_file_when_the_last_one_was_done(tmp_path) -> None:
    """Stopped between a file's last commit and the next file's first: the summary
    says where the run goes on, as for a file stopped midway."""
    from cykafka.importer.identity import FileIdentity
    from cykafka.importer.progress_records import FileProgress, Progress
    from cykafka.importer.resume_state import Input, Outcome, note_start

    def ident(name: str) -> FileIdentity:
        return FileIdentity(str(tmp_path / name), 1, 1, "")

    def inp(name: str) -> Input:
        return Input(name, str(tmp_path / name), True, lambda start, report: iter(()))

    files = [FileProgress(ident("a"), row=701, done=True), FileProgress(ident("b"))]
    out = Outcome()
    note_start(Progress("t", "csv", {}, files, rows=700), [inp("a"), inp("b")], False, out)
    assert out.notes == ["a: already committed by an earlier run", "resumed at row 1 of b"]
    # A first run (nothing saved) says nothing about resuming.
    fresh = Outcome()
    note_start(Progress("t", "csv", {}, [FileProgress(ident("a"))]), [inp("a")], False, fresh)
    assert fresh.notes == []


def test_changed_input_is_refused_then_restart(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "lines", "events", range(3000))
    name = topic()
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100"]
    before = _kill_once_committed(bs, name, 200, *args, "--rate", "300")
    assert 0 < before < 3000
    # Same size, other content at the start: the fingerprint differs.
    body = f.read_bytes()
    f.write_bytes(b"LINE" + body[4:])
    refused = _run(bs, *args)
    assert refused.returncode != 0
    msg = refused.stdout + refused.stderr
    assert f"{f} changed since row" in msg and "--restart" in msg, msg
    assert len(_committed(bs, name)) == before  # nothing sent
    fresh = _run(bs, *args, "--restart")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert len(_committed(bs, name)) == before + 3000


def test_stdin_needs_restart_and_compressed_does_not(broker, topic, tmp_path) -> None:
    import gzip

    bs = broker.bootstrap_servers
    name = topic()
    gz = tmp_path / "rows.txt.gz"
    gz.write_bytes(gzip.compress(b"".join(b"r%d\n" % i for i in range(50))))
    ok = _run(bs, str(gz), "-t", name, "--exactly-once")  # resumes by reading it again
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert [r.value for r in _committed(bs, name)] == [b"r%d" % i for i in range(50)]
    piped = subprocess.run(
        _cli(bs, "-", "--format", "lines", "-t", name, "--exactly-once"),
        input="x\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode != 0
    assert "standard input cannot be read from a position" in piped.stdout + piped.stderr


def test_broker_stalled_past_the_transaction_timeout(fresh_broker, tmp_path) -> None:
    """SIGSTOP the broker for longer than transaction.timeout.ms mid-import, SIGCONT:
    the import finishes with every row committed once."""
    bs = fresh_broker.bootstrap_servers
    name = fresh_broker.create_topic("stalled", partitions=1)
    f = _write(tmp_path, "jsonl", "rows", range(3000))
    args = [
        str(f),
        "-t",
        name,
        "--exactly-once",
        "--commit-every",
        "200",
        "--rate",
        "1000",
        "-X",
        "transaction.timeout.ms=2000",
    ]
    proc = subprocess.Popen(
        _cli(bs, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    # Mid-import: a first transaction committed, the next ones to come.
    wait_until(lambda: committed_so_far(bs, name) >= 200, 120, "a first commit", alive=proc)
    assert proc.poll() is None, "the import ended before the stall"
    assert fresh_broker.pid is not None
    os.kill(fresh_broker.pid, signal.SIGSTOP)
    try:
        time.sleep(4.0)  # twice the transaction timeout
    finally:
        os.kill(fresh_broker.pid, signal.SIGCONT)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    _check_once_in_order("jsonl", _committed(bs, name), 3000, keyed=False)


def _rows_from(fmt: str, path: Path, start: Any, options: Any, fields: Any) -> list[tuple]:
    from cykafka.importer import READERS, Source

    got = []
    problems: list[Any] = []
    for chunk in READERS[fmt].read(
        Source(str(path), str(path)), fields, options, problems.append, start=start
    ):
        keys, values = chunk.items(chunk.keys), chunk.items(chunk.values)
        got.extend(
            (chunk.row_of(i), chunk.line_of(i), keys[i], values[i]) for i in range(len(chunk))
        )
    return got + [("problem", p.row, p.line) for p in problems if p.stage == "parse"]


@pytest.mark.parametrize("fmt", ["lines", "csv", "jsonl", "parquet"])
def test_reading_from_any_saved_position_continues_exactly(tmp_path, fmt) -> None:
    """A resumed import reads from a chunk's position: the rows from there (numbers,
    lines, keys, values, reported problems) are exactly the tail of a full read."""
    from cykafka.importer import Fields, ReadOptions

    rng = random.Random(SEED ^ 7)
    if fmt == "lines":
        f = tmp_path / "in.txt"
        f.write_bytes(
            b"".join(
                rng.choice([b"", b"a\r", b"x" * rng.randrange(50)]) + b"%d\n" % i
                for i in range(400)
            )
        )
        fields = Fields()
    elif fmt == "csv":  # quoted newlines, blank lines and a malformed row
        f = tmp_path / "in.csv"
        rows = ["id,user,note"]
        for i in range(400):
            note = rng.choice(["", '"two\nlines"', '"a ""q"""', "plain"])
            rows.append(f"{i},u{i % 3},{note}" if i != 77 else f"{i},bad")
            if i % 50 == 0:
                rows.append("")
        f.write_text("\n".join(rows) + "\n")
        fields = Fields(key="user")
    elif fmt == "jsonl":
        f = tmp_path / "in.jsonl"
        lines = [json.dumps({"id": i, "user": f"u{i % 3}"}) for i in range(400)]
        lines[120] = "{not json"
        lines[200] = ""
        f.write_text("\n".join(lines) + "\n")
        fields = Fields(key="user")
    else:
        f = tmp_path / "in.parquet"
        pq.write_table(
            pa.table({"id": list(range(400)), "user": [f"u{i % 3}" for i in range(400)]}),
            f,
            row_group_size=61,
        )
        fields = Fields(key="user")
    options = ReadOptions(block_bytes=997, batch_rows=23)  # many chunks, odd boundaries
    full = _rows_from(fmt, f, None, options, fields)
    from cykafka.importer import READERS, Source

    chunks = list(READERS[fmt].read(Source(str(f), str(f)), fields, options, lambda p: None))
    assert len(chunks) >= 4
    for chunk in rng.sample(chunks, 4):
        i = rng.randrange(len(chunk))
        pos = chunk.position(i)
        tail = _rows_from(fmt, f, pos, options, fields)
        data = [r for r in tail if r[0] != "problem"]
        expect = [r for r in full if r[0] != "problem" and r[0] >= pos.row]
        assert data == expect, (pos, data[:3], expect[:3])
        assert [r for r in tail if r[0] == "problem"] == [
            r for r in full if r[0] == "problem" and r[1] >= pos.row
        ]
        if chunk.end is not None:
            after_end = _rows_from(fmt, f, chunk.end, options, fields)
            assert [r for r in after_end if r[0] != "problem"] == [
                r for r in full if r[0] != "problem" and r[0] >= chunk.end.row
            ]


def test_dead_letter_holds_each_rejected_row_once_across_kills(broker, topic, tmp_path) -> None:
    """Malformed rows go to the dead-letter file with the commit that covers them; a
    resumed run cuts the file back to the committed size, so each is listed once."""
    rng = random.Random(SEED ^ 11)
    bs = broker.bootstrap_servers
    f = tmp_path / "orders.csv"
    bad = set(rng.sample(range(1500), 25))
    f.write_text(
        "id,user\n"
        + "".join(f"{i},u{i % 5},extra\n" if i in bad else f"{i},u{i % 5}\n" for i in range(1500))
    )
    dead = tmp_path / "rejected.jsonl"
    name = topic()
    args = [
        str(f),
        "-t",
        name,
        "--exactly-once",
        "--commit-every",
        "61",
        "--dead-letter",
        str(dead),
    ]
    _kill_at_random_points(rng, bs, name, *args)
    done = _run(bs, *args)
    # 1: the run that reads a malformed row is not OK; 0: all was committed before
    assert done.returncode in (0, 1), done.stdout + done.stderr
    rows = [json.loads(line)["row"] for line in dead.read_text().splitlines()]
    assert sorted(rows) == sorted(i + 1 for i in bad), rows
    ids = [int(json.loads(r.value)["id"]) for r in _committed(bs, name)]
    assert ids == [i for i in range(1500) if i not in bad]


def test_commit_every_rows_and_seconds(broker, topic, tmp_path) -> None:
    from cykafka.importer.exactly_once_options import parse_commit_every

    assert parse_commit_every("5000") == (5000, 10.0)
    assert parse_commit_every("2s") == (1_000_000, 2.0)
    assert parse_commit_every("100_000,250ms") == (100_000, 0.25)
    for bad in ("0", "x", "-3s", "10,"):
        with pytest.raises(ValueError, match="--commit-every"):
            parse_commit_every(bad)
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "lines", "rows", range(1200))
    name = topic()
    # 1200 rows at 400 rows/s (3 s; the pace counts from the start, so rows paced after a
    # slow start-up still take over a second) with a commit every 0.3 s: rows alone
    # would make one commit (at the end).
    out = _run(bs, str(f), "-t", name, "--exactly-once", "--commit-every", "0.3s", "--rate", "400")
    assert out.returncode == 0, out.stdout + out.stderr
    n = int(re.search(r"([\d,]+) transactions committed", out.stdout).group(1))
    assert n >= 3, out.stdout
    _check_once_in_order("lines", _committed(bs, name), 1200, keyed=False)
    bad = _run(bs, str(f), "-t", name, "--commit-every", "10")
    assert bad.returncode == 2 and "--commit-every needs --exactly-once" in bad.stderr


def test_help_shows_the_real_defaults() -> None:
    from cykafka.cli import exactly_once
    from cykafka.importer.exactly_once_options import DEFAULT_COMMIT_ROWS, DEFAULT_COMMIT_SECONDS
    from cykafka.importer.progress_records import DEFAULT_PROGRESS_TOPIC

    assert exactly_once.HELP_COMMIT_EVERY == f"{DEFAULT_COMMIT_ROWS},{DEFAULT_COMMIT_SECONDS:g}s"
    assert exactly_once.HELP_PROGRESS_TOPIC == DEFAULT_PROGRESS_TOPIC


def test_transactional_id_and_progress_topic_can_be_named(broker, topic, tmp_path) -> None:
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "jsonl", "rows", range(1500))
    name = topic()
    progress = f"progress-{name}"
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100"]
    args += ["--transactional-id", f"loader-{name}", "--progress-topic", progress]
    committed = _kill_once_committed(bs, name, 200, *args, "--rate", "400")
    assert 200 <= committed < 1500
    done = _run(bs, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"resumed at row {committed + 1:,} of {f}" in done.stdout
    assert f"transactional.id loader-{name}, progress in topic '{progress}'" in done.stdout
    _check_once_in_order("jsonl", _committed(bs, name), 1500, keyed=False)
    last = json.loads(
        [r for r in _committed(bs, progress) if r.key == f"loader-{name}".encode()][-1].value
    )
    assert last["done"] and last["rows"] == 1500 and last["topic"] == name


# What changes between a stopped run and its rerun: the rerun continues the same
# import exactly, or refuses before sending anything, naming what changed.


def _refused(bs: str, name: str, before: int, *args: str, parts: int = 1) -> str:
    """Run the import, which must refuse (exit 2) and send nothing; its message."""
    out = _run(bs, *args)
    msg = out.stdout + out.stderr
    assert out.returncode == 2, msg
    assert len(_committed(bs, name, parts)) == before, msg
    return msg


def test_grown_directory_continues_with_committed_files_skipped(broker, topic, tmp_path) -> None:
    """A directory import killed midway; a new part file appears; the rerun imports
    the rest and the new file, and nothing twice."""
    bs = broker.bootstrap_servers
    parts = tmp_path / "parts"
    parts.mkdir()
    _write(parts, "csv", "part-0", range(0, 700))
    _write(parts, "csv", "part-1", range(700, 1500))
    name = topic()
    args = [str(parts), "-t", name, "--exactly-once", "--commit-every", "100"]
    before = _kill_once_committed(bs, name, 900, *args, "--rate", "600")
    assert 900 <= before < 1500
    _write(parts, "csv", "part-2", range(1500, 2000))
    done = _run(bs, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{parts / 'part-0.csv'}: already committed by an earlier run" in done.stdout
    _check_once_in_order("csv", _committed(bs, name), 2000, keyed=False)
    # One more file after a finished run: only its rows are sent.
    _write(parts, "csv", "part-3", range(2000, 2100))
    more = _run(bs, *args)
    assert more.returncode == 0, more.stdout + more.stderr
    _check_once_in_order("csv", _committed(bs, name), 2100, keyed=False)


@pytest.mark.parametrize(
    "change, named",
    [
        (["-X", "partitioner=murmur2"], "partitioner"),
        (["--preset", "ordered,java_compatible"], "preset"),
        (["--key-field", "id"], "key"),
        (["--partitions", "4"], "partitions"),
    ],
)
def test_options_that_decide_placement_cannot_change_on_resume(
    broker, topic, tmp_path, change, named
) -> None:
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "csv", "orders", range(3000))
    name = topic(partitions=2)
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100", "--key-field", "user"]
    before = _kill_once_committed(bs, name, 200, *args, "--rate", "300", parts=2)
    assert 200 <= before < 3000
    if named == "partitions":
        # The topic recreated with more partitions (Tansu cannot add partitions): a
        # key's rows would land elsewhere than before.
        broker.delete_topic(name)
        broker.create_topic(name, partitions=4)
        before, rerun = 0, args
    else:
        rerun = [a for a in args if a not in ("--key-field", "user")] if named == "key" else args
        rerun = [*rerun, *change]
    msg = _refused(bs, name, before, *rerun, parts=4 if named == "partitions" else 2)
    assert "changed" in msg and named in msg, msg
    assert "--restart" in msg and "another topic" in msg, msg


def test_deleted_progress_topic_is_refused(broker, topic, tmp_path) -> None:
    """No progress record, but the topic holds this import's transactional writes: the
    rerun refuses instead of starting over."""
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "jsonl", "rows", range(2000))
    name = topic()
    progress = f"progress-{name}"
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100"]
    args += ["--progress-topic", progress]
    before = _kill_once_committed(bs, name, 200, *args, "--rate", "400")
    assert 200 <= before < 2000
    broker.delete_topic(progress)
    msg = _refused(bs, name, before, *args)
    assert f"progress topic {progress!r} holds no record of this import" in msg, msg
    assert f"topic {name!r} holds {before:,} committed records written in transactions" in msg
    assert "--restart" in msg, msg


def test_input_edited_in_place_after_a_finished_run_is_refused(broker, topic, tmp_path) -> None:
    """Same size, one row changed in the middle (beyond the first and last 64 KiB),
    new modification time: the rerun says the file changed, not "nothing to do"."""
    bs = broker.bootstrap_servers
    f = _write(tmp_path, "csv", "big", range(40_000))  # ~400 KB
    name = topic()
    args = [str(f), "-t", name, "--exactly-once"]
    first = _run(bs, *args)
    assert first.returncode == 0, first.stdout + first.stderr
    body = f.read_bytes()
    mid = body.index(b"\n20000,") + 1
    f.write_bytes(body[:mid] + b"2000X" + body[mid + 5 :])
    assert f.stat().st_size == len(body)
    os.utime(f, ns=(time.time_ns(), time.time_ns() + 10**9))
    msg = _refused(bs, name, 40_000, *args)
    assert f"{f} changed" in msg and "content" in msg and "--restart" in msg, msg


def test_broker_that_lost_its_log_is_named(fresh_broker, tmp_path) -> None:
    """The broker restarts without its data mid-import: the error says the log was
    lost, not that another run or fencing is to blame."""
    bs = fresh_broker.bootstrap_servers
    name = fresh_broker.create_topic("lost", partitions=1)
    f = _write(tmp_path, "lines", "rows", range(5000))
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100", "--rate", "500"]
    status, out = lose_the_log_mid_import(fresh_broker, name, _cli(bs, *args))
    assert status != 0, out
    assert "lost" in out and "restarted" in out, out
    assert "another run" not in out and "does not fence" not in out, out


@pytest.mark.parametrize("fmt", ["avro", "json-schema", "protobuf"])
def test_exactly_once_with_registry_formats(broker, topic, tmp_path, fmt, schema_registry) -> None:
    """--exactly-once with Schema Registry serializers (the session's real registry):
    every row once, decoded back; a rerun finds everything committed."""
    import io

    import fastavro

    from cykafka.cli import main

    f = tmp_path / "addr.jsonl"
    f.write_text("".join(json.dumps({"city": f"c{i}", "zip": i}) + "\n" for i in range(50)))
    if fmt == "avro":
        schema: Any = {
            "type": "record",
            "name": "Address",
            "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "int"}],
        }
        (tmp_path / "s.avsc").write_text(json.dumps(schema))
        schema_arg = str(tmp_path / "s.avsc")
    elif fmt == "json-schema":
        schema = {"type": "object", "properties": {"city": {"type": "string"}}}
        (tmp_path / "s.json").write_text(json.dumps(schema))
        schema_arg = str(tmp_path / "s.json")
    else:
        schema_arg = "support.proto_types:Address"
    name = topic()
    args = ["import", "-b", broker.bootstrap_servers, "--no-progress", str(f), "-t", name]
    args += ["--exactly-once", "--value-format", fmt, "--schema-registry", schema_registry.url]
    args += ["--value-schema", schema_arg]
    assert main(args) == 0
    assert main(args) == 0  # nothing to do

    def decode(v: bytes) -> tuple[str, int]:
        if fmt == "avro":
            d = fastavro.schemaless_reader(io.BytesIO(v[5:]), fastavro.parse_schema(schema))
        elif fmt == "json-schema":
            d = json.loads(v[5:])
        else:
            from support.proto_types import Address

            assert v[5:6] == b"\x00"  # the first message of the schema
            m = Address.FromString(v[6:])
            d = {"city": m.city, "zip": m.zip}
        return d["city"], int(d["zip"])

    got = [decode(r.value) for r in _committed(broker.bootstrap_servers, name)]
    assert got == [(f"c{i}", i) for i in range(50)]


def test_plain_import_recovers_from_a_stall_past_the_message_timeout(fresh_broker, tmp_path):
    """SIGSTOP the broker for longer than message.timeout.ms mid-import, SIGCONT: the
    rows that timed out are reported not sent, and the rows read after the broker
    came back are delivered (the producer is replaced, not kept stuck) -- and the
    summary adds up."""
    bs = fresh_broker.bootstrap_servers
    name = fresh_broker.create_topic("stall", partitions=1)
    f = _write(tmp_path, "lines", "rows", range(12_000))
    args = [str(f), "-t", name, "--rate", "1500", "-X", "message.timeout.ms=1500"]
    proc = subprocess.Popen(
        _cli(bs, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    wait_until(lambda: len(read_raw_log(bs, name, 1)) >= 1500, 120, "1,500 rows", alive=proc)
    assert proc.poll() is None, "the import ended before the stall"
    assert fresh_broker.pid is not None
    os.kill(fresh_broker.pid, signal.SIGSTOP)
    try:
        time.sleep(3.0)  # twice message.timeout.ms
    finally:
        os.kill(fresh_broker.pid, signal.SIGCONT)
    out, _ = proc.communicate(timeout=180)
    got = [int(r.value.split(b"-")[1]) for r in _committed(bs, name)]
    delivered = int(re.search(r"delivered +([\d,]+)", out).group(1).replace(",", ""))
    not_sent = int(re.search(r"not sent +([\d,]+)", out).group(1).replace(",", ""))
    unknown = int(re.search(r"unknown +([\d,]+)", out).group(1).replace(",", ""))
    print("stall:", {"read back": len(got), "delivered": delivered, "not sent": not_sent})
    assert delivered + not_sent + unknown == 12_000, out
    assert len(got) >= delivered, out  # nothing reported delivered that is not there
    # The rows read well after the broker came back went out.
    assert set(range(11_000, 12_000)) <= set(got), out
