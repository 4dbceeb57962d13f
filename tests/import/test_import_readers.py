"""The reader interface: every row carries its source position (byte offset and line
for text, row group and row for Parquet), and each chunk's ``end`` is where the next
row starts -- what a resumable import commits."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cykafka.importer import READERS, Fields, ReadOptions, Source


def _chunks(path, fmt: str, **opts):
    problems = []
    src = Source(str(path), str(path))
    chunks = list(READERS[fmt].read(src, Fields(), ReadOptions(**opts), problems.append))
    return chunks, problems


@pytest.mark.parametrize("fmt", ["lines", "jsonl", "csv"])
def test_text_positions_point_at_each_row(tmp_path, fmt):
    body = {
        "lines": b"".join(b"row-%d\n" % i for i in range(500)),
        "jsonl": b"".join(b'{"i":%d}\n' % i + (b"\n" if i % 7 == 0 else b"") for i in range(500)),
        "csv": b"i,t\n"
        + b"".join(
            (b'%d,"two\nlines"\n' % i) if i % 5 == 0 else (b"%d,x\n" % i) for i in range(500)
        ),
    }[fmt]
    f = tmp_path / f"data.{fmt}"
    f.write_bytes(body)
    chunks, problems = _chunks(f, fmt, block_bytes=97)
    assert not problems and len(chunks) > 5
    lines = body.split(b"\n")
    seen = 0
    for c in chunks:
        for i in range(len(c)):
            pos = c.position(i)
            assert pos.row == seen + 1
            seen += 1
            head = body[pos.offset : pos.offset + 4]
            assert lines[pos.line - 1].startswith(head.split(b"\n")[0])
            want = {"lines": b"row-%d" % (pos.row - 1), "jsonl": b'{"i":%d}' % (pos.row - 1)}
            want["csv"] = b"%d," % (pos.row - 1)
            assert body[pos.offset :].startswith(want[fmt])
        nxt = c.end
        assert nxt is not None and nxt.row == seen + 1
        assert (
            body[nxt.offset :]
            .lstrip(b"\n")
            .startswith(
                b""
                if seen == 500
                else {"lines": b"row-", "jsonl": b'{"i"', "csv": b"%d," % seen}[fmt]
            )
        )
    assert seen == 500


def test_parquet_positions_are_row_group_and_row(tmp_path):
    f = tmp_path / "g.parquet"
    pq.write_table(pa.table({"i": list(range(250))}), f, row_group_size=100)
    chunks, _ = _chunks(f, "parquet", batch_rows=40)
    got = [
        (c.position(i).row_group, c.position(i).group_row) for c in chunks for i in range(len(c))
    ]
    assert got == [(r // 100, r % 100) for r in range(250)]
    ends = [(c.end.row_group, c.end.group_row, c.end.row) for c in chunks]
    assert ends[0] == (0, 40, 41) and ends[2] == (1, 0, 101) and ends[-1] == (3, 0, 251)


@pytest.mark.parametrize(
    "fmt,suffix", [("lines", ""), ("jsonl", ".gz"), ("csv", ""), ("parquet", "")]
)
def test_read_from_a_chunk_end_gives_the_rest(tmp_path, fmt, suffix):
    """Starting a reader at a chunk's ``end`` yields exactly the rows after it, with the
    same positions (a compressed input is skipped by reading, the others by seeking)."""
    import gzip

    f = tmp_path / f"data.{fmt}{suffix}"
    if fmt == "parquet":
        pq.write_table(pa.table({"i": list(range(300))}), f, row_group_size=70)
    else:
        body = {
            "lines": b"".join(b"r%d\n" % i for i in range(300)),
            "jsonl": b"".join(b'{"i":%d}\n' % i for i in range(300)),
            "csv": b"i,t\n" + b"".join(b'%d,"a\nb"\n' % i for i in range(300)),
        }[fmt]
        f.write_bytes(gzip.compress(body) if suffix else body)
    src = Source(str(f), str(f), "gzip" if suffix else None)
    opts = ReadOptions(block_bytes=64, batch_rows=25)

    def rows(start=None):
        out = []
        for c in READERS[fmt].read(src, Fields(), opts, lambda p: None, start):
            vals = c.items(c.values)
            out += [(vals[i], c.position(i)) for i in range(len(c))]
            yield c.end, out
        return

    everything = list(rows())
    ends = [e for e, _ in everything]
    full = everything[-1][1]
    middle = ends[len(ends) // 2]
    done = full.index(next(r for r in full if r[1].row == middle.row))
    rest = list(rows(middle))[-1][1]
    assert rest == full[done:]
    assert len(rest) < len(full)


def _csv_rows(path, body: bytes, **opts):
    """Every row of ``body`` (written to ``path``) as (values, line, offset), the
    chunks and the problems."""
    import json

    path.write_bytes(body)
    chunks, problems = _chunks(path, "csv", csv_types="string", **opts)
    rows = []
    for c in chunks:
        vals = c.items(c.values)
        rows += [
            (json.loads(vals[i]), c.position(i).line, c.position(i).offset) for i in range(len(c))
        ]
    return rows, chunks, problems


def _physical_lines(body: bytes) -> list[int]:
    """The byte offset each physical line starts at: "\\n", "\\r\\n" and a lone "\\r"
    all end one, as in an editor and Python's str.splitlines."""
    import re

    return [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", body)]


@pytest.mark.parametrize("block_bytes", [23, 24, 25, 31, 64, 97, 1 << 20])
@pytest.mark.parametrize("eol", [b"\r", b"\r\n", b"\n"])
def test_csv_cr_line_endings_split_like_the_parser(tmp_path, block_bytes, eol):
    """Old-Mac CR-only files (and CRLF, LF): every row once, each with the line and byte
    offset it starts at, however the blocks fall; a quoted CR or LF stays data."""
    import csv
    import io

    recs = [b"i,t"]
    for i in range(200):
        if i % 9 == 4:
            recs.append(b'%d,"two%slines"' % (i, eol))
        elif i % 13 == 6:
            recs.append(b"")  # a blank record: skipped by the parser, still a line
        else:
            recs.append(b"%d,x%d" % (i, i))
    body = eol.join(recs) + eol
    rows, chunks, problems = _csv_rows(tmp_path / "mac.csv", body, block_bytes=block_bytes)
    assert not problems
    want = [r for r in csv.reader(io.StringIO(body.decode(), newline=""))][1:]
    assert [[r[0]["i"], r[0]["t"]] for r in rows] == [w for w in want if w]
    starts = _physical_lines(body)
    for values, line, offset in rows:
        assert body[offset:].startswith(values["i"].encode() + b",")
        assert starts[line - 1] == offset
    assert chunks[-1].end.offset == len(body)
    assert chunks[-1].end.line == len(starts)  # the line after the last one


def test_csv_lone_cr_in_a_field_ends_the_record(tmp_path):
    """A lone CR in an unquoted field ends the record, as for pyarrow and Python's csv
    module: the part after it is reported (at its own line and offset), nothing after
    it shifts, and a CR inside quotes stays data."""
    recs = [b"i,t"] + [b"%d,x%d" % (i, i) for i in range(300)]
    recs[101] = b"100,left\rright"
    recs[151] = b'150,"in\rquotes"'
    recs[201] = b"200,bad\xffbytes"
    body = b"\n".join(recs) + b"\n"
    for block_bytes in (64, 1 << 20):
        rows, _, problems = _csv_rows(tmp_path / "cr.csv", body, block_bytes=block_bytes)
        starts = _physical_lines(body)
        got = {int(v["i"]): (v["t"], line, offset) for v, line, offset in rows}
        assert len(rows) == 299 and set(got) == set(range(300)) - {200}
        assert got[100] == ("left", 102, body.index(b"100,"))
        assert got[150] == ("in\rquotes", 153, body.index(b"150,"))
        assert got[299] == ("x299", 303, body.index(b"299,"))
        assert all(starts[line - 1] == offset for _, line, offset in got.values())
        assert [(p.line, p.offset, p.error) for p in problems] == [
            (103, body.index(b"right"), "expected 2 columns, got 1"),
            (204, body.index(b"200,bad"), "not valid utf-8 text"),
        ]


def test_csv_cr_only_oversized_record_skipped_in_place(tmp_path):
    """A CR-ended record longer than the limit is skipped up to its CR; the rows after
    it keep their lines and offsets."""
    body = b"i,t\r1,a\r2," + b"y" * 5000 + b"\r3,c\r4,d\r"
    rows, _, problems = _csv_rows(
        tmp_path / "big.csv", body, block_bytes=512, max_record_bytes=1000
    )
    assert [(v["i"], line, offset) for v, line, offset in rows] == [
        ("1", 2, 4),
        ("3", 4, body.index(b"3,c")),
        ("4", 5, body.index(b"4,d")),
    ]
    assert [(p.line, p.offset) for p in problems] == [(3, body.index(b"2,"))]


@pytest.mark.parametrize("fmt", ["lines", "jsonl"])
def test_lines_and_jsonl_end_lines_at_lf_only(tmp_path, fmt):
    """Lines and JSON Lines end a record at "\\n" only (JSON Lines by definition; JSON
    allows a CR as whitespace inside a record): a lone CR is data, positions agree."""
    body = {
        "lines": b"a\rb\nc\r\nd\n",
        "jsonl": b'{"a":1,\r"b":2}\n{"a":3}\r\n{"a":4}\n',
    }[fmt]
    f = tmp_path / f"d.{fmt}"
    f.write_bytes(body)
    chunks, problems = _chunks(f, fmt)
    assert not problems
    got = [
        (c.items(c.values)[i], c.position(i).line, c.position(i).offset)
        for c in chunks
        for i in range(len(c))
    ]
    first = b"a\rb" if fmt == "lines" else b'{"a":1,\r"b":2}'
    assert [g[1:] for g in got] == [
        (1, 0),
        (2, body.index(b"\n") + 1),
        (3, body.rindex(b"\n", 0, -1) + 1),
    ]
    assert got[0][0] == first


def test_csv_cr_read_from_a_chunk_end_gives_the_rest(tmp_path):
    """A CR-only CSV resumed at a chunk's ``end`` gives exactly the rows after it, with
    the same positions."""
    f = tmp_path / "mac.csv"
    f.write_bytes(b"i,t\r" + b"".join(b'%d,"a\rb"\r%d,c\r\r' % (i, i) for i in range(150)))
    src = Source(str(f), str(f))
    opts = ReadOptions(block_bytes=64, batch_rows=25)

    def rows(start=None):
        out, ends = [], []
        for c in READERS["csv"].read(src, Fields(), opts, lambda p: None, start):
            vals = c.items(c.values)
            out += [(vals[i], c.position(i)) for i in range(len(c))]
            ends.append(c.end)
        return out, ends

    full, ends = rows()
    assert len(full) == 300 and full[-1][1].line == 600
    middle = ends[len(ends) // 2]
    done = next(i for i, r in enumerate(full) if r[1].row == middle.row)
    assert rows(middle)[0] == full[done:]


@pytest.mark.parametrize("fmt", ["lines", "jsonl"])
def test_records_read_with_an_oversized_one_are_kept(tmp_path, fmt):
    """The records read together with the end of a skipped oversized record are
    scanned for their own ends, not taken as part of the next long one."""
    body = b"x" * 15 + b"\n1\n2\n" + b"y" * 30 + b"\n3\n"
    f = tmp_path / f"d.{fmt}"
    f.write_bytes(body)
    chunks, problems = _chunks(f, fmt, block_bytes=12, max_record_bytes=10)
    assert [c.items(c.values)[i] for c in chunks for i in range(len(c))] == [b"1", b"2", b"3"]
    assert [(p.line, p.offset) for p in problems] == [(1, 0), (4, body.index(b"y"))]
