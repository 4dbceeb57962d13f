"""One benchmark line in this (fresh) process: ``python bench/lines.py NAME ...``.

Called by bench/run.py, one subprocess per line and repeat, so that one line's
memory, threads and allocator state cannot affect the next.  Prints one JSON
line on stdout: msgs, seconds (wall, first produce to last delivery report),
cpu_seconds (this process, all threads), delivered, failed.

Every line produces one warm-up message and waits for its delivery before the
clock starts (connection set-up and topic metadata are not measured) and
counts only the N measured messages.  Payloads are N distinct ``bytes`` of
SIZE random bytes (or the same bytes as an Arrow binary array, or a list of
``{"value": ...}`` dicts for confluent's produce_batch), built before the clock
starts, without keys.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import sys
import time
from typing import Any, Callable

# Run from a checkout without installing: src/ next to bench/.
_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if os.path.isdir(_SRC) and _SRC not in sys.path and "cykafka" not in sys.modules:
    try:
        import cykafka  # noqa: F401  (installed: use it)
    except ImportError:
        sys.path.insert(0, _SRC)


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


#: --keys: message i gets key b"key-<i % KEYS>" (0: no keys).
KEYS = 0


def _keys(n: int) -> list[bytes] | None:
    if not KEYS:
        return None
    ring = [b"key-%d" % k for k in range(KEYS)]
    return [ring[i % KEYS] for i in range(n)]


def _payload(n: int, size: int) -> tuple[bytes, list[bytes]]:
    data = os.urandom(n * size)
    return data, [data[i * size : (i + 1) * size] for i in range(n)]


class _Clock:
    def __enter__(self) -> _Clock:
        self.c0 = _cpu()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu = _cpu() - self.c0


def _first(rep: Any) -> Any:
    return f"message {rep.errors[0][0]}: {rep.errors[0][1]}" if rep.errors else None


def _result(n: int, clock: _Clock, delivered: int, failed: int, **extra: Any) -> dict:
    return {
        "msgs": n,
        "seconds": clock.seconds,
        "cpu_seconds": clock.cpu,
        "delivered": delivered,
        "failed": failed,
        **extra,
    }


# -- cykafka --------------------------------------------------------------------


def _cy_producer(conf: dict) -> Any:
    import cykafka

    return cykafka.Producer(conf)


def cy_batch_list(conf: dict, topic: str, n: int, size: int) -> dict:
    _, values = _payload(n, size)
    keys = _keys(n)
    with _cy_producer(conf) as p:
        p.produce(topic, b"warm-up").result(30)
        with _Clock() as clk:
            rep = p.produce_batch(topic, values, keys).result()
    return _result(n, clk, rep.delivered, rep.failed, first_error=_first(rep))


def cy_batch_arrow(conf: dict, topic: str, n: int, size: int) -> dict:
    import numpy as np
    import pyarrow as pa

    data = os.urandom(n * size)
    offsets = np.arange(0, (n + 1) * size, size, dtype=np.int32 if n * size < 2**31 else np.int64)
    typ = pa.binary() if offsets.dtype == np.int32 else pa.large_binary()
    arr = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    with _cy_producer(conf) as p:
        p.produce(topic, b"warm-up").result(30)
        with _Clock() as clk:
            rep = p.produce_batch(topic, arr).result()
    return _result(n, clk, rep.delivered, rep.failed, first_error=_first(rep))


def cy_futures(conf: dict, topic: str, n: int, size: int, gc_off: bool = False) -> dict:
    _, values = _payload(n, size)
    ok = bad = 0
    first = None
    with _cy_producer(conf) as p:
        p.produce(topic, b"warm-up").result(30)
        produce = p.produce
        if gc_off:
            gc.disable()
        with _Clock() as clk:
            futs = [produce(topic, v) for v in values]
            for f in futs:
                try:
                    f.result()
                    ok += 1
                except Exception as exc:
                    bad += 1
                    first = first or repr(exc)
        gc.enable()
    return _result(n, clk, ok, bad, first_error=first)


def cy_futures_nogc(conf: dict, topic: str, n: int, size: int) -> dict:
    """Diagnostic, not a target: cy_futures with Python's cyclic GC disabled
    while the clock runs.  DeliveryFutures are not GC objects, so this should
    match cy_futures; a gap means something on the per-message path allocates
    GC objects again (a million of them set off ~1,400 collections)."""
    return cy_futures(conf, topic, n, size, gc_off=True)


def cy_asyncio(conf: dict, topic: str, n: int, size: int) -> dict:
    _, values = _payload(n, size)

    async def main() -> tuple[_Clock, int, int, Any]:
        ok = bad = 0
        first = None
        with _cy_producer(conf) as p:
            await p.produce(topic, b"warm-up")
            produce = p.produce
            with _Clock() as clk:
                futs = [produce(topic, v) for v in values]
                for f in futs:
                    try:
                        await f
                        ok += 1
                    except Exception as exc:
                        bad += 1
                        first = first or repr(exc)
        return clk, ok, bad, first

    clk, ok, bad, first = asyncio.run(main())
    return _result(n, clk, ok, bad, first_error=first)


# -- confluent-kafka ------------------------------------------------------------


class _Counter:
    def __init__(self) -> None:
        self.ok = 0
        self.bad = 0
        self.first_error: Any = None

    def __call__(self, err: Any, msg: Any) -> None:
        if err is None:
            self.ok += 1
        else:
            self.bad += 1
            if self.first_error is None:
                self.first_error = str(err)


def _ck_warm_up(p: Any, topic: str) -> None:
    warm = _Counter()
    p.produce(topic, b"warm-up", on_delivery=warm)
    p.flush(30)
    if warm.ok != 1:
        raise RuntimeError(f"warm-up message not delivered: {warm.first_error}")


def ck_on_delivery(conf: dict, topic: str, n: int, size: int, poll_every: int = 1) -> dict:
    """confluent's documented loop: produce(on_delivery=cb), then poll(0) to serve
    the callbacks (every message, or every ``poll_every``th), poll(0.1) on BufferError."""
    import confluent_kafka

    _, values = _payload(n, size)
    keys = _keys(n) or [None] * n
    p = confluent_kafka.Producer(conf)
    _ck_warm_up(p, topic)
    cb = _Counter()
    produce, poll = p.produce, p.poll
    with _Clock() as clk:
        for i, (v, k) in enumerate(zip(values, keys)):
            while True:
                try:
                    produce(topic, v, k, on_delivery=cb)
                    break
                except BufferError:
                    poll(0.1)
            if i % poll_every == 0:
                poll(0)
        while len(p):
            p.flush(1)
    return _result(n, clk, cb.ok, cb.bad, first_error=cb.first_error)


def ck_on_delivery_poll1000(conf: dict, topic: str, n: int, size: int) -> dict:
    """The same loop serving callbacks every 1000 messages: fewer poll() calls, the
    fastest way we found to run confluent's per-message callbacks from Python."""
    return ck_on_delivery(conf, topic, n, size, poll_every=1000)


