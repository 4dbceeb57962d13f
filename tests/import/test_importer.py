"""`cykafka import` and `cykafka broker` end to end, read back from the real broker."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cykafka
from cykafka._arrow import lines_array
from cykafka.cli import SUBCOMMANDS, main
from support.cli import child_env
from support.cli import import_in_process as _import


def _all(recs: dict[int, list]) -> list:
    return [r for rs in recs.values() for r in rs]


def test_registered() -> None:
    assert {"import", "broker"} <= set(SUBCOMMANDS)


def test_lines_byte_exact_with_summary(broker, topic, read_back, tmp_path, capsys) -> None:
    name = topic(partitions=2)
    f = tmp_path / "events.txt"
    lines = [b"first", b"", "ünï".encode(), b"crlf", b"x" * 3000] + [b"l%d" % i for i in range(995)]
    body = b"\n".join(lines[:3]) + b"\n" + lines[3] + b"\r\n" + b"\n".join(lines[4:])  # no final \n
    f.write_bytes(body)
    assert _import(broker, str(f), "-t", name) == 0
    out = capsys.readouterr().out
    recs = read_back(broker.bootstrap_servers, name, expected=1000)
    assert sorted(r.value for r in _all(recs)) == sorted(lines)
    assert all(r.key is None for r in _all(recs))
    assert "rows read   1,000" in out and "delivered   1,000" in out and "not sent    0" in out
    assert "unknown     0" in out
    for p, rs in recs.items():
        if rs:  # keyless messages may all land in one partition
            assert f"{p}: {rs[0].offset}..{rs[-1].offset}" in out
    assert re.search(r"elapsed\s+[\d.]+ s\s+\([\d,]+ rows/s, [\d.,]+ MB/s\)", out)
    assert "guarantees  Per-partition order; no duplicates from retries" in out
    assert "result      OK" in out


def _codecs_on_the_broker(broker, name: str) -> set[str]:
    """The compression of every record batch of partition 0, as the broker stores it."""
    from cykafka.cluster.wire import fetch_batches, leaders

    host, port = leaders(broker.bootstrap_servers, name, 30.0)[0]
    return {b.compression for _, b in fetch_batches(host, port, name, 0)}


@pytest.mark.parametrize(
    ("extra", "codec"), [((), "lz4"), (("-X", "compression.type=none"), "none")]
)
def test_an_import_compresses_with_lz4_unless_told_not_to(
    broker, topic, read_back, tmp_path, extra: tuple[str, ...], codec: str
) -> None:
    """A bulk load sends lz4 batches (the broker and the network do a quarter of the
    work on text); -X compression.type=none is honoured; the rows read back intact."""
    name = topic(partitions=1)
    f = tmp_path / "lines.txt"
    lines = [b"row %d of a bulk load, with some text that repeats" % i for i in range(20_000)]
    f.write_bytes(b"\n".join(lines) + b"\n")
    assert _import(broker, str(f), "-t", name, *extra) == 0
    recs = read_back(broker.bootstrap_servers, name, expected=len(lines))
    assert [r.value for r in recs[0]] == lines
    assert _codecs_on_the_broker(broker, name) == {codec}


def test_csv_key_field_and_record_json(broker, topic, read_back, tmp_path, capsys) -> None:
    name = topic(partitions=3)
    f = tmp_path / "orders.csv"
    rows = [
        {"id": str(i), "user": f"u{i % 4}", "note": 'said "hi", left' if i == 3 else ""}
        for i in range(200)
    ]
    with open(f, "w", newline="") as fh:
        w = csv.DictWriter(fh, ["id", "user", "note"])
        w.writeheader()
        w.writerows(rows)
    assert _import(broker, str(f), "-t", name, "--key-field", "user", "--csv-types", "string") == 0
    recs = read_back(broker.bootstrap_servers, name, expected=200)
    got = {json.loads(r.value)["id"]: (r.key, json.loads(r.value)) for r in _all(recs)}
    for row in rows:
        key, value = got[row["id"]]
        assert key == row["user"].encode() and value == row
    for rs in recs.values():  # within a key, file order (the ordered preset)
        by_key: dict[bytes, list[int]] = {}
        for r in rs:
            by_key.setdefault(r.key, []).append(int(json.loads(r.value)["id"]))
        assert all(v == sorted(v) for v in by_key.values())


def test_malformed_csv_row_reported_rest_imported(
    broker, topic, read_back, tmp_path, capsys
) -> None:
    name = topic()
    f = tmp_path / "bad.csv"
    f.write_text("id,name\n1,a\n2,b\n3,c,EXTRA\n4,d\n5\n6,f\n")
    dead = tmp_path / "dead.jsonl"
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 1
    captured = capsys.readouterr()
    recs = read_back(broker.bootstrap_servers, name, expected=4)
    assert [json.loads(r.value)["id"] for r in recs[0]] == [1, 2, 4, 6]
    out = captured.out
    assert "  rows read   6  " in out and "rejected    2  (2 malformed: never sent)" in out
    assert "NOT OK" in out
    assert f"{f}:4: expected 2 columns, got 3" in out
    assert f"{f}:6: expected 2 columns, got 1" in out
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [(e["line"], e["text"], e["stage"]) for e in entries] == [
        (4, "3,c,EXTRA", "parse"),
        (6, "5", "parse"),
    ]


def test_csv_problems_name_physical_lines(broker, topic, read_back, tmp_path, capsys) -> None:
    """A quoted field with newlines and a blank line before a malformed row, and a
    delivery failure after it: both are reported at the line an editor shows (pyarrow
    alone counts records, and the data row number used to drift past skipped rows)."""
    name = topic()
    f = tmp_path / "multi.csv"
    f.write_text(
        "id,body\n"  # 1
        "1,a\n"  # 2
        '2,"multi\n'  # 3
        "line\n"  # 4
        'field"\n'  # 5
        "3,c,EXTRA\n"  # 6: malformed (record 5, data row 3)
        "\n"  # 7: blank, not a record
        "4,d\n"  # 8
        "5," + "x" * 5000 + "\n"  # 9: too large to deliver (data row 5)
        "6,f\n"  # 10
    )
    dead = tmp_path / "dead.jsonl"
    rc = _import(
        broker,
        str(f),
        "-t",
        name,
        "--value-field",
        "body",
        "-X",
        "message.max.bytes=2000",
        "--dead-letter",
        str(dead),
    )
    assert rc == 1
    out = capsys.readouterr().out
    assert f"{f}:6: expected 2 columns, got 3" in out
    assert f"{f}:9: MSG_SIZE_TOO_LARGE" in out
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [(e["stage"], e["line"], e["row"]) for e in entries] == [
        ("parse", 6, 3),
        ("delivery", 9, 5),
    ]
    assert entries[1]["value"] == "x" * 5000
    got = [r.value for r in read_back(broker.bootstrap_servers, name, expected=4)[0]]
    assert got == [b"a", b"multi\nline\nfield", b"d", b"f"]


@pytest.mark.parametrize("seed", range(4))
def test_csv_record_lines_match_csv_module(tmp_path, seed: int) -> None:
    """The CSV block split (NumPy, block by block) against Python's csv module's
    line_num, on random CSV with quoted newlines, doubled quotes, blank lines and CRLF,
    with blocks small enough to cut records and quotes anywhere."""
    import numpy as np

    from cykafka.inputs.readers.blocks import Block, blocks, record_starts

    rng = random.Random(seed)
    pieces = ["a", "b,c", '"q,\nr"', '"x""y"', '"\n\n"', '""', "z"]
    lines = []
    for _ in range(300):
        if rng.random() < 0.1:
            lines.append("")
        else:
            lines.append(",".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))))
    nl = "\r\n" if seed % 2 else "\n"
    f = tmp_path / "r.csv"
    f.write_bytes(nl.join(lines).encode() + (nl.encode() if seed < 2 else b""))
    want = []
    with open(f, newline="") as fh:
        reader = csv.reader(fh)
        prev = 0
        for rec in reader:
            if rec:  # csv gives [] for a blank line: not a record (as for pyarrow)
                want.append(prev + 1)
            prev = reader.line_num
    for block in (3, 17, 1 << 20):
        got = []
        line = 1
        with open(f, "rb") as fh:
            for b in blocks(fh, block, 1 << 30, ord('"')):
                assert isinstance(b, Block)
                starts, nls = record_starts(b.data, b.end, ord('"'))
                ends = np.append(starts[1:], b.end)
                for s_, n_, e_ in zip(starts.tolist(), nls.tolist(), ends.tolist()):
                    if b.data[s_:e_] not in (b"\n", b"\r\n"):
                        got.append(line + n_)
                line += b.data.count(b"\n", 0, b.end)
        assert got == want


def test_delivery_failures_go_to_dead_letter(broker, topic, read_back, tmp_path, capsys) -> None:
    name = topic()
    f = tmp_path / "big.lines"
    f.write_bytes(b"ok1\n" + b"x" * 5000 + b"\nok2\n")
    dead = tmp_path / "dead.jsonl"
    rc = _import(
        broker, str(f), "-t", name, "-X", "message.max.bytes=2000", "--dead-letter", str(dead)
    )
    assert rc == 1
    out = capsys.readouterr().out
    assert "delivered   2" in out and "not sent    1  (never written: safe to send again)" in out
    assert f"{f}:2: MSG_SIZE_TOO_LARGE" in out  # line 2 of the file
    (entry,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert entry["stage"] == "delivery" and entry["row"] == entry["line"] == 2
    assert entry["value"] == "x" * 5000 and "MSG_SIZE_TOO_LARGE" in entry["error"]
    assert entry["fate"] == "not sent"  # refused before it was sent
    assert [r.value for r in read_back(broker.bootstrap_servers, name, expected=2)[0]] == [
        b"ok1",
        b"ok2",
    ]


class _StopsAt:
    """A real Producer whose ``n``-th produce_batch raises ``exc`` (a Ctrl-C or a
    fatal error arriving at a known point of the import)."""

    def __init__(self, producer: Any, n: int, exc: BaseException) -> None:
        self.producer, self.n, self.exc, self.calls = producer, n, exc, 0

    def produce_batch(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == self.n:
            raise self.exc
        return self.producer.produce_batch(*args, **kwargs)

    def flush(self, timeout: Any = None) -> int:
        return 0  # the caller closes it (purging what never got a report)

    def close(self, timeout: Any = None) -> Any:
        return self.producer.close(timeout)  # after Ctrl-C the import purges it


def _lines_file(tmp_path: Path, n: int) -> Path:
    f = tmp_path / "rows.txt"
    f.write_bytes(b"".join(b"row-%03d\n" % i for i in range(n)))  # 8 bytes a line
    return f


def test_interrupt_writes_unconfirmed_rows_to_dead_letter(tmp_path, monkeypatch) -> None:
    """Ctrl-C while batches wait for delivery reports that never come (a broker that
    is not there): every row read ends in the dead-letter file with its fate, line
    number and value: the queued ones "not sent" (purged from librdkafka's queue:
    _PURGE_QUEUE), the batch the Ctrl-C stopped "unknown" (no proof either way)."""
    from cykafka import importer

    monkeypatch.setattr(importer.run, "INTERRUPT_WAIT_S", 0.2)
    f = _lines_file(tmp_path, 40)
    dead = tmp_path / "dead.jsonl"
    job = importer.ImportJob.build(
        [str(f)],
        "t",
        {"log_level": 0},
        options=importer.ReadOptions(block_bytes=40),  # 5 lines a chunk
        dead_letter=str(dead),
    )
    # The producer is the caller's, on brokers the job does not name (nothing listens
    # there): the import checks no topic and starts no broker of its own.
    real = cykafka.Producer(job.on_cluster("127.0.0.1:1", None).resolved)
    try:
        result = importer.import_files(
            job,
            producer=_StopsAt(real, 4, KeyboardInterrupt()),
            progress=False,
            log=io.StringIO(),
        )
    finally:
        real.close(0)
    assert result.interrupted and not result.ok
    assert (result.rows_read, result.delivered, result.not_sent, result.unknown) == (20, 0, 15, 5)
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    assert [(e["line"], e["value"]) for e in entries] == [
        (i + 1, f"row-{i:03d}") for i in range(20)
    ]
    assert all(e["stage"] == "delivery" for e in entries)
    assert [e["fate"] for e in entries] == ["not sent"] * 15 + ["unknown"] * 5
    assert all(e["error"].startswith("_PURGE_QUEUE: ") for e in entries[:15])
    unknown = "no delivery report: the batch stopped without saying which rows it queued"
    assert all(e["error"] == unknown for e in entries[15:])
    lines = result.summary_lines()
    assert "  not sent    15  (never written: safe to send again)" in lines
    assert "  unknown     5  (sent, never acknowledged: may be in the topic)" in lines
    assert "  problems    20 rows not delivered:" in lines


def test_fatal_error_writes_unsent_rows_to_dead_letter(
    broker, topic, read_back, tmp_path, monkeypatch
) -> None:
    from cykafka import importer

    f = _lines_file(tmp_path, 40)
    dead = tmp_path / "dead.jsonl"
    name = topic()
    cfg = {"bootstrap.servers": broker.bootstrap_servers}
    job = importer.ImportJob.build(
        [str(f)],
        name,
        cfg,
        options=importer.ReadOptions(block_bytes=40),
        dead_letter=str(dead),
    )
    real = cykafka.Producer(job.resolved)
    try:
        result = importer.import_files(
            job,
            producer=_StopsAt(real, 3, RuntimeError("boom")),
            progress=False,
            log=io.StringIO(),
        )
        real.flush(30)
    finally:
        real.close()
    assert result.fatal == "RuntimeError: boom" and not result.ok
    assert (result.rows_read, result.delivered, result.not_sent, result.unknown) == (15, 10, 0, 5)
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    why = "no delivery report: the batch stopped without saying which rows it queued"
    assert [(e["line"], e["value"], e["error"], e["fate"]) for e in entries] == [
        (i + 1, f"row-{i:03d}", why, "unknown") for i in range(10, 15)
    ]
    got = read_back(broker.bootstrap_servers, name, expected=10)[0]
    assert [r.value for r in got] == [b"row-%03d" % i for i in range(10)]


def test_jsonl_fields_and_bad_line(broker, topic, read_back, tmp_path, capsys) -> None:
    name = topic(partitions=2)
    f = tmp_path / "events.jsonl"
    f.write_text(
        '{"id": 1, "user": "ann", "body": {"a": 1}, "p": 1, "src": "web"}\n'
        "\n"
        '{"id": 2, "user": "bob", "body": "text", "p": 0}\n'
        "{not json}\n"
        '{"id": 3, "body": null, "p": 1, "src": "app"}\n'
    )
    rc = _import(
        broker,
        str(f),
        "-t",
        name,
        "--key-field",
        "user",
        "--value-field",
        "body",
        "--partition-field",
        "p",
        "--header-fields",
        "src,id",
    )
    assert rc == 1
    out = capsys.readouterr().out
    assert f"{f}:4: invalid JSON" in out and "rejected    1  (1 malformed: never sent)" in out
    recs = read_back(broker.bootstrap_servers, name, expected=3)
    assert [(r.key, r.value, r.headers) for r in recs[1]] == [
        (b"ann", b'{"a":1}', [("src", b"web"), ("id", b"1")]),
        (None, None, [("src", b"app"), ("id", b"3")]),
    ]
    assert [(r.key, r.value, r.headers) for r in recs[0]] == [
        (b"bob", b"text", [("src", None), ("id", b"2")])
    ]


def test_jsonl_whole_line_is_the_value(broker, topic, read_back, tmp_path) -> None:
    name = topic()
    f = tmp_path / "raw.ndjson"
    lines = ['{"b": 2, "a": [1, 2]}', '{"x": "ü"}', "[1, 2]"]
    f.write_text("\n".join(lines) + "\n")
    assert _import(broker, str(f), "-t", name) == 0
    assert [
        r.value.decode() for r in read_back(broker.bootstrap_servers, name, expected=3)[0]
    ] == lines


def test_parquet_partition_and_header_fields(broker, topic, read_back, tmp_path, capsys) -> None:
    name = topic(partitions=3)
    f = tmp_path / "t.parquet"
    n = 300
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "user": [f"u{i % 5}" for i in range(n)],
            "part": pa.array([i % 3 for i in range(n)], pa.int32()),
            "region": ["eu" if i % 2 else None for i in range(n)],
            "score": [i / 4 for i in range(n)],
        }
    )
    pq.write_table(table, f, row_group_size=64)
    rc = _import(
        broker,
        str(f),
        "-t",
        name,
        "--key-field",
        "user",
        "--partition-field",
        "part",
        "--header-fields",
        "region",
    )
    assert rc == 0
    recs = read_back(broker.bootstrap_servers, name, expected=n)
    for p, rs in recs.items():
        ids = [json.loads(r.value)["id"] for r in rs]
        assert ids == sorted(ids) and all(i % 3 == p for i in ids)
        for r in rs:
            row = json.loads(r.value)
            i = row["id"]
            assert row == {
                "id": i,
                "user": f"u{i % 5}",
                "part": p,
                "region": "eu" if i % 2 else None,
                "score": i / 4,
            }
            assert r.key == f"u{i % 5}".encode()
            assert r.headers == [("region", b"eu" if i % 2 else None)]


def test_bad_input_fails_before_producing(broker, tmp_path, capsys) -> None:
    missing = tmp_path / "nope.csv"
    assert _import(broker, str(missing), "-t", "x") == 2
    assert f"error: {missing}: no such file" in capsys.readouterr().err
    f = tmp_path / "a.csv"
    f.write_text("id,name\n1,a\n")
    assert _import(broker, str(f), "-t", "x", "--key-field", "user") == 2
    assert (
        "--key-field 'user' is not a column; columns are ['id', 'name']" in capsys.readouterr().err
    )
    g = tmp_path / "data.xyz"
    g.write_text("hello\n")
    assert _import(broker, str(g), "-t", "x") == 2
    assert "pass --format" in capsys.readouterr().err
    assert _import(broker, str(g), "-t", "x", "--format", "lines", "--key-field", "k") == 2
    assert "the lines format has no fields" in capsys.readouterr().err


def _rich_import(broker, name: str, tmp_path: Path, inspect: bool) -> tuple[Any, str]:
    """Import 20,000 lines with the rich bar drawn on a captured terminal console;
    return the result and the text drawn (escape sequences removed)."""
    from rich.console import Console

    from cykafka.importer import ImportJob, import_files

    f = tmp_path / "bar.txt"
    f.write_bytes(b"".join(b"line-%06d-" % i + b"x" * 40 + b"\n" for i in range(20_000)))
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=200)
    result = import_files(
        ImportJob.build([str(f)], name, {"bootstrap.servers": broker.bootstrap_servers}),
        progress=True,
        inspect=inspect,
        console=console,
        log=io.StringIO(),
    )
    assert result.ok and result.delivered == 20_000
    return result, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())


def _last_bar(text: str) -> str:
    return [line for line in text.splitlines() if "bar.txt" in line][-1]


def test_progress_bar_shows_rows_mb_rate_and_eta(broker, topic, tmp_path) -> None:
    name = topic(partitions=2)
    result, text = _rich_import(broker, name, tmp_path, inspect=False)
    mb = f"{result.bytes_read / 1e6:,.1f}"
    bar = _last_bar(text)
    assert re.search(
        rf"bar\.txt\s+\S+\s+{re.escape(mb)}/{re.escape(mb)} MB\s+20,000 rows\s+[\d,]+ rows/s"
        rf"\s+\d+:\d\d:\d\d$",
        bar.rstrip(),
    ), bar
    assert f"{name}[0]" not in text  # no accumulator view without --inspect


def test_inspect_adds_the_accumulator_view_to_the_bar(broker, topic, tmp_path) -> None:
    from cykafka.inspector import PARTITION_STATES

    name = topic(partitions=2)
    result, text = _rich_import(broker, name, tmp_path, inspect=True)
    mb = f"{result.bytes_read / 1e6:,.1f}"
    assert re.search(
        rf"{re.escape(mb)}/{re.escape(mb)} MB\s+20,000 rows\s+[\d,]+ rows/s", _last_bar(text)
    )
    # The final frame: the bar, then the accumulator view with a row per partition.
    final = text[text.rindex("bar.txt") :]
    assert "partitions" in final and "brokers" in final
    # A row for every partition written to (unkeyed lines may all go to one: librdkafka's
    # sticky partitioner keeps a partition for sticky.partitioning.linger.ms).
    assert result.last_offsets
    for p, last in result.last_offsets.items():
        row = next((line for line in final.splitlines() if line.startswith(f"{name}[{p}]")), None)
        assert row is not None, final
        assert row.split()[1] in PARTITION_STATES and f" {last} " in row, row
    assert re.search(r"produced 20,000\s+delivered 20,000", final)


def test_inspect_without_a_terminal_logs_lines(broker, topic, tmp_path, capsys) -> None:
    name = topic()
    f = tmp_path / "a.txt"
    f.write_text("a\nb\n")
    assert _import(broker, str(f), "-t", name, "--inspect") == 0
    err = capsys.readouterr().err
    assert "pending 0" in err and "delivered 2 failed 0" in err  # the final log line


@pytest.mark.broker  # the embedded broker
def test_embedded_broker_sample(monkeypatch, capsys) -> None:
    monkeypatch.delenv("CYKAFKA_BOOTSTRAP_SERVERS", raising=False)
    rc = main(
        ["import", "--sample", "2000", "--topic", "demo", "--partitions", "2", "--no-progress"]
    )
    assert rc == 0
    captured = capsys.readouterr()
    m = re.search(
        r"embedded broker \(tansu, in-memory\) listening on (127\.0\.0\.1:\d+)", captured.err
    )
    assert m, captured.err
    assert "topic 'demo' created with 2 partitions" in captured.err
    out = captured.out
    assert f"into topic 'demo' on {m.group(1)}" in out and "sample of 2,000 orders" in out
    assert "delivered   2,000" in out and re.search(
        r"offsets\s+0: 0\.\.\d+\s+1: 0\.\.\d+$", out, re.M
    )
    assert "stopped (its data was in memory)" in out


def test_env_bootstrap_is_used(broker, topic, read_back, tmp_path, monkeypatch, capsys) -> None:
    name = topic()
    monkeypatch.setenv("CYKAFKA_BOOTSTRAP_SERVERS", broker.bootstrap_servers)
    f = tmp_path / "a.txt"
    f.write_text("one\n")
    assert main(["import", str(f), "-t", name, "--no-progress"]) == 0
    assert "embedded broker" not in capsys.readouterr().err
    assert read_back(broker.bootstrap_servers, name, expected=1)[0][0].value == b"one"


@pytest.mark.broker  # the embedded broker
def test_broker_subcommand_runs_until_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cykafka.cli", "broker", "--port", "0", "--topic", "t1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in first, first + (
            proc.stderr.read() if proc.poll() else ""
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for s in (proc.stdout, proc.stderr):
            if s is not None:
                s.close()


@pytest.mark.broker  # the embedded broker
def test_keep_broker_serves_until_interrupted(read_back) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cykafka.cli",
            "import",
            "--sample",
            "100",
            "-t",
            "kept",
            "--keep-broker",
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(drop=["CYKAFKA_BOOTSTRAP_SERVERS"]),
    )
    try:
        assert proc.stdout is not None
        line = ""
        for line in proc.stdout:
            if "still running" in line:
                break
        m = re.search(r"bootstrap\.servers=(\S+) ", line)
        assert m, line
        assert len(read_back(m.group(1), "kept", expected=100)) == 3  # readable meanwhile
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


# --- lines_array: the C line splitter (ext/text.pxi) against a plain Python reference.


def _reference_lines(buf: bytes, end: int = -1) -> list[bytes]:
    """What ``lines_array(buf, end)`` must hold: the lines of ``buf[:end]`` that end
    in b"\\n", without it and without a b"\\r" right before it."""
    if end < 0:
        end = len(buf)
    lines = bytes(buf[:end]).split(b"\n")
    lines.pop()  # after the last newline: a partial line (or nothing), not a line
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _check_lines(buf: Any, end: int = -1) -> pa.Array:
    arr = lines_array(buf, end)
    arr.validate(full=True)
    assert arr.type == pa.binary()
    assert arr.offset == 0 and arr.null_count == 0
    assert arr.to_pylist() == _reference_lines(buf, end)
    return arr


@pytest.mark.parametrize(
    "buf",
    [
        b"",
        b"\n",
        b"\n\n\n",
        b"a\nb\nc\n",
        b"a\r\nb\r\n",
        b"\r\n",  # a line that is only "\r" before its newline: an empty line
        b"\r\n\r\n\n",
        b"\r\r\n",  # only the \r right before the \n goes: the line is b"\r"
        b"\r\n\r",  # trailing lone \r: a partial line, ignored
        b"a\rb\n\rc\nd\r\r\n",  # lone \r inside and at the start of lines stays
        b"\r\r\r\n\n",
        b"\x00\n\x00\r\n\x00\x00\n\xff\xfe\r\x00\n",  # NUL and non-UTF-8 bytes
        b"no newline at all",
        b"a\nb",  # bytes after the last newline are ignored
        b"x" * 5000 + b"\n" + b"y" * 3 + b"\r\n",
    ],
)
def test_lines_array_tricky(buf: bytes) -> None:
    _check_lines(buf)
    _check_lines(bytearray(buf))
    _check_lines(memoryview(buf))


def test_lines_array_spelled_out() -> None:
    # The reference above, written out, so that it cannot share a mistake with it.
    buf = b"a\r\n\n\r\n\r\r\nb\rc\n\rd\n\x00\n\xff\r\npartial"
    arr = lines_array(buf)
    assert arr.to_pylist() == [b"a", b"", b"", b"\r", b"b\rc", b"\rd", b"\x00", b"\xff"]
    offsets = memoryview(arr.buffers()[1]).cast("i")  # int32, native-endian
    assert list(offsets) == [0, 1, 1, 1, 2, 5, 7, 8, 9]
    assert arr.buffers()[2].to_pybytes()[: offsets[-1]] == b"a\rb\rc\rd\x00\xff"


def test_lines_array_end_shorter_than_buffer() -> None:
    buf = b"a\r\nbb\n\nccc\r\ndddd\n"
    assert _check_lines(buf, 0).to_pylist() == []
    assert _check_lines(buf, 3).to_pylist() == [b"a"]
    assert _check_lines(buf, 7).to_pylist() == [b"a", b"bb", b""]
    assert _check_lines(buf, 12).to_pylist() == [b"a", b"bb", b"", b"ccc"]
    # An end inside a CRLF: the line is not complete, so it is not there.
    assert _check_lines(buf, 11).to_pylist() == [b"a", b"bb", b""]
    assert _check_lines(buf, -1).to_pylist() == [b"a", b"bb", b"", b"ccc", b"dddd"]
    for end in range(len(buf) + 1):
        _check_lines(buf, end)


def test_lines_array_empty_and_bad_arguments() -> None:
    arr = _check_lines(b"")
    assert len(arr) == 0
    assert len(_check_lines(b"abc", 0)) == 0
    with pytest.raises(ValueError, match="past the end"):
        lines_array(b"a\n", 3)
    with pytest.raises(TypeError):
        lines_array("a\n")  # type: ignore[arg-type]


def test_lines_is_the_sequence_of_its_arrow_array() -> None:
    """cykafka._codecs.Lines, what a plain lines import hands to produce_batch: the same
    lines as lines_array, as a sequence of bytes (indexing, slicing, iteration)."""
    from cykafka._codecs import Lines, lines

    buf = b"a\r\n\nbb\r\nccc\n\xff\x00\ntail"
    ls = lines(buf)
    want = _reference_lines(buf)
    assert isinstance(ls, Lines) and len(ls) == len(want) == 5
    assert list(ls) == ls.to_pylist() == ls.to_arrow().to_pylist() == want
    assert [ls[i] for i in range(-5, 5)] == want + want
    part = ls[1:4]
    assert len(part) == 3 and list(part) == want[1:4] == part.to_arrow().to_pylist()
    assert list(part[1:]) == want[2:4] and list(ls[4:9]) == want[4:] and len(ls[3:1]) == 0
    with pytest.raises(IndexError):
        ls[5]
    with pytest.raises(ValueError, match="step 1"):
        ls[::2]
    with pytest.raises(TypeError):
        Lines()
    assert list(lines(b"x\ny\n", 2)) == [b"x"] and len(lines(b"")) == 0


def test_lines_array_many_short_lines_and_big_buffers() -> None:
    # Many more lines than the first guess of the offsets' size (grown as it goes),
    # and buffers big enough to be split without the GIL.
    _check_lines(b"\n" * 300_000)
    _check_lines(b"\r\n" * 200_000 + b"a\n" * 100_000)
    rng = random.Random(7)
    alphabet = b"\n\n\r\r\x00ab"
    buf = bytes(rng.choice(alphabet) for _ in range(1_000_000))
    _check_lines(buf)
    _check_lines(buf, buf.rfind(b"\n", 0, 600_000) + 1)
    big = b"".join(b"line-%07d-" % i + b"x" * 86 + b"\n" for i in range(20_000))
    arr = _check_lines(big)
    assert len(arr) == 20_000 and arr[123].as_py() == b"line-0000123-" + b"x" * 86


_PIECES = st.sampled_from([b"\n", b"\r", b"\r\n", b"\n\r", b"a", b"bc", b"\x00", b"\xff", b" "])


@st.composite
def _buf_and_end(draw: Any) -> tuple[bytes, int]:
    buf = b"".join(draw(st.lists(_PIECES | st.binary(max_size=8), max_size=60)))
    end = draw(
        st.one_of(
            st.just(-1),
            st.integers(0, len(buf)),
            st.just(buf.rfind(b"\n") + 1),  # as the importer passes it
        )
    )
    return buf, end


@settings(max_examples=500, deadline=None)
@given(_buf_and_end())
def test_lines_array_fuzz(case: tuple[bytes, int]) -> None:
    buf, end = case
    _check_lines(buf, end)


def test_interrupted_summary_says_how_to_finish_without_duplicates(tmp_path) -> None:
    """What an interrupted plain import tells its user (rendered from its result): the
    command that imports the rest (runnable as printed), where the rest starts, and
    where the rows not delivered are listed."""
    from cykafka.importer import ImportResult
    from cykafka.inputs.model import SourcePosition

    r = ImportResult("t", ["/d/rows.csv"], "csv", "b:9092", rows_read=1000, delivered=900)
    r.not_sent, r.unknown, r.problem_count, r.interrupted = 60, 40, 100, True
    r.read_to = SourcePosition("/d/rows.csv", 1001, 52_000, 1002)
    r.settled_rows = 1000
    r.command = ["cykafka", "import", "-t", "t", "--skip-rows", "5", "/d/my rows.csv"]
    lines = r.summary_lines()
    assert (
        "  to finish   import the rest, after the 1,000 rows of the input that have a fate; "
        "the next is rows.csv row 1,001 (line 1,002, byte 52,000):" in lines
    )
    assert "                cykafka import -t t '/d/my rows.csv' --skip-rows 1000" in lines
    assert (
        "              and send again the 60 rows not sent (not all listed: no --dead-letter "
        "FILE was given);" in lines
    )
    r.dead_letter = "dead.jsonl"
    lines = r.summary_lines()
    assert "              and send again the 60 rows not sent (in dead.jsonl);" in lines
    assert any("the 40 unknown rows (in dead.jsonl) may be in the topic" in x for x in lines)
    assert lines[-1] == "  result      NOT OK: stopped before the end (exit status 130)"
