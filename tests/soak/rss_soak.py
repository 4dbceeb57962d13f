"""Memory soak: N messages (default 10 M) through one producer; RSS stays flat and
every future is freed once it has resolved and the caller dropped it.

    PYTHONPATH=src python tests/soak/rss_soak.py                 # 10 M, local Tansu
    PYTHONPATH=src python tests/soak/rss_soak.py --messages 500000 --json out.json

The run alternates the two paths (single ``produce`` with a future each, and
``produce_batch``) in rounds; after each round it flushes, samples RSS
(/proc/self/statm) and Python's allocated-block count (``sys.getallocatedblocks``:
a round leaves 100 k+ futures behind if they leak), and checks that the extension
dropped its own reference to each resolved future (refcount of a sample; pending
futures are not GC-tracked, so the gc module cannot count them).  Pass criteria:
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
        blocks: list[int] = []
        held = 0
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
                blocks.append(sys.getallocatedblocks())
                print(
                    f"round {r:4d}  sent {sent:>10,}  rss {samples[-1]:8.1f} MB  "
                    f"python blocks {blocks[-1]:,}",
                    file=sys.stderr,
                    flush=True,
                )
        elapsed = time.monotonic() - t0
        gc.collect()
        w = min(2, len(samples) - 1)
        warm = samples[w]
        growth = samples[-1] - warm
        block_growth = blocks[-1] - blocks[w]
        result = {
            "messages": sent,
            "delivered": delivered,
            "failed": failed,
            "lost": sent - delivered - failed,
            "seconds": round(elapsed, 1),
            "rss_mb_after_warmup": round(warm, 1),
            "rss_mb_end": round(samples[-1], 1),
            "rss_mb_max": round(max(samples), 1),
            "rss_growth_mb": round(growth, 1),
            "python_blocks_growth": block_growth,
            "sampled_futures_still_referenced_by_extension": held,
        }
        ok = (
            growth < args.max_growth_mb
            and block_growth < 20_000
            and held == 0
            and failed == 0
            and result["lost"] == 0
        )
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