def ck_batch(conf: dict, topic: str, n: int, size: int, chunk: int = 10000) -> dict:
    import confluent_kafka

    _, values = _payload(n, size)
    keys = _keys(n)
    msgs = (
        [{"value": v} for v in values]
        if keys is None
        else [{"value": v, "key": k} for v, k in zip(values, keys)]
    )
    del values
    p = confluent_kafka.Producer(conf)
    _ck_warm_up(p, topic)
    cb = _Counter()
    with _Clock() as clk:
        # In chunks (as an ETL script would): a refused message gets an
        # "_error" field; _QUEUE_FULL ones are retried after a poll.
        for s in range(0, n, chunk):
            todo = msgs[s : s + chunk]
            while todo:
                queued = p.produce_batch(topic, todo, on_delivery=cb)
                if queued == len(todo):
                    todo = []
                else:
                    retry = []
                    for m in todo:
                        err = m.pop("_error", None)
                        if err is None:
                            continue
                        if err.code() != confluent_kafka.KafkaError._QUEUE_FULL:
                            raise RuntimeError(f"produce_batch refused a message: {err}")
                        retry.append(m)
                    todo = retry
                    p.poll(0.1)
                p.poll(0)
        while len(p):
            p.flush(1)
    return _result(n, clk, cb.ok, cb.bad, first_error=cb.first_error)


def ck_aio(conf: dict, topic: str, n: int, size: int) -> dict:
    from confluent_kafka.aio import AIOProducer

    _, values = _payload(n, size)

    async def main() -> tuple[_Clock, int, int, Any]:
        ok = bad = 0
        first = None
        p = AIOProducer(dict(conf))
        try:
            warm = await p.produce(topic, b"warm-up")
            await p.flush()
            await warm
            produce = p.produce
            with _Clock() as clk:
                futs = [await produce(topic, v) for v in values]
                await p.flush()  # the last partial batch would wait for buffer_timeout
                for f in futs:
                    try:
                        await f
                        ok += 1
                    except Exception as exc:
                        bad += 1
                        first = first or repr(exc)
        finally:
            await p.close()
        return clk, ok, bad, first

    clk, ok, bad, first = asyncio.run(main())
    return _result(n, clk, ok, bad, first_error=first)


# -- another engineer's module -------------------------------------------------


def inspector(conf: dict, topic: str, n: int, size: int) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import inspector_overhead  # bench/inspector_overhead.py

    return {"inspector": inspector_overhead.run(conf["bootstrap.servers"], n, size)}


LINES: dict[str, Callable[[dict, str, int, int], dict]] = {
    f.__name__: f
    for f in (
        cy_batch_list,
        cy_batch_arrow,
        cy_futures,
        cy_futures_nogc,
        cy_asyncio,
        ck_on_delivery,
        ck_on_delivery_poll1000,
        ck_batch,
        ck_aio,
        inspector,
    )
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("name", choices=sorted(LINES))
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--keys", type=int, default=0, help="distinct keys (0: no keys)")
    ap.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    global KEYS
    KEYS = args.keys
    conf: dict[str, Any] = {"bootstrap.servers": args.bootstrap}
    for kv in args.config:
        k, _, v = kv.partition("=")
        conf[k] = v
    out = LINES[args.name](conf, args.topic, args.count, args.size)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
