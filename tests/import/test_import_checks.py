"""`cykafka import` checks the input before reading it for real: a field absent from
the first block of JSON Lines, a .json file that is one JSON array, corrupt or
truncated compressed input, text in another encoding.  A clear error naming the file,
no traceback, exit status 2 (or 1 once rows were sent), and nothing sent up front."""

from __future__ import annotations

import json

import pytest

from support.cli import import_in_process as _import
from support.cli import run_cykafka as _cli


def _high_watermark(broker, read_back, name: str) -> int:
    return sum(len(v) for v in read_back(broker.bootstrap_servers, name, timeout=10).values())


def test_jsonl_key_field_in_no_record_is_refused(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "orders.jsonl"
    f.write_text("".join(json.dumps({"id": i, "user": f"u{i % 3}"}) + "\n" for i in range(100)))
    assert _import(broker, str(f), "-t", name, "--key-field", "usr") == 2
    err = capsys.readouterr().err
    assert f"{f}: --key-field 'usr' is in no record of the first block" in err, err
    assert "['id', 'user']" in err
    assert _high_watermark(broker, read_back, name) == 0
    # A field only some records of the first block have is fine (records need not
    # share fields): the others get a NULL key.
    g = tmp_path / "sparse.jsonl"
    g.write_text('{"id": 1}\n{"id": 2, "user": "a"}\n')
    assert _import(broker, str(g), "-t", name, "--key-field", "user") == 0
    keys = [r.key for r in read_back(broker.bootstrap_servers, name, expected=2)[0]]
    assert keys == [None, b"a"]


@pytest.mark.parametrize("pretty", [False, True])
def test_json_array_file_is_refused_with_a_hint(broker, topic, read_back, tmp_path, pretty):
    name = topic()
    f = tmp_path / "export.json"
    rows = [{"id": i} for i in range(50)]
    f.write_text(json.dumps(rows, indent=2 if pretty else None))
    p = _cli("import", "-b", broker.bootstrap_servers, "-t", name, "--no-progress", str(f))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert f"{f}: this is one JSON document (an array), not JSON Lines" in p.stderr
    assert "jq -c '.[]'" in p.stderr
    assert _high_watermark(broker, read_back, name) == 0
    # One JSON array per line is JSON Lines: each array is a record.
    g = tmp_path / "arrays.jsonl"
    g.write_text("[1, 2]\n[3]\n")
    assert _import(broker, str(g), "-t", name) == 0


def _csv_bytes(n: int) -> bytes:
    return b"id,user,amount\n" + b"".join(b"%d,u%d,%d\n" % (i, i % 7, i * 3) for i in range(n))


def _zstd(b: bytes) -> bytes:
    import pyarrow as pa

    return pa.Codec("zstd").compress(b).to_pybytes()


def _damaged(kind: str) -> tuple[str, bytes]:
    import gzip

    data = _csv_bytes(300_000)
    if kind == "truncated-gz":
        z = gzip.compress(data)
        return "rows.csv.gz", z[: len(z) // 2]
    if kind == "corrupt-gz":
        z = bytearray(gzip.compress(data))
        for i in range(2000, 2100):
            z[i] ^= 0x5A
        return "rows.csv.gz", bytes(z)
    if kind == "not-gz":
        return "rows.csv.gz", data[:5000]
    if kind == "truncated-zst":
        z = _zstd(data)
        return "rows.csv.zst", z[: len(z) // 2]
    assert kind == "corrupt-zst-header"
    z = bytearray(_zstd(data))
    z[5] ^= 0xFF
    z[6] ^= 0xFF
    return "rows.csv.zst", bytes(z)


@pytest.mark.parametrize(
    "kind", ["truncated-gz", "corrupt-gz", "not-gz", "truncated-zst", "corrupt-zst-header"]
)
def test_damaged_compressed_input_is_refused_before_sending(
    broker, topic, read_back, tmp_path, kind
):
    name = topic()
    fname, blob = _damaged(kind)
    f = tmp_path / fname
    f.write_bytes(blob)
    p = _cli("import", "-b", broker.bootstrap_servers, "-t", name, "--no-progress", str(f))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    codec = "gzip" if fname.endswith(".gz") else "zstd"
    assert f"{f}: corrupt or truncated {codec} data after " in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert _high_watermark(broker, read_back, name) == 0


def test_compressed_progress_counts_decompressed_bytes(broker, topic, read_back, tmp_path):
    """Progress and the summary count the bytes the reader goes through (decompressed)
    against a total in the same unit: never past 100 %."""
    import gzip
    import re

    name = topic()
    data = _csv_bytes(200_000)
    f = tmp_path / "rows.csv.gz"
    f.write_bytes(gzip.compress(data))
    p = _cli("import", "-b", broker.bootstrap_servers, "-t", name, "--no-progress", str(f))
    assert p.returncode == 0, p.stdout + p.stderr
    pcts = [int(x) for x in re.findall(r"cykafka import: (\d+)%", p.stderr)]
    assert pcts and max(pcts) == 100, p.stderr
    assert f"reading {f} (csv, {len(data) / 1e6:.1f} MB)" in p.stderr, p.stderr
    assert f"rows read   200,000  ({len(data) / 1e6:,.1f} MB)" in p.stdout, p.stdout


def test_jsonl_in_cp1252_is_refused_with_the_conversion(broker, topic, read_back, tmp_path):
    name = topic()
    f = tmp_path / "legacy.jsonl"
    rows = "".join(
        json.dumps({"id": i, "name": f"Müller {i}"}, ensure_ascii=False) + "\n" for i in range(50)
    )
    f.write_bytes(rows.encode("cp1252"))
    p = _cli("import", "-b", broker.bootstrap_servers, "-t", name, "--no-progress", str(f))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stdout + p.stderr
    assert f"{f}: not UTF-8 text: 50 of the first 50 lines are not valid UTF-8" in p.stderr
    assert (
        f"JSON Lines must be UTF-8: convert it first, e.g. iconv -f cp1252 -t utf-8 {f}" in p.stderr
    )
    assert _high_watermark(broker, read_back, name) == 0
