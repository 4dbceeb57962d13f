"""`cykafka verify`: passes on a topic that holds the file exactly, and names what is
wrong (missing, extra, duplicated, reordered) on one that does not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import cykafka
from cykafka.cli import main
from cykafka.cluster.committed import committed_messages
from cykafka.testing import committed_view, read_raw_log

ROWS = [{"k": f"user-{i % 3}", "v": f"event-{i}"} for i in range(30)]


def _file(tmp_path: Path) -> Path:
    f = tmp_path / "events.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return f


def _send(bootstrap: str, topic: str, rows: list[dict]) -> None:
    """Write ``rows`` as the import would with --key-field k --value-field v."""
    with cykafka.Producer({"bootstrap.servers": bootstrap}, preset="ordered") as p:
        report = p.produce_batch(
            topic, [r["v"].encode() for r in rows], [r["k"].encode() for r in rows]
        ).result(30)
        assert report.ok


def _verify(broker, f: Path, topic: str, *extra: str) -> int:
    return main(
        [
            "verify",
            "-b",
            broker.bootstrap_servers,
            str(f),
            "-t",
            topic,
            "--key-field",
            "k",
            "--value-field",
            "v",
            *extra,
        ]
    )


def test_passes_on_an_exact_import(broker, topic, tmp_path, capsys) -> None:
    name = topic(partitions=2)
    f = _file(tmp_path)
    assert (
        main(
            [
                "import",
                "-b",
                broker.bootstrap_servers,
                "--no-progress",
                str(f),
                "-t",
                name,
                "--key-field",
                "k",
                "--value-field",
                "v",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert _verify(broker, f, name) == 0
    out = capsys.readouterr().out
    assert "expected    30 records" in out and "in topic    30 records" in out
    assert "result      OK" in out


@pytest.mark.parametrize(
    ("change", "kind", "example"),
    [
        ("missing", "missing     1", "events.jsonl row 8"),
        ("extra", "extra       1", 'value "not-in-the-file"'),
        ("duplicated", "duplicated  1", "again events.jsonl row 12"),
        ("reordered", "reordered   1", "holds events.jsonl row 4 but comes after"),
    ],
)
def test_fails_and_names_the_problem(broker, topic, tmp_path, capsys, change, kind, example):
    name = topic()
    f = _file(tmp_path)
    rows = list(ROWS)
    if change == "missing":
        del rows[7]
    elif change == "extra":
        rows.insert(20, {"k": "user-9", "v": "not-in-the-file"})
    elif change == "duplicated":
        rows.insert(25, rows[11])
    else:  # rows 4 and 7 (same key) swapped
        rows[3], rows[6] = rows[6], rows[3]
    _send(broker.bootstrap_servers, name, rows)
    assert _verify(broker, f, name) == 1
    out = capsys.readouterr().out
    assert kind in out and example in out, out
    assert "result      MISMATCH" in out
    for other in {"missing", "extra", "duplicated", "reordered"} - {change}:
        assert f"{other:<11} 0" in out, out


def test_aborted_transactions_are_not_counted(broker, topic, tmp_path, capsys) -> None:
    """On Tansu a read_committed consumer still returns aborted records; verify must
    not (the committed view agrees with cykafka.testing's)."""
    name = topic()
    f = _file(tmp_path)
    bs = broker.bootstrap_servers
    with cykafka.Producer(
        {"bootstrap.servers": bs, "transactional.id": f"verify-{name}"}, preset="exactly_once"
    ) as p:
        p.init_transactions(30)
        p.begin_transaction()
        p.produce_batch(name, [b"aborted"] * 5, [b"user-0"] * 5).result(30)
        p.abort_transaction(30)
        with p.transaction():
            p.produce_batch(
                name, [r["v"].encode() for r in ROWS], [r["k"].encode() for r in ROWS]
            ).result(30)
    assert [m.value for m in committed_messages({"bootstrap.servers": bs}, name)] == [
        r.value for r in committed_view(read_raw_log(bs, name))
    ]
    assert _verify(broker, f, name) == 0, capsys.readouterr().out


def test_missing_topic_and_bad_input_are_named(broker, topic, tmp_path, capsys) -> None:
    f = _file(tmp_path)
    assert _verify(broker, f, "no-such-topic-xyz") == 2
    assert "no-such-topic-xyz" in capsys.readouterr().err
    name = topic()
    assert _verify(broker, tmp_path / "nope.jsonl", name) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_secured_clusters_read_through_a_read_committed_consumer(broker, topic) -> None:
    """Where the batch headers cannot be read over a plain socket (SSL/SASL: real
    Kafka), the broker's own read_committed filtering is used, read to the high
    watermark.  On a topic without transactions both ways give the same records."""
    from cykafka.cluster import committed

    name = topic(partitions=3)
    bs = broker.bootstrap_servers
    _send(bs, name, ROWS)
    raw = list(committed_messages({"bootstrap.servers": bs}, name))
    assert len(raw) == len(ROWS)
    assert list(committed._broker_filtered({"bootstrap.servers": bs}, name, [0, 1, 2], 30)) == raw


def test_a_key_in_several_partitions_is_an_order_failure(broker, topic, tmp_path, capsys):
    """Each key's rows spread over four partitions, the later rows in the lower
    partitions: within each (key, partition) the input order holds, across the topic
    it does not (a reader of the four partitions sees them in any order)."""
    name = topic(partitions=4)
    f = _file(tmp_path)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        report = p.produce_batch(
            name,
            [r["v"].encode() for r in ROWS],
            [r["k"].encode() for r in ROWS],
            partitions=[3 - i * 4 // len(ROWS) for i in range(len(ROWS))],
        ).result(30)
        assert report.ok
    assert _verify(broker, f, name) == 1
    out = capsys.readouterr().out
    assert "split keys  3" in out and "reordered   0" in out, out
    assert 'key "user-0": 10 records in partitions 0, 1, 2, 3' in out, out
    assert "result      MISMATCH" in out


def test_keys_in_one_partition_each_but_out_of_input_order(broker, topic, tmp_path, capsys):
    name = topic(partitions=2)
    f = _file(tmp_path)
    rows = list(reversed(ROWS))
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        keys = [r["k"].encode() for r in rows]
        parts = [int(r["k"][-1]) % 2 for r in rows]
        vals = [r["v"].encode() for r in rows]
        assert p.produce_batch(name, vals, keys, partitions=parts).result(30).ok
    assert _verify(broker, f, name) == 1
    out = capsys.readouterr().out
    assert "split keys  0" in out and "reordered   27" in out, out


def test_a_changed_record_shows_its_first_differing_field(broker, topic, tmp_path, capsys):
    """The value differs only after the first 80 bytes: the report shows that place,
    not a prefix cut before it."""
    name = topic()
    rows = [{"k": f"user-{i % 3}", "v": "a" * 80 + f"-{i}"} for i in range(10)]
    f = tmp_path / "long.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sent = list(rows)
    sent[5] = {"k": "user-2", "v": "a" * 80 + "-X"}
    _send(broker.bootstrap_servers, name, sent)
    assert _verify(broker, f, name) == 1
    out = capsys.readouterr().out
    assert "missing     1" in out and "extra       1" in out, out
    assert (
        "vs long.jsonl row 6, first differs at value byte 81: "
        'expected ..."aaaaaaaaaaaaaaaaaaa-5", found ..."aaaaaaaaaaaaaaaaaaa-X"'
    ) in out, out


def test_rows_whose_partition_field_is_null_are_where_the_partitioner_put_them(
    broker, topic, tmp_path, capsys
):
    """A null --partition-field value leaves the row to the partitioner: verify expects
    it where the partitioner puts its key (it stopped with a TypeError), passes on the
    import, and shows such a row when its record differs."""
    from cykafka.partitioning import partition_for

    rows = [{"k": f"user-{i}", "p": None if i == 4 else i % 2, "v": f"event-{i}"} for i in range(8)]
    f = tmp_path / "parts.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = topic(partitions=2)
    args = ["-b", broker.bootstrap_servers, "--key-field", "k", "--value-field", "v"]
    assert main(["import", str(f), "-t", imported, *args, "--partition-field", "p"]) == 0
    assert _verify(broker, f, imported, "--partition-field", "p") == 0, capsys.readouterr()
    capsys.readouterr()
    changed = topic(partitions=2)
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}, preset="ordered") as p:
        for i, r in enumerate(rows):
            value = b"event-X" if i == 4 else r["v"].encode()
            key = r["k"].encode()
            part = partition_for("consistent_random", key, 2) if r["p"] is None else r["p"]
            p.produce(changed, value, key, partition=part).result(30)
    assert _verify(broker, f, changed, "--partition-field", "p") == 1
    out = capsys.readouterr().out
    assert "missing     1" in out and "extra       1" in out, out
    assert "vs parts.jsonl row 5, first differs at value byte 6" in out, out


