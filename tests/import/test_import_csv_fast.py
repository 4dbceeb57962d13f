"""The C pass for plain CSV blocks sends exactly what the general (pyarrow) path sends:
same values, keys, rows, lines and offsets, and blocks it cannot take (quotes, bad
rows, blank lines, invalid UTF-8) still go the general way."""

from __future__ import annotations

import random

import pytest

from cykafka.importer import READERS, Fields, ReadOptions, Source
from cykafka.inputs.readers import csv as csv_reader


def _read(path, general: bool, monkeypatch, fields: Fields, **opts):
    problems: list = []
    if general:
        monkeypatch.setattr(csv_reader, "fast_columns", lambda *a, **k: None)
    src = Source(str(path), str(path))
    chunks = list(READERS["csv"].read(src, fields, ReadOptions(**opts), problems.append))
    monkeypatch.undo()
    out = []
    for c in chunks:
        for i in range(len(c)):
            p = c.position(i)
            out.append((c.item(c.values, i), c.item(c.keys, i), p.row, p.line, p.offset, c.end.row))
    return out, [(p.row, p.line, p.offset, p.error) for p in problems]


_FIELDS = [
    "0", "007", "-0", "12", "-3.25", "1e5", "2E+10", "1.", ".5", "true", "false", "True",
    "1234567890123456", "123456789012345", "", " 1", "x\\y", "tab\there", "\x01ctl",
    "\x08\x0c", "héllo", "日本", "a\x7fb", "null", "NaN", "1e1234", "--1",
]  # fmt: skip


def _random_csv(rng: random.Random, rows: int, ncols: int, extra: bytes = b"") -> bytes:
    head = ",".join(f"c{i}" for i in range(ncols)).encode() + b"\n"
    body = []
    for _ in range(rows):
        body.append(",".join(rng.choice(_FIELDS) for _ in range(ncols)).encode("utf-8"))
    lines = [b + (b"\r\n" if rng.random() < 0.1 else b"\n") for b in body]
    if extra:
        lines.insert(rng.randrange(len(lines)), extra)
    return head + b"".join(lines)


@pytest.mark.parametrize(
    "extra",
    [
        b"",
        b'1,"quoted, comma",3\n',
        b"1,2\n",  # too few fields
        b"1,2,3,4\n",  # too many
        b"\n",  # blank
        b"1,\xff\xfe,3\n",  # not UTF-8
        b"1,x\ry,3\n",  # a lone CR: a record end, so two bad rows
        b"1,x,3\r",  # a lone CR ending a record
    ],
)
@pytest.mark.parametrize("types", ["infer", "string"])
def test_fast_path_matches_general(tmp_path, monkeypatch, extra, types):
    rng = random.Random(hash((extra, types)) & 0xFFFF)
    f = tmp_path / "d.csv"
    f.write_bytes(_random_csv(rng, 3000, 3, extra))
    for fields in (Fields(), Fields(key="c1")):
        fast = _read(f, False, monkeypatch, fields, block_bytes=4096, csv_types=types)
        general = _read(f, True, monkeypatch, fields, block_bytes=4096, csv_types=types)
        assert fast == general
        assert len(fast[0]) >= 3000 - (1 if extra else 0)


def test_fast_path_is_taken_and_matches_json(tmp_path, monkeypatch):
    import json

    f = tmp_path / "d.csv"
    f.write_bytes(b"id,name,amount\n1,ann,2.50\n2,b\\o\tb,007\n")
    calls = []
    real = csv_reader.fast_columns

    def spy(*a, **k):
        got = real(*a, **k)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(csv_reader, "fast_columns", spy)
    rows, problems = _read(f, False, monkeypatch, Fields(key="name"))
    assert calls == [True] and not problems
    assert [json.loads(r[0]) for r in rows] == [
        {"id": 1, "name": "ann", "amount": 2.50},
        {"id": 2, "name": "b\\o\tb", "amount": "007"},
    ]
    assert rows[1][1] == b"b\\o\tb"
    assert rows[1][0] == b'{"id":2,"name":"b\\\\o\\tb","amount":"007"}'


def test_fast_path_escapes_that_outgrow_the_first_buffer(tmp_path, monkeypatch):
    import json

    f = tmp_path / "d.csv"
    long = "\x01" * 50_000  # six bytes each once escaped
    f.write_bytes(("a,b\nx," + long + "\ny,z\n").encode())
    fast = _read(f, False, monkeypatch, Fields(key="a"))
    assert fast == _read(f, True, monkeypatch, Fields(key="a"))
    assert [json.loads(r[0]) for r in fast[0]] == [{"a": "x", "b": long}, {"a": "y", "b": "z"}]
