"""`cykafka import` on the files real users have: bad bytes, other delimiters and
encodings, deep or huge records, torn last lines, pipes, FIFOs, standard input,
compressed files, globs and directories of part files.  Read back from the real broker."""

from __future__ import annotations

import base64
import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.cli import import_in_process as _import
from support.cli import run_import_command
from support.import_signals import stop_after


def _all(recs: dict[int, list]) -> list:
    return [r for rs in recs.values() for r in rs]


def _values(broker, read_back, name: str, n: int) -> list[bytes]:
    return [r.value for r in read_back(broker.bootstrap_servers, name, expected=n)[0]]


def _dead(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bad_utf8_row_dead_lettered_others_imported(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "orders.csv"
    rows = [b"id,name"] + [b"%d,n%d" % (i, i) for i in range(1, 3001)]
    rows[1500] = b"1500,bad\xff\xfebytes"  # line 1501 of the file
    f.write_bytes(b"\n".join(rows) + b"\n")
    dead = tmp_path / "dead.jsonl"
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 1
    out = capsys.readouterr().out
    assert f"{f}:1501: not valid utf-8 text" in out
    got = [json.loads(v) for v in _values(broker, read_back, name, 2999)]
    assert [g["id"] for g in got] == [i for i in range(1, 3001) if i != 1500]
    (entry,) = _dead(dead)
    assert (entry["file"], entry["line"], entry["stage"]) == (str(f), 1501, "parse")
    assert entry["fate"] == "not sent"  # never produced: safe to send once fixed
    assert base64.b64decode(entry["raw_base64"]) == b"1500,bad\xff\xfebytes"
    assert entry["offset"] == f.read_bytes().index(b"1500,bad")


def test_semicolon_csv_with_options(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "eu.csv"
    # A BOM, ';' delimiter, "'" quotes, NA for null.
    text = "id;name;amount\n1;'Smith; J.';2,50\n2;NA;3\n"
    f.write_bytes(b"\xef\xbb\xbf" + text.encode())
    rc = _import(
        broker, str(f), "-t", name, "--delimiter", ";", "--quote-char", "'",
        "--encoding", "utf-8-sig", "--null-value", "NA",
    )  # fmt: skip
    assert rc == 0
    got = [json.loads(v) for v in _values(broker, read_back, name, 2)]
    assert got == [
        {"id": 1, "name": "Smith; J.", "amount": "2,50"},
        {"id": 2, "name": None, "amount": 3},
    ]


def test_latin1_no_header_column_names(broker, topic, read_back, tmp_path):
    name = topic()
    f = tmp_path / "legacy.csv"
    f.write_bytes("1,Müller\n2,Zoë\n".encode("latin-1"))
    rc = _import(
        broker, str(f), "-t", name, "--encoding", "latin-1", "--no-header",
        "--column-names", "id,name", "--key-field", "name",
    )  # fmt: skip
    assert rc == 0
    recs = read_back(broker.bootstrap_servers, name, expected=2)[0]
    assert [(r.key, json.loads(r.value)) for r in recs] == [
        ("Müller".encode(), {"id": 1, "name": "Müller"}),
        ("Zoë".encode(), {"id": 2, "name": "Zoë"}),
    ]


def test_one_column_header_warns(broker, topic, read_back, tmp_path, capsys):
    """Without --delimiter the ';' is detected (test_import_sniff.py); a ',' given for
    a ';' file whose rows still agree on one column imports them, with a note."""
    name = topic()
    f = tmp_path / "semi.csv"
    f.write_text("id;name\n1;a\n")
    assert _import(broker, str(f), "-t", name, "--delimiter", ",") == 0
    out = capsys.readouterr().out
    assert "the header has one column, 'id;name', which contains ';'" in out
    assert "--delimiter ';'" in out


def test_deep_json_line_dead_lettered(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "deep.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    f.write_text('{"a":1}\n' + deep + '\n{"a":2}\n')
    dead = tmp_path / "dead.jsonl"
    rc = _import(broker, str(f), "-t", name, "--key-field", "a", "--dead-letter", str(dead))
    assert rc == 1
    assert f"{f}:2: " in capsys.readouterr().out
    assert _values(broker, read_back, name, 2) == [b'{"a":1}', b'{"a":2}']
    assert [e["line"] for e in _dead(dead)] == [2]


def test_line_longer_than_message_max_bytes_skipped(broker, topic, read_back, tmp_path, capsys):
    """A 30 MB line with message.max.bytes=100000: reported with its line and size,
    never held whole (blocks of 1 MB: the reader never joins more than one extra)."""
    name = topic()
    f = tmp_path / "long.txt"
    with open(f, "wb") as fh:
        fh.write(b"first\n")
        fh.write(b"x" * (30 << 20) + b"\n")
        fh.write(b"last\n")
    dead = tmp_path / "dead.jsonl"
    rc = _import(
        broker, str(f), "-t", name, "-X", "message.max.bytes=100000", "--dead-letter", str(dead)
    )
    assert rc == 1
    out = capsys.readouterr().out
    assert f"{f}:2: line of 31,457,280 bytes is longer than message.max.bytes (100,000)" in out
    got = [r.value[:20] for r in _all(read_back(broker.bootstrap_servers, name))]
    assert got == [b"first", b"last"]
    (entry,) = _dead(dead)
    assert entry["offset"] == 6 and entry["raw"] == "x" * 256


def test_torn_last_line_is_reported(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "growing.log"
    f.write_bytes(b"a\nb\nhalf-writ")
    assert _import(broker, str(f), "-t", name) == 0
    out = capsys.readouterr().out
    assert f"note        {f}:3: the last line has no final newline" in out


def test_stdin_is_lines_unless_format_says_otherwise(broker, topic, read_back, tmp_path):
    """`-` alone reads lines, as kcat and kafka-console-producer do; --format says else."""
    name = topic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", "-"]  # fmt: skip
    p = subprocess.run(cmd, input=b"x\ny\n", capture_output=True, env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r.value for r in read_back(broker.bootstrap_servers, name, expected=2)[0]] == [
        b"x",
        b"y",
    ]
    name = topic()
    cmd[cmd.index("-t") + 1] = name
    p = subprocess.run(
        [*cmd, "--format", "csv", "--key-field", "k"],
        input=b"k,v\na,1\nb,2\n",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    recs = read_back(broker.bootstrap_servers, name, expected=2)[0]
    assert [(r.key, r.value) for r in recs] == [
        (b"a", b'{"k":"a","v":1}'),
        (b"b", b'{"k":"b","v":2}'),
    ]


def test_fifo_header_is_not_consumed(broker, topic, read_back, tmp_path):
    name = topic()
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as fh:
            fh.write("id,v\n1,a\n2,b\n")

    t = threading.Thread(target=write)
    t.start()
    try:
        rc = _import(broker, str(fifo), "-t", name, "--key-field", "id")
    finally:
        t.join(10)
    assert rc == 0
    assert [json.loads(v)["v"] for v in _values(broker, read_back, name, 2)] == ["a", "b"]


@pytest.mark.parametrize(
    "ext,compress",
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        (".zst", lambda b: pa.Codec("zstd").compress(b).to_pybytes()),
    ],
)
def test_compressed_by_extension(broker, topic, read_back, tmp_path, ext, compress):
    name = topic()
    f = tmp_path / f"rows.jsonl{ext}"
    f.write_bytes(compress(b"".join(b'{"i":%d}\n' % i for i in range(1000))))
    assert _import(broker, str(f), "-t", name) == 0
    assert _values(broker, read_back, name, 1000) == [b'{"i":%d}' % i for i in range(1000)]


def test_quoted_glob_and_part_directory(broker, topic, read_back, tmp_path):
    name = topic()
    for i in range(3):
        (tmp_path / f"day{i}.txt").write_bytes(b"g%d\n" % i)
    assert _import(broker, str(tmp_path / "day*.txt"), "-t", name) == 0
    assert _values(broker, read_back, name, 3) == [b"g0", b"g1", b"g2"]

    name = topic()
    out = tmp_path / "spark_out"
    out.mkdir()
    for i in range(2):
        pq.write_table(
            pa.table({"i": [i * 10, i * 10 + 1]}), out / f"part-0000{i}-x.snappy.parquet"
        )
    (out / "_SUCCESS").write_bytes(b"")
    (out / ".part-00000-x.snappy.parquet.crc").write_bytes(b"crc")
    assert _import(broker, str(out), "-t", name, "--value-field", "i") == 0
    assert _values(broker, read_back, name, 4) == [b"0", b"1", b"10", b"11"]


def test_glob_matching_nothing_is_an_error(broker, tmp_path, capsys):
    assert _import(broker, str(tmp_path / "nope*.csv"), "-t", "x") == 2
    assert "no file matches this pattern" in capsys.readouterr().err


def test_cr_only_csv_imported_whole(broker, topic, read_back, tmp_path, capsys):
    """Old-Mac line endings (a lone CR ends each record) over several 1-2 MB blocks:
    every row sent once, and a bad row named by its true line and byte offset."""
    name = topic()
    f = tmp_path / "mac.csv"
    rows = [b"id,name,note"]
    rows += [b"%d,n%d,some padding text here" % (i, i) for i in range(1, 120_001)]
    rows[3] = b'3,n3,"two\rlines"'  # a quoted CR is data (and a line of the file)
    rows[60_000] = b"60000,bad\xff,x"  # line 60002 of the file (one more for the quoted CR)
    body = b"\r".join(rows) + b"\r"
    assert len(body) > 4 << 20  # blocks of 1, 2, 2 MB
    f.write_bytes(body)
    dead = tmp_path / "dead.jsonl"
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 1
    assert f"{f}:60002: not valid utf-8 text" in capsys.readouterr().out
    got = [json.loads(v) for v in _values(broker, read_back, name, 119_999)]
    assert [g["id"] for g in got] == [i for i in range(1, 120_001) if i != 60_000]
    assert got[2] == {"id": 3, "name": "n3", "note": "two\rlines"}
    assert got[-1] == {"id": 120_000, "name": "n120000", "note": "some padding text here"}
    (entry,) = _dead(dead)
    assert (entry["line"], entry["offset"]) == (60_002, body.index(b"\r60000,bad") + 1)


def test_lone_cr_in_csv_field_is_a_record_end(broker, topic, read_back, tmp_path, capsys):
    """A lone CR in an unquoted field ends the record (as pyarrow and Python's csv read
    it): the rest of that line is reported at its own line and offset, never dropped
    silently, and every later row keeps its true line."""
    name = topic()
    f = tmp_path / "cr.csv"
    rows = [b"id,name"] + [b"%d,n%d" % (i, i) for i in range(1, 3001)]
    rows[1000] = b"1000,left\rright"
    rows[2000] = b"2000,bad\xffbytes"  # line 2002: one more for the CR above
    body = b"\n".join(rows) + b"\n"
    f.write_bytes(body)
    dead = tmp_path / "dead.jsonl"
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 1
    out = capsys.readouterr().out
    assert f"{f}:1002: expected 2 columns, got 1" in out
    assert f"{f}:2002: not valid utf-8 text" in out
    got = [json.loads(v) for v in _values(broker, read_back, name, 2999)]
    assert [g["id"] for g in got] == [i for i in range(1, 3001) if i != 2000]
    assert got[999] == {"id": 1000, "name": "left"}
    entries = _dead(dead)
    assert [(e["line"], e["offset"]) for e in entries] == [
        (1002, body.index(b"right")),
        (2002, body.index(b"2000,bad")),
    ]


@pytest.mark.parametrize("ext", ["gz", "zst"])
def test_exactly_once_resumes_a_compressed_input(broker, topic, tmp_path, ext):
    """An --exactly-once import of a compressed file, stopped (SIGTERM) after some
    commits: the same command resumes it (decompressing again and skipping the rows
    committed), and every row is in the committed view once, in order."""
    import signal

    from cykafka.testing import committed_view, read_raw_log

    n = 600_000
    data = b"".join(b"row-%08d\n" % i for i in range(n))
    path = tmp_path / f"rows.txt.{ext}"
    if ext == "gz":
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(pa.Codec("zstd").compress(data).to_pybytes())
    name = topic()
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", "--exactly-once", "--commit-every", "50000",
           "--rate", "100000", str(path)]  # fmt: skip
    # the first progress line (5 s): commits were made
    status, out, err = stop_after(cmd, signal.SIGTERM, " delivered, ")
    assert status == 143, (out, err)
    first = committed_view(read_raw_log(broker.bootstrap_servers, name, 1))
    assert 0 < len(first) < n
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"resumed at row {len(first) + 1:,}" in again.stdout, again.stdout
    values = [r.value for r in committed_view(read_raw_log(broker.bootstrap_servers, name, 1))]
    assert values == [b"row-%08d" % i for i in range(n)]


def test_exactly_once_refusal_creates_nothing(broker, tmp_path):
    """Standard input cannot be read again: --exactly-once without --restart is refused
    before the topic (or the progress record) is created."""
    from confluent_kafka.admin import AdminClient

    name = "refused-stdin-topic"
    refused = run_import_command(
        broker.bootstrap_servers,
        "-t",
        name,
        "--exactly-once",
        "-",
        "--partitions",
        "1",
        input="a\n",
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "standard input cannot be read from a position" in refused.stderr
    topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=30)
    assert name not in topics.topics


def test_pandas_to_csv_goes_out_as_pandas_reads_it(broker, topic, read_back, tmp_path):
    """pandas' to_csv(): its unnamed index column is named as pandas names it (with a
    note), and NaN (an empty field) is null, in a column of numbers as of text; a
    quoted empty field stays the empty string."""
    import numpy as np
    import pandas as pd

    f = tmp_path / "frame.csv"
    pd.DataFrame({"a": [1.5, np.nan, 3.0], "s": ["x", None, "z"]}).to_csv(f)
    with open(f, "a") as out:
        out.write('3,4.5,""\n')
    name = topic()
    p = run_import_command(broker.bootstrap_servers, "-t", name, str(f))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "the header names no column 1" in p.stdout and "'Unnamed: 0'" in p.stdout, p.stdout
    assert p.stdout.count("empty fields are sent as null") == 1, p.stdout
    got = [json.loads(v) for v in _values(broker, read_back, name, 4)]
    assert got == [
        {"Unnamed: 0": 0, "a": 1.5, "s": "x"},
        {"Unnamed: 0": 1, "a": None, "s": None},
        {"Unnamed: 0": 2, "a": 3.0, "s": "z"},
        {"Unnamed: 0": 3, "a": 4.5, "s": ""},
    ]
    assert pd.read_csv(f).to_dict("records")[1]["Unnamed: 0"] == 1  # pandas' own name


def test_naive_timestamps_follow_the_one_rule(broker, topic, read_back, tmp_path):
    """--timestamp-field: a time that names no zone is refused, as produce() refuses a
    naive datetime, with the fix; --timezone says its zone.  Text (JSON Lines) row by
    row, a Parquet timestamp column without a zone as a whole."""
    import datetime as dt

    jl = tmp_path / "t.jsonl"
    jl.write_text('{"ts": "2024-01-01 00:00:00"}\n{"ts": "2024-01-01T00:00:00Z"}\n')
    pq_file = tmp_path / "t.parquet"
    pq.write_table(
        pa.table({"ts": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us"))}), pq_file
    )
    ts = ("--timestamp-field", "ts")
    name = topic()
    refused = run_import_command(broker.bootstrap_servers, *ts, "-t", name, str(jl))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "'2024-01-01 00:00:00', which names no time zone: pass --timezone" in refused.stdout
    assert _count_rows(refused.stdout, "delivered") == 1
    paris = 1704063600000  # 2024-01-01T00:00 in Paris is 23:00 UTC the day before
    name = topic()
    ok = run_import_command(
        broker.bootstrap_servers, *ts, "-t", name, "--timezone", "Europe/Paris", str(jl)
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    stamps = [r.timestamp for r in read_back(broker.bootstrap_servers, name, expected=2)[0]]
    assert stamps == [paris, paris + 3600_000]
    name = topic()
    refused = run_import_command(broker.bootstrap_servers, *ts, "-t", name, str(pq_file))
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "timestamp[us] column, which names no time zone" in out
    ok = run_import_command(
        broker.bootstrap_servers, *ts, "-t", name, "--timezone", "Europe/Paris", str(pq_file)
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    stamps = [r.timestamp for r in read_back(broker.bootstrap_servers, name, expected=1)[0]]
    assert stamps == [paris]


def _count_rows(out: str, label: str) -> int:
    return int(out.split(f"\n  {label}")[1].split()[0].replace(",", ""))


def test_rows_read_counts_every_row_and_nan_is_its_own_reason(broker, topic, tmp_path):
    """Rows read = delivered + not sent + unknown + rejected, and the rejected ones say
    why: a row with NaN is not "malformed"."""
    f = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "x": [1.0, float("nan"), 3.0]}), f)
    p = run_import_command(broker.bootstrap_servers, "-t", topic(), str(f))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "  rows read   3  " in p.stdout, p.stdout
    assert "  delivered   2\n" in p.stdout and "malformed" not in p.stdout, p.stdout
    assert "  rejected    1  (1 with a value no message can hold (NaN" in p.stdout, p.stdout
    assert "  problems    1 row not delivered:" in p.stdout, p.stdout
