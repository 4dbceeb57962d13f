"""Records the broker refuses one by one, on Apache Kafka: a timestamp outside the topic's
``message.timestamp.before.max.ms`` and a null key on a compacted topic.  librdkafka
2.16 fails the whole batch with the refused record's code; each failure says which
record the broker refused and why, and each batch-mate that it was not refused itself."""

from __future__ import annotations

import time
import uuid

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
