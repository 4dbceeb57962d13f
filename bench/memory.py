"""Memory checks (run by bench/run.py; also runs on its own).

``python bench/memory.py [--bootstrap HOST:PORT] [--futures N] [--mem-count N] [--size B]``

(a) Python heap per pending DeliveryFuture: a producer pointed at an
    unreachable broker (127.0.0.1:1, large queue.buffering.max.messages) keeps
    N futures pending; tracemalloc measures the heap they add (the list holding
    them is allocated before the first measurement, the value is one shared
    bytes object).  close(timeout=0) then fails them all (purged).
    Target: at most 150 bytes per future.
(b) Futures are freed once resolved: N futures against the real broker,
    result() on each, then dropped; tracemalloc's current size must come back
    to the baseline (at most 2 bytes per future left, i.e. nothing per future).
    The same is checked for the purged futures of (a).
(c) RSS stays flat over --mem-count messages through produce_batch, in chunks
    of 1,000,000 (the same list of values each time, every chunk's BatchReport
    waited for): the RSS after the last chunk within 10 % of that after the first.
(d) RSS per failed message of a batch whose --failures messages all fail, with
    the BatchReport held, measured first in the process: refused by librdkafka
    (larger than message.max.bytes), timed out (message.timeout.ms runs out on an
    unreachable broker, so librdkafka held every message first), and the two
    alternating (every failure its own run: the worst case).  RSS is also given
    after malloc_trim(0), which returns heap librdkafka freed but glibc kept; the
    target (at most 150 B per failed message) is on that figure.

Prints one JSON line: {"targets": [...], "lines": [...], and the raw numbers}.
Without --bootstrap it starts its own LocalBroker.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import tracemalloc
import uuid
from typing import Any, Optional

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
try:
    import cykafka
except ImportError:
    sys.path.insert(0, _SRC)
    import cykafka

MAX_BYTES_PER_FUTURE = 150
MAX_BYTES_PER_FAILURE = 150
RSS_TOLERANCE = 0.10
CHUNK = 1_000_000


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def pending_future_cost(n: int) -> dict:
    p = cykafka.Producer(
        {
            "bootstrap.servers": "127.0.0.1:1",
            "queue.buffering.max.messages": max(2 * n, 100000),
            "message.timeout.ms": 600000,
            "log_level": 0,
        }
    )
    value = b"v" * 100
    futs: list[Any] = [None] * n
    produce = p.produce
    produce("mem-pending", value)  # topic handle and caches exist before measuring
    tracemalloc.start()
    try:
        base = traced()
        for i in range(n):
            futs[i] = produce("mem-pending", value)
        with_futures = traced()
        pending = sum(1 for f in futs if not f.done())
        size = sys.getsizeof(futs[0])
        p.close(timeout=0)  # purges: every future fails
        failed = sum(1 for f in futs if f.exception(0) is not None)
        futs = []
        after = traced()
    finally:
        tracemalloc.stop()
    return {
        "n": n,
        "pending_when_measured": pending,
        "bytes_per_pending_future": (with_futures - base) / n,
        "sizeof_future": size,
        "failed_after_close": failed,
        "residual_bytes_per_future_after_purge": (after - base) / n,
    }


def _malloc_trim() -> None:
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


FAILURE_KINDS = ("refused", "timed out", "alternating")


def failed_batch_cost(n: int, kind: str) -> dict:
    """RSS per failed message of one batch of ``n`` that all fail (report held):
    refused by librdkafka (too large), timed out (delivery reports), or the two
    alternating (no two neighbours fail alike: one run per failure, the worst
    case for the compact failure record)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": "127.0.0.1:1",
        "log_level": 0,
        "message.max.bytes": 1000,
        "message.timeout.ms": 1000,
        "queue.buffering.max.messages": n + 10,
    }
    big, small = b"x" * 2000, b"v" * 100
    if kind == "refused":
        values = [big] * n
    elif kind == "timed out":
        values = [small] * n
    else:
        values = [big, small] * (n // 2)
    value = small
    p = cykafka.Producer(conf)
    try:
        p.produce_batch("mem-failed", [value]).result(60)  # topic handle, caches
        gc.collect()
        _malloc_trim()
        base = rss_bytes()
        t0 = time.perf_counter()
        report = p.produce_batch("mem-failed", values).result(120)
        seconds = time.perf_counter() - t0
        # The event thread frees librdkafka's copies of the messages without the
        # GIL, just after it resolved the batch: measure what the report keeps,
        # not those copies in the moment they are being freed.
        deadline = time.monotonic() + 10
        while p._counters()["outq_len"] and time.monotonic() < deadline:
            time.sleep(0.01)
        gc.collect()
        held = rss_bytes()
        _malloc_trim()
        trimmed = rss_bytes()
        errors = report.errors
        first = errors[0][1].name if errors else None
        causes = len({id(e) for _, e in errors[:: max(1, n // 1000)]})
    finally:
        p.close(0)
    return {
        "n": n,
        "kind": kind,
        "failed": report.failed,
        "error": first,
        "seconds": seconds,
        "bytes_per_failure": (held - base) / n,
        "bytes_per_failure_trimmed": (trimmed - base) / n,
        "distinct_exceptions_sampled": causes,
    }


def resolved_futures_freed(bootstrap: str, topic: str, n: int) -> dict:
    value = b"v" * 100
    with cykafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as p:
        p.produce(topic, value).result(30)
        futs: list[Any] = [None] * n
        tracemalloc.start()
        try:
            base = traced()
            for i in range(n):
                futs[i] = p.produce(topic, value)
            ok = 0
            for f in futs:
                f.result(60)
                ok += 1
            resolved = traced()
            futs = []
            after = traced()
        finally:
            tracemalloc.stop()
    return {
        "n": n,
        "delivered": ok,
        "bytes_per_resolved_future": (resolved - base) / n,
        "residual_bytes_per_future_after_drop": (after - base) / n,
    }


def rss_over_batches(bootstrap: str, topic: str, total: int, size: int) -> dict:
    chunk = min(CHUNK, total)
    chunks = -(-total // chunk)
    data = os.urandom(chunk * size)
    values = [data[i * size : (i + 1) * size] for i in range(chunk)]
    rss = []
    delivered = failed = 0
    t0 = time.perf_counter()
    with cykafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as p:
        p.produce(topic, b"warm-up").result(30)
        rss.append(rss_bytes())
        for c in range(chunks):
            vals = values if (c + 1) * chunk <= total else values[: total - c * chunk]
            rep = p.produce_batch(topic, vals).result()
            delivered += rep.delivered
            failed += rep.failed
            rss.append(rss_bytes())
    seconds = time.perf_counter() - t0
    first, last = rss[1], rss[-1]
    return {
        "messages": total,
        "chunk": chunk,
        "delivered": delivered,
        "failed": failed,
        "seconds": seconds,
        "rss_before_mb": rss[0] / 2**20,
        "rss_after_each_chunk_mb": [r / 2**20 for r in rss[1:]],
        "growth_first_to_last": (last - first) / first,
    }


def _admin_topic(bootstrap: str, name: str, delete: bool = False) -> None:
    from confluent_kafka.admin import AdminClient

    from cykafka.cluster.admin import ensure_topic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    if delete:
        admin.delete_topics([name], operation_timeout=30)[name].result(30)
        return
    ensure_topic(admin, name, 1, replication_factor=1)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bootstrap", help="broker to use (default: start a LocalBroker)")
    ap.add_argument("--futures", type=int, default=100_000, help="futures for (a) and (b)")
    ap.add_argument("--mem-count", type=int, default=10_000_000, help="messages for (c)")
    ap.add_argument("--size", type=int, default=100, help="value size for (c)")
    ap.add_argument("--failures", type=int, default=1_000_000, help="failed messages for (d)")
    args = ap.parse_args(argv)

    # First, while the process heap is fresh: RSS growth is the failures' own.
    fails = [failed_batch_cost(args.failures, kind) for kind in FAILURE_KINDS]

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from cykafka.broker import LocalBroker

        broker = LocalBroker().start()
        bootstrap = broker.bootstrap_servers
    try:
        a = pending_future_cost(args.futures)
        topics = [f"bench-mem-{k}-{uuid.uuid4().hex[:8]}" for k in ("futures", "rss")]
        for t in topics:
            _admin_topic(bootstrap, t)
        b = resolved_futures_freed(bootstrap, topics[0], args.futures)
        c = rss_over_batches(bootstrap, topics[1], args.mem_count, args.size)
        for t in topics:
            try:
                _admin_topic(bootstrap, t, delete=True)
            except Exception:
                pass
    finally:
        if broker is not None:
            broker.stop()

    if a["pending_when_measured"] != a["n"]:
        raise SystemExit(
            f"memory: only {a['pending_when_measured']} of {a['n']} futures were "
            f"pending when measured"
        )
    if a["failed_after_close"] != a["n"] or b["delivered"] != b["n"]:
        raise SystemExit(f"memory: futures not all resolved: {a}, {b}")
    if c["delivered"] != c["messages"] or c["failed"]:
        raise SystemExit(f"memory: produce_batch lost messages: {c}")
    for d in fails:
        if d["failed"] != d["n"]:
            raise SystemExit(f"memory: not every message of the failing batch failed: {d}")
    residual = max(
        a["residual_bytes_per_future_after_purge"], b["residual_bytes_per_future_after_drop"]
    )
    rss_mb = c["rss_after_each_chunk_mb"]
    targets = [
        {
            "target": f"pending DeliveryFuture <= {MAX_BYTES_PER_FUTURE} B of Python heap",
            "value": a["bytes_per_pending_future"],
            "shown": f"{a['bytes_per_pending_future']:.1f} B",
            "pass": a["bytes_per_pending_future"] <= MAX_BYTES_PER_FUTURE,
        },
        {
            "target": "resolved futures freed when dropped",
            "value": residual,
            "shown": f"{residual:.2f} B/future left",
            "pass": residual <= 2.0,
        },
        {
            "target": f"RSS flat over {c['messages']:,} msgs (last chunk within 10 %)",
            "value": c["growth_first_to_last"],
            "shown": f"{rss_mb[0]:.0f} -> {rss_mb[-1]:.0f} MB ({c['growth_first_to_last']:+.1%})",
            "pass": abs(c["growth_first_to_last"]) <= RSS_TOLERANCE,
        },
        *(
            {
                "target": f"failed batch message ({d['kind']}) <= {MAX_BYTES_PER_FAILURE} B RSS",
                "value": d["bytes_per_failure_trimmed"],
                "shown": f"{d['bytes_per_failure']:.1f} B ({d['bytes_per_failure_trimmed']:.1f} "
                f"B after malloc_trim)",
                "pass": d["bytes_per_failure_trimmed"] <= MAX_BYTES_PER_FAILURE,
            }
            for d in fails
        ),
    ]
    lines = [
        f"pending future: {a['bytes_per_pending_future']:.1f} B of Python heap each "
        f"(tracemalloc, {a['n']:,} pending; sys.getsizeof {a['sizeof_future']} B); "
        f"after close(timeout=0) purged all: {a['residual_bytes_per_future_after_purge']:.2f} "
        f"B/future left once dropped",
        f"resolved futures: {b['bytes_per_resolved_future']:.1f} B each while held "
        f"(metadata kept as C fields), {b['residual_bytes_per_future_after_drop']:.2f} "
        f"B/future left once dropped",
        f"RSS over {c['messages']:,} msgs in {c['chunk']:,}-message produce_batch calls "
        f"({c['messages'] / c['seconds']:,.0f} msgs/s): before {c['rss_before_mb']:.0f} MB, "
        f"after each chunk " + " ".join(f"{x:.0f}" for x in rss_mb) + " MB",
        *(
            f"failed batch ({d['kind']}, {d['error']}): {d['n']:,} failures in "
            f"{d['seconds']:.1f} s, RSS {d['bytes_per_failure']:.1f} B per failure with the "
            f"report held ({d['bytes_per_failure_trimmed']:.1f} B after malloc_trim), "
            f"{d['distinct_exceptions_sampled']} distinct exception object(s) in a sample"
            for d in fails
        ),
    ]
    print(
        json.dumps(
            {
                "targets": targets,
                "lines": lines,
                "pending": a,
                "resolved": b,
                "rss": c,
                "failed_batches": fails,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
