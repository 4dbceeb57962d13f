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
