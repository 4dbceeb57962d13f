"""Memory soak: N messages (default 10 M) through one producer; RSS stays flat and
every future is freed once it has resolved and the caller dropped it.

    PYTHONPATH=src python tests/soak/rss_soak.py                 # 10 M, local Tansu
    PYTHONPATH=src python tests/soak/rss_soak.py --messages 500000 --json out.json

The run alternates the two paths (single ``produce`` with a future each, and
``produce_batch``) in rounds; after each round it flushes, samples RSS
(/proc/self/statm) and counts the DeliveryFuture/BatchFuture objects still alive
(``gc.get_objects()``; they are GC-tracked), and checks that the extension dropped
its own reference to each resolved future (refcount of a sample).  Pass criteria:
RSS growth from the first sampled round (after warm-up) to the last is under
``--max-growth-mb`` (default 32 MB), every sampled future is dead, and every
message was delivered.  Prints one JSON line (the figure for the README table).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import cykafka
from cykafka.broker import LocalBroker

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def live_futures() -> int:
    kinds = (cykafka.DeliveryFuture, cykafka.BatchFuture)
    return sum(1 for o in gc.get_objects() if type(o) in kinds)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=10_000_000)
    ap.add_argument("--round", type=int, default=200_000, help="messages per round")
    ap.add_argument("--max-growth-mb", type=float, default=32.0)
    ap.add_argument("--bootstrap", help="use this broker instead of a local Tansu")
    ap.add_argument("--topic", help="an existing topic on --bootstrap")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args(argv)

    broker = None
    servers = args.bootstrap
    if servers is None:
        broker = LocalBroker().start()
        servers = broker.bootstrap_servers
    try:
        topic = args.topic or f"soak-{os.getpid()}"
        if broker is not None:
            broker.create_topic(topic, partitions=4)
        payload = b"v" * 100
        samples: list[float] = []
        held = max_alive = 0
        delivered = failed = sent = 0
        t0 = time.monotonic()
        with cykafka.Producer({"bootstrap.servers": servers, "linger.ms": 5}) as p:
            r = 0
            while sent < args.messages:
                n = min(args.round, args.messages - sent)
                if r % 2 == 0:
                    futs = [p.produce(topic, payload, key=b"%d" % (i % 64)) for i in range(n)]
                    assert p.flush(120) == 0
                    for f in futs:
                        if f.exception(0) is None:
                            delivered += 1
                        else:
                            failed += 1
                    # 3 = the list, the loop variable, getrefcount's argument: the
                    # extension holds no reference once the future resolved.
                    for i in range(0, n, max(1, n // 1000)):
                        f = futs[i]
                        held += sys.getrefcount(f) != 3
                    del futs, f
                else:
                    bf = p.produce_batch(topic, [payload] * n)
                    rep = bf.result(120)
                    delivered += rep.delivered
                    failed += rep.failed
                    del bf, rep
                sent += n
                r += 1
                gc.collect()
                samples.append(rss_mb())
                alive = live_futures()
                max_alive = max(max_alive, alive)
                print(f"round {r:4d}  sent {sent:>10,}  rss {samples[-1]:8.1f} MB  "
                      f"futures alive {alive}", file=sys.stderr, flush=True)
        elapsed = time.monotonic() - t0
        gc.collect()
        live = live_futures()
        warm = samples[min(2, len(samples) - 1)]
        growth = samples[-1] - warm
        result = {
            "messages": sent, "delivered": delivered, "failed": failed,
            "lost": sent - delivered - failed, "seconds": round(elapsed, 1),
            "rss_mb_after_warmup": round(warm, 1), "rss_mb_end": round(samples[-1], 1),
            "rss_mb_max": round(max(samples), 1), "rss_growth_mb": round(growth, 1),
            "futures_alive_end": live, "futures_alive_max_between_rounds": max_alive,
            "sampled_futures_still_referenced_by_extension": held,
        }
        ok = (growth < args.max_growth_mb and live == 0 and max_alive == 0 and held == 0
              and failed == 0
              and result["lost"] == 0)
        result["ok"] = ok
        print(json.dumps(result))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f)
        return 0 if ok else 1
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
