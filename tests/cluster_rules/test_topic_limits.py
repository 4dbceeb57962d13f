"""A topic's own limit on record batches, on Apache Kafka: a topic whose
``max.message.bytes`` (4096) is far below librdkafka's ``batch.size`` (1000000).  The
broker refuses a larger record batch whole and librdkafka fails every message in it;
each front door (``produce()``, ``produce_batch``, ``cykafka import``) sizes its batches
for the topic, so every row that fits is delivered, once and in order per key, and the
one row too large alone fails, naming the limit.  Read back with a plain
``read_committed`` consumer."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import cykafka
from support.cli import run_import_command

LIMIT = 4096
N = 2000
#: The row too large alone: random hex, which compression cannot bring under the limit.
BIG_AT = N // 2


def rows() -> list[tuple[bytes, bytes]]:
    """(key, value) of N rows of 20-200 bytes, 13 keys; row BIG_AT is ~9 KB."""
    rnd = random.Random(44)
    out = []
    for i in range(N):
        pad = rnd.randbytes(rnd.randrange(4, 90)).hex()
        big = rnd.randbytes(4500).hex() if i == BIG_AT else ""
        out.append((b"k%d" % (i % 13), json.dumps({"i": i, "pad": pad + big}).encode()))
    return out


def small_topic(kafka) -> str:
    name = f"limit-{uuid.uuid4().hex[:8]}"
    return kafka.create_topic(name, partitions=3, config={"max.message.bytes": str(LIMIT)})


def check_read_back(read_back, kafka, topic: str) -> None:
    """Every row but BIG_AT read back once, each key in one partition in row order."""
    got = read_back(kafka.bootstrap_servers, topic, expected=N - 1)
    seen: list[int] = []
    where: dict[bytes, set[int]] = defaultdict(set)
    for p, records in got.items():
        last: dict[bytes, int] = {}
        for r in records:
            i = json.loads(r.value)["i"]
            seen.append(i)
            where[r.key].add(p)
            assert last.get(r.key, -1) < i, f"key {r.key!r} out of order in partition {p}"
            last[r.key] = i
    counts = Counter(seen)
    print(f"rows {N}, read {len(seen)}, duplicates {sum(c - 1 for c in counts.values())}")
    assert sorted(counts) == [i for i in range(N) if i != BIG_AT]
    assert max(counts.values()) == 1
    assert all(len(ps) == 1 for ps in where.values())


def says_limit(text: str) -> None:
    assert f"at most {LIMIT} bytes (its max.message.bytes)" in text, text


def test_produce_delivers_every_row_that_fits(kafka, read_back) -> None:
    """produce() with the topic named: batches sized for it, the big row alone fails."""
    t = small_topic(kafka)
    with cykafka.Producer(kafka.client_config(), preset="ordered", topics=[t]) as p:
        assert p.batch_sizing == (
            f"batch.size lowered to {LIMIT} for topic {t}: its max.message.bytes is {LIMIT}"
        )
        assert p.guarantees.notes[-1].startswith(p.batch_sizing)
        futs = [p.produce(t, v, key=k) for k, v in rows()]
        p.flush(120)
    failed = {i: f.exception(0) for i, f in enumerate(futs) if f.exception(0) is not None}
    assert list(failed) == [BIG_AT], {i: str(e) for i, e in list(failed.items())[:3]}
    says_limit(str(failed[BIG_AT]))
    check_read_back(read_back, kafka, t)


def test_produce_batch_delivers_every_row_that_fits(kafka, read_back) -> None:
    t = small_topic(kafka)
    data = rows()
    with cykafka.Producer(kafka.client_config(), preset="ordered", topics=[t]) as p:
        report = p.produce_batch(t, [v for _, v in data], [k for k, _ in data]).result(120)
    assert (report.delivered, report.failed) == (N - 1, 1), report
    ((index, error),) = report.errors
    assert index == BIG_AT
    says_limit(str(error))
    check_read_back(read_back, kafka, t)


def test_a_producer_not_told_the_topic_names_the_fix(kafka) -> None:
    """Without topics=, librdkafka's batches exceed the limit and fail whole: the error
    says why and how to size them."""
    t = small_topic(kafka)
    with cykafka.Producer(kafka.client_config(), preset="ordered") as p:
        futs = [p.produce(t, v, key=k) for k, v in rows()[:300]]
        p.flush(60)
    errors = [f.exception(0) for f in futs]
    assert all(e is not None for e in errors)
    assert f"Producer(topics=[{t!r}])" in str(errors[0]), errors[0]


def test_import_delivers_every_row_that_fits(kafka, read_back, tmp_path: Path) -> None:
    """`cykafka import`: the topic check reads the limit and says it lowered batch.size;
    the big row is a dead letter naming the limit; the summary adds up."""
    t = small_topic(kafka)
    src = tmp_path / "rows.jsonl"
    src.write_bytes(b"".join(v + b"\n" for _, v in rows()))
    dead = tmp_path / "dead.jsonl"
    # Keys by the row's position mod 13, as the other front doors' rows.
    lines = [json.loads(v) for _, v in rows()]
    src.write_text("".join(json.dumps({"k": f"k{d['i'] % 13}", **d}) + "\n" for d in lines))
    proc = run_import_command(
        kafka.bootstrap_servers,
        str(src),
        "--topic",
        t,
        "--preset",
        "ordered",
        "--key-field",
        "k",
        "--dead-letter",
        str(dead),
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    print(out)
    assert f"batch.size lowered to {LIMIT} for topic {t}: its max.message.bytes is {LIMIT}" in out
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert len(letters) == 1, letters
    says_limit(json.dumps(letters[0]))
    assert proc.returncode != 0  # a row was not delivered: said in the exit status
    got = read_back(kafka.bootstrap_servers, t, expected=N - 1)
    values = [json.loads(r.value) for rs in got.values() for r in rs]
    assert sorted(v["i"] for v in values) == [i for i in range(N) if i != BIG_AT]
    for p, records in got.items():
        per_key: dict[bytes, list[int]] = defaultdict(list)
        for r in records:
            per_key[r.key].append(json.loads(r.value)["i"])
        assert all(v == sorted(v) for v in per_key.values()), p
