"""Reproduce Tansu 0.6.0's wrong low watermark (notes/tansu.md): two producers write keyed
batches to a fresh topic at once; print trials where a partition's reported low watermark
is not 0 although a read from offset 0 finds every record.

    PYTHONPATH=src python notes/tansu_low_watermark.py [TRIALS]
"""

import collections
import sys
import threading
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import cykafka
from cykafka.broker import LocalBroker

PARTS, PER_PRODUCER = 3, 3000


def read_from_zero(bootstrap: str, topic: str) -> tuple[dict, dict]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "fetch.wait.max.ms": 50})
    marks = {
        p: c.get_watermark_offsets(TopicPartition(topic, p), cached=False) for p in range(PARTS)
    }
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
    out: dict[int, list[int]] = collections.defaultdict(list)
    quiet_until = time.time() + 3
    while time.time() < quiet_until:
        msgs = c.consume(1000, 0.3)
        if msgs:
            quiet_until = time.time() + 3
        for m in msgs:
            if not m.error():
                out[m.partition()].append(m.offset())
    c.close()
    return marks, out


def main(trials: int) -> None:
    with LocalBroker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        for trial in range(trials):
            topic = f"lowwm-{trial}"
            admin.create_topics([NewTopic(topic, PARTS, 1)])[topic].result()

            def write(i: int, topic: str = topic) -> None:
                conf = {"bootstrap.servers": b.bootstrap_servers, "linger.ms": 5}
                with cykafka.Producer(conf) as p:
                    keys = [f"user-{j % 23}" for j in range(PER_PRODUCER)]
                    values = [f"{i}-{j}" for j in range(PER_PRODUCER)]
                    assert p.produce_batch(topic, values, keys).result(60).ok

            threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            marks, out = read_from_zero(b.bootstrap_servers, topic)
            n = sum(map(len, out.values()))
            if any(low for low, _ in marks.values()) or n != 2 * PER_PRODUCER:
                first = {p: v[0] for p, v in sorted(out.items())}
                print(
                    f"trial {trial}: watermarks {marks}; read from 0: {n} records, first offsets {first}"
                )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
