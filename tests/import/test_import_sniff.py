"""CSV dialects detected like the best readers do (DuckDB's sniffer, Python's
csv.Sniffer): the delimiter and quote when not given, said in the summary; a file
whose records do not parse consistently, whose header is data, or whose text is not
in the encoding is refused before anything is sent.  Read back from the real broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.cli import import_in_process as _import


def _records(broker, read_back, name: str, n: int) -> list[dict]:
    recs = read_back(broker.bootstrap_servers, name, expected=n)
    return [json.loads(r.value) for rs in recs.values() for r in rs]


def _spreadsheet_export(path, n: int) -> None:
    """A ';' export as spreadsheets write it: CRLF, quoted fields holding ';', ',' and
    line ends, decimal commas."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write("id;name;note;amount\r\n")
        for i in range(n):
            note = '"one; two\r\nthree ""q"""' if i % 10 == 0 else f"plain {i}"
            f.write(f'{i};"Name, {i}";{note};{i},{i % 100:02d}\r\n')


def test_semicolon_export_without_delimiter_is_detected(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "export.csv"
    _spreadsheet_export(f, 30_000)
    assert _import(broker, str(f), "-t", name) == 0
    out = capsys.readouterr().out
    assert f"{f}:1: detected delimiter ';' (4 fields in " in out, out
    assert "rows read   30,000" in out and "result      OK" in out
    got = sorted(_records(broker, read_back, name, 30_000), key=lambda r: r["id"])
    assert got[0] == {"id": 0, "name": "Name, 0", "note": 'one; two\r\nthree "q"', "amount": "0,00"}
    assert got[7] == {"id": 7, "name": "Name, 7", "note": "plain 7", "amount": "7,07"}
    assert [r["id"] for r in got] == list(range(30_000))


def test_single_quoted_csv_is_detected(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "q.csv"
    f.write_text("id,name\n" + "".join(f"{i},'Smith, J. {i}'\n" for i in range(50)))
    assert _import(broker, str(f), "-t", name) == 0
    assert 'detected quote "\'"' in capsys.readouterr().out
    got = sorted(_records(broker, read_back, name, 50), key=lambda r: r["id"])
    assert got[3] == {"id": 3, "name": "Smith, J. 3"}


def test_inconsistent_records_are_refused(broker, topic, read_back, tmp_path, capsys):
    """A ',' given for a file whose records mostly do not have the header's fields:
    refused up front, not imported as rows that are not the file's records."""
    name = topic()
    f = tmp_path / "export.csv"
    _spreadsheet_export(f, 200)
    assert _import(broker, str(f), "-t", name, "--delimiter", ",") == 2
    err = capsys.readouterr().err
    assert f"{f}: the records do not parse consistently as CSV with delimiter ','" in err, err
    # 200 records and their quoted line ends: 220 lines, none with the header's fields
    assert "the header has 1 field but only 0 of the next 220 records do" in err
    assert sum(len(v) for v in read_back(broker.bootstrap_servers, name, timeout=10).values()) == 0


def test_header_that_is_data_is_refused(broker, topic, tmp_path, capsys):
    f = tmp_path / "nums.csv"
    f.write_text("1,2.5,3\n4,5,6\n")
    assert _import(broker, str(f), "-t", topic()) == 2
    assert "the first row ['1', '2.5', '3'] looks like data" in capsys.readouterr().err
    assert _import(broker, str(f), "-t", topic(), "--no-header") == 0


def test_cp1252_input_is_refused_with_the_encoding_to_pass(broker, topic, read_back, tmp_path):
    name = topic()
    f = tmp_path / "legacy.csv"
    rows = "".join(f"{i},Müller Café {i}\n" for i in range(100))
    f.write_bytes(("id,name\n" + rows).encode("cp1252"))
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", broker.bootstrap_servers,
           "-t", name, "--no-progress", str(f)]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{f}: not UTF-8 text: 100 of the first 101 lines are not valid UTF-8" in p.stderr
    assert "pass --encoding cp1252" in p.stderr
    assert _import(broker, str(f), "-t", name, "--encoding", "cp1252") == 0
    got = sorted(_records(broker, read_back, name, 100), key=lambda r: r["id"])
    assert got[5] == {"id": 5, "name": "Müller Café 5"}


@pytest.mark.parametrize("given", [[], ["--delimiter", ","], ["--quote-char", '"']])
def test_plain_csv_has_no_note(broker, topic, read_back, tmp_path, capsys, given):
    name = topic()
    f = tmp_path / "plain.csv"
    f.write_text("id,v\n" + "".join(f"{i},'x;{i}'\n" for i in range(20)))
    assert _import(broker, str(f), "-t", name, *given) == 0
    assert "detected" not in capsys.readouterr().out
    got = sorted(_records(broker, read_back, name, 20), key=lambda r: r["id"])
    assert got[1] == {"id": 1, "v": "'x;1'"}