def test_a_row_without_partition_or_key_cannot_be_placed_and_says_so(
    broker, topic, tmp_path, capsys
):
    f = tmp_path / "unplaced.jsonl"
    f.write_text('{"k": "a", "p": 0, "v": "x"}\n{"k": null, "p": null, "v": "y"}\n')
    assert _verify(broker, f, topic(partitions=2), "--partition-field", "p") == 2
    err = capsys.readouterr().err
    assert "unplaced.jsonl row 2: --partition-field 'p' is null" in err, err
    assert "at random for a row without a key" in err and "without --partition-field" in err


@pytest.mark.parametrize(
    ("imported", "checked", "hint"),
    [
        # imported with --key-field v, checked with --key-field k
        (
            ["--key-field", "v"],
            ["--key-field", "k"],
            "With --key-field v (this check: --key-field k)",
        ),
        # imported without a key, checked with one (the lines format gives the same records)
        ([], ["--key-field", "k"], "With no --key-field (this check: --key-field k)"),
        # imported with a value field, checked without
        (["--value-field", "v"], [], "With --value-field v (this check: no --value-field)"),
        # a CSV file imported as lines (each line as it is), checked as CSV
        (["--format", "lines"], [], "With --format lines (this check: csv)"),
    ],
)
def test_other_options_that_match_are_named(
    broker, topic, tmp_path, capsys, imported, checked, hint
) -> None:
    """Nearly every record missing and extra: the report says which other option makes
    the topic's records match the input (the import really ran with it), and that
    option verifies OK."""
    name = topic(partitions=2)
    if "lines" in imported:
        f = tmp_path / "events.csv"
        f.write_text("k,v\n" + "".join(f"{r['k']},{r['v']}\n" for r in ROWS))
    else:
        f = _file(tmp_path)
    base = ["-b", broker.bootstrap_servers, str(f), "-t", name]
    assert main(["import", "--no-progress", *base, *imported]) == 0
    capsys.readouterr()
    assert main(["verify", *base, *checked]) == 1
    out = capsys.readouterr().out
    assert "missing     " in out and "extra       " in out, out
    flat = " ".join(out.split())  # the hint is wrapped
    assert hint in flat and "of the topic's first" in flat, out
    # (a bytes repr starts a word: a topic name ending in "b" is not one)
    assert not re.search(r"(?<![\w.-])b'", out), "keys and values that are text print as text"
    assert main(["verify", *base, *imported]) == 0


def test_no_hint_when_only_some_records_differ(broker, topic, tmp_path, capsys) -> None:
    name = topic()
    f = _file(tmp_path)
    _send(broker.bootstrap_servers, name, ROWS[:20])
    assert _verify(broker, f, name) == 1
    out = capsys.readouterr().out
    assert "missing     10" in out and "  hint  " not in out, out
