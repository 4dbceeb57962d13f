"""The figures an import prints agree: the bar's rows, size and percentage come from the
counters the summary adds up, on resumed runs (``--skip-rows``, ``--exactly-once``), on
rows that are all malformed, and on a stop at the boundary of two inputs.

Each import is a real ``cykafka import`` process on Apache Kafka, stopped by a real
signal where a stop is tested; rows are 100 bytes each, so a size or a percentage can be
checked against the rows it stands for."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from support.cli import child_env, import_command, run_import_command
from support.consume import committed_so_far

ROW = 100  # bytes of each line of the inputs below


def _lines(path: Path, first: int, n: int) -> Path:
    path.write_text("".join(f"{i:0{ROW - 1}d}\n" for i in range(first, first + n)))
    return path


def _bar_lines(stderr: str) -> list[tuple[int, int]]:
    """(percent, rows read) of each progress line."""
    return [
        (int(m[1]), int(m[2].replace(",", "")))
        for m in re.finditer(r"cykafka import: (\d+)%, ([\d,]+) rows read", stderr)
    ]


def _rows_read(stdout: str) -> tuple[int, float]:
    m = re.search(r"rows read   ([\d,]+)  \(([\d.]+) MB\)", stdout)
    assert m, stdout
    return int(m[1].replace(",", "")), float(m[2])


def test_malformed_rows_are_counted_by_the_bar_as_by_the_summary(broker, topic, tmp_path):
    f = tmp_path / "ragged.csv"
    f.write_text("id,name\n1,a,x\n2,b,y\n3,c,z\n")
    done = run_import_command(broker.bootstrap_servers, str(f), "-t", topic())
    assert done.returncode == 1, done.stdout + done.stderr
    assert _rows_read(done.stdout)[0] == 3
    assert _bar_lines(done.stderr)[-1][1] == 3, done.stderr


def test_a_resumed_run_gives_the_size_of_the_rows_it_read(broker, topic, tmp_path):
    f = _lines(tmp_path / "rows.txt", 0, 50_000)  # 5.0 MB
    name = topic()
    done = run_import_command(broker.bootstrap_servers, str(f), "-t", name, "--skip-rows", "30000")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _rows_read(done.stdout) == (20_000, 2.0)  # the last 20,000 rows: 2.0 MB
    assert _bar_lines(done.stderr)[-1] == (100, 20_000), done.stderr


def test_an_exactly_once_stop_shows_the_share_of_the_rows_handed_over(broker, topic, tmp_path):
    """Stopped part-way (SIGINT once rows are committed), the bar's percentage is the
    place of the rows handed over, not how far the reader got ahead of them."""
    f = _lines(tmp_path / "rows.txt", 0, 50_000)
    name = topic()
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "2000", "--rate", "10000"]
    proc = subprocess.Popen(
        import_command(broker.bootstrap_servers, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while committed_so_far(broker.bootstrap_servers, name, 1) < 4000:
            assert time.monotonic() < deadline and proc.poll() is None, "no commit came"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out + err
    pct, rows = _bar_lines(err)[-1]
    assert rows < 50_000, err
    assert abs(pct - 100 * rows / 50_000) <= 1, err
    read, mb = _rows_read(out)
    assert read == rows and abs(mb - rows * ROW / 1e6) <= 0.05, out


def test_a_stop_at_the_boundary_of_two_inputs_names_the_next_ones_first_row(
    broker, topic, tmp_path
):
    """Every row of the first input handed over, the second (a FIFO nobody writes to)
    not yet giving any: the stop names the second input's row 1, and the finish command
    skips exactly the first input's rows."""
    a = _lines(tmp_path / "a.txt", 0, 30_000)
    b = tmp_path / "b.txt"
    os.mkfifo(b)
    keep_open = os.open(b, os.O_RDWR)  # a writer that never writes: the read waits
    try:
        proc = subprocess.Popen(
            import_command(broker.bootstrap_servers, str(a), str(b), "-t", topic()),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if f"reading {b}" in line:
                    break
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        os.close(keep_open)
    assert proc.returncode == 130, out + err
    assert "the next is b.txt row 1:" in out, out
    assert "a.txt row 30,001" not in out, out
    assert "--skip-rows 30000" in out, out
