"""One rule for inputs that hold no rows, in every format: refused before anything is sent
(exit 2, naming the file, why and ``--allow-empty``), by the import and by verify alike;
with ``--allow-empty`` read as zero rows.  A file whose rows are all malformed is not
empty: its rows are read, counted and reported."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cykafka.cli import main
from support.cli import import_in_process


def _parquet_without_rows(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([], pa.int64())}), path)


#: name -> (content or writer, why the message gives)
EMPTY = {
    "empty.csv": (b"", "0 bytes"),
    "header.csv": (b"id,name\n", "a header and no rows"),
    "blank.csv": (b"\n\n", "no header"),
    "empty.jsonl": (b"", "0 bytes"),
    "blank.jsonl": (b"\n  \n\n", "blank lines only"),
    "empty.txt": (b"", "0 bytes"),
    "rows0.parquet": (_parquet_without_rows, "0 rows"),
    "empty.csv.gz": (gzip.compress(b""), "0 bytes once decompressed"),
    "header.csv.gz": (gzip.compress(b"id,name\n"), "a header and no rows"),
}


def _write(tmp_path: Path, name: str) -> Path:
    content, _ = EMPTY[name]
    path = tmp_path / name
    if callable(content):
        content(path)
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_an_input_without_rows_is_refused_naming_it_and_the_flag(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CYKAFKA_BOOTSTRAP_SERVERS", raising=False)
    path = _write(tmp_path, name)
    # nothing listens on port 1: the refusal comes before any broker is asked
    for command in (
        ["import", str(path), "-t", "x", "-b", "127.0.0.1:1", "--no-progress"],
        ["verify", str(path), "-t", "x", "-b", "127.0.0.1:1"],
        ["import", str(path), "-t", "x", "--dry-run"],
    ):
        assert main(command) == 2, command
        out, err = capsys.readouterr()
        (line,) = err.splitlines()
        assert name in line and "holds no rows" in line and "--allow-empty" in line, line
        assert f"({EMPTY[name][1]})" in line, line
        assert "OK" not in out


def test_an_empty_file_among_others_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text('{"id": 1}\n')
    empty = _write(tmp_path, "header.csv")
    assert main(["import", str(good), str(empty), "-t", "x", "-b", "127.0.0.1:1"]) == 2
    assert "header.csv: the input holds no rows" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_allow_empty_reads_zero_rows_and_says_so(
    name: str, broker, topic, read_back, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, name)
    into = topic()
    assert import_in_process(broker, str(path), "-t", into, "--allow-empty") == 0
    out = capsys.readouterr().out
    assert "rows read   0 " in out
    assert "OK: the input holds no rows; nothing to deliver" in out, out
    assert not any(read_back(broker.bootstrap_servers, into, expected=0).values())


def test_verify_allow_empty_matches_an_empty_topic(
    broker, topic, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify takes --allow-empty as the import does: an input without rows matches an
    empty topic (exit 0) instead of being refused (exit 2)."""
    path = _write(tmp_path, "header.csv")
    into = topic()
    args = ["verify", str(path), "-t", into, "-b", broker.bootstrap_servers]
    assert main(args) == 2
    capsys.readouterr()
    assert main([*args, "--allow-empty"]) == 0, capsys.readouterr()


def test_every_row_malformed_is_not_empty_but_rejected(
    broker, topic, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ragged rows are rows: read, counted as rejected, reported; never called empty."""
    path = tmp_path / "ragged.csv"
    path.write_text("id,name\n1,a,x\n2,b,y\n3,c,z\n")
    status = import_in_process(broker, str(path), "-t", topic())
    out, err = capsys.readouterr()
    assert status == 1, out + err
    assert "holds no rows" not in out + err
    assert "rows read   3 " in out and "rejected    3" in out
