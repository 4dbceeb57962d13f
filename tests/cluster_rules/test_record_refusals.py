"""Records the broker refuses one by one, on Apache Kafka: a timestamp outside the topic's
``message.timestamp.before.max.ms`` and a null key on a compacted topic.  librdkafka
2.16 fails the whole batch with the refused record's code; each failure says which
record the broker refused and why, and each batch-mate that it was not refused itself."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import cykafka

N = 20
BAD = 5


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("rule", ["timestamp", "null-key"])
def test_the_refused_record_and_its_batch_mates_are_told_apart(kafka, rule, idempotent) -> None:
    now = int(time.time() * 1000)
    if rule == "timestamp":
        config = {"message.timestamp.before.max.ms": "3600000"}
    else:
        config = {"cleanup.policy": "compact"}
    t = kafka.create_topic(f"refusals-{uuid.uuid4().hex[:8]}", partitions=1, config=config)
    conf = {**kafka.client_config(), "enable.idempotence": idempotent, "linger.ms": 200}
    with cykafka.Producer(conf) as p:
        futs = []
        for i in range(N):
            bad = i == BAD
            ts = now - 86_400_000 if bad and rule == "timestamp" else now
            key = None if bad and rule == "null-key" else b"k%d" % i
            futs.append(p.produce(t, b"v%d" % i, key=key, partition=0, timestamp=ts))
        p.flush(60)
    errors = [str(f.exception(0)) for f in futs]
    print(errors[BAD], errors[0], sep="\n")
    code = "INVALID_TIMESTAMP" if rule == "timestamp" else "INVALID_RECORD"
    assert all(f.exception(0).name == code for f in futs), errors
    want = "message.timestamp.before.max.ms" if rule == "timestamp" else "a null key"
    assert want in errors[BAD] and f"topic {t!r}" in errors[BAD], errors[BAD]
    mates = [e for i, e in enumerate(errors) if i != BAD]
    assert all("this record itself was not refused: send it again" in e for e in mates), mates


ROWS = 20_000
BAD_ROWS = (3_000, 11_000, 17_000)  # 0-based row indexes: input rows 3,001, ...


def _topic_and_rows(kafka: Any, tmp_path: Path, rule: str, prefix: str) -> tuple[str, Path]:
    """A 3-partition topic with ``rule`` and a JSON Lines file of ROWS keyed rows, those
    of BAD_ROWS breaking it (a day-old timestamp, or a null key on a compacted topic)."""
    import json

    now = int(time.time() * 1000)
    config = (
        {"message.timestamp.before.max.ms": "3600000"}
        if rule == "timestamp"
        else {"cleanup.policy": "compact"}
    )
    t = kafka.create_topic(f"{prefix}-{uuid.uuid4().hex[:8]}", partitions=3, config=config)
    src = tmp_path / "rows.jsonl"
    with src.open("w") as f:
        for i in range(ROWS):
            bad = i in BAD_ROWS
            ts = now - 86_400_000 if bad and rule == "timestamp" else now
            key = None if bad and rule == "null-key" else f"k{i % 13}"
            f.write(json.dumps({"k": key, "i": i, "ts": ts}) + "\n")
    return t, src


@pytest.mark.parametrize("rule", ["timestamp", "null-key"])
def test_import_sends_the_batch_mates_again_and_dead_letters_only_the_refused(
    kafka, read_back, tmp_path, rule
) -> None:
    """`cykafka import` (default preset: idempotent, ordered): the refused records become
    dead letters with the broker's rule; their batch-mates are sent again and delivered,
    each once; the summary counts what was re-sent, and at least as many rows as the read
    back finds out of their key's order."""
    import json
    from collections import Counter

    from support.cli import run_import_command
    from support.cluster_faults import summary_count

    t, src = _topic_and_rows(kafka, tmp_path, rule, "refusals")
    dead = tmp_path / "dead.jsonl"
    proc = run_import_command(
        kafka.bootstrap_servers, str(src), "-t", t, "--format", "jsonl", "--key-field", "k",
        "--timestamp-field", "ts", "--dead-letter", str(dead), timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 1, out
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert sorted(e["row"] for e in letters) == [i + 1 for i in BAD_ROWS], letters[:5]
    # (INVALID_RECORD names no rule: its error names both; INVALID_TIMESTAMP its own.)
    want = "message.timestamp.before.max.ms" if rule == "timestamp" else "a null key"
    assert all(want in e["error"] and e["fate"] == "not sent" for e in letters), letters
    assert not any("this record itself was not refused" in e["error"] for e in letters)
    assert summary_count(out, "delivered") == ROWS - len(BAD_ROWS), out
    assert summary_count(out, "not sent") == len(BAD_ROWS), out
    resent = summary_count(out, "re-sent")
    assert resent >= 1, out
    got = read_back(kafka.bootstrap_servers, t, expected=ROWS - len(BAD_ROWS))
    seen = Counter(json.loads(r.value)["i"] for rs in got.values() for r in rs)
    assert sorted(seen) == [i for i in range(ROWS) if i not in BAD_ROWS]
    assert max(seen.values()) == 1
    # Rows written after a later row of their key (their partition): the summary's count
    # of re-sent rows out of order bounds them.
    late = 0
    for records in got.values():
        last: dict[bytes, int] = {}
        for r in records:
            i = json.loads(r.value)["i"]
            if last.get(r.key, -1) > i:
                late += 1
            last[r.key] = max(i, last.get(r.key, -1))
    said = 0
    if "of them reached the topic after later rows" in out:
        said = int(out.split("re-sent", 1)[1].split("; ", 1)[1].split()[0].replace(",", ""))
    print(f"re-sent {resent}, said out of order {said}, read back out of key order {late}")
    assert late <= said <= resent, out


@pytest.mark.parametrize("rule", ["timestamp", "null-key"])
def test_exactly_once_import_commits_the_batch_mates_and_dead_letters_only_the_refused(
    kafka, tmp_path, rule
) -> None:
    """`cykafka import --exactly-once`: a refused record fails its transaction (librdkafka
    fails the batch, and a failed message makes the transaction abortable).  The import
    tries the transaction again without the refused records, so they alone become dead
    letters and every other row is committed once, in key order."""
    import json

    from support.cli import run_import_command
    from support.cluster_faults import summary_count
    from support.consume import committed_records

    t, src = _topic_and_rows(kafka, tmp_path, rule, "refusals-eo")
    dead = tmp_path / "dead.jsonl"
    proc = run_import_command(
        kafka.bootstrap_servers, str(src), "-t", t, "--format", "jsonl", "--key-field", "k",
        "--timestamp-field", "ts", "--dead-letter", str(dead), "--exactly-once",
        "--commit-every", "5000", timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    print(out)
    assert proc.returncode == 1, out
    # The failed transaction is the import's to abort: the producer's own warning on
    # closing one open (advice for Python callers: commit_transaction()) is not printed.
    assert "commit_transaction()" not in out and "closed with an open transaction" not in out
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert sorted(e["row"] for e in letters) == [i + 1 for i in BAD_ROWS], letters[:5]
    assert not any("this record itself was not refused" in e["error"] for e in letters)
    assert summary_count(out, "delivered") == ROWS - len(BAD_ROWS), out
    assert summary_count(out, "not sent") == len(BAD_ROWS), out
    got = committed_records(kafka.bootstrap_servers, t, 3)
    ids = [json.loads(r.value)["i"] for r in got]
    assert sorted(ids) == [i for i in range(ROWS) if i not in BAD_ROWS]
    by_key: dict[bytes, list[int]] = {}
    for r, i in zip(got, ids):
        by_key.setdefault(r.key, []).append(i)
    assert all(v == sorted(v) for v in by_key.values())  # whole transactions again: in order
