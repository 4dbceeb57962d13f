"""The measurements behind three of cykafka's defaults, so that the pages that give
them as reasons print them from a benchmark run rather than from a note.

``run(bootstrap_servers, rows=10_000_000, repeat=3) -> dict``; ``python bench/design.py
[BOOTSTRAP]`` prints the dict as JSON (a local broker is started when none is given).

* ``lz4``: ``cykafka import`` of ``rows`` 100-byte lines into one partition, with the
  import's lz4 (its default) and with ``-X compression.type=none``: the whole command's
  wall time.  Why the import compresses by default.
* ``queue_bound``: the same import with ``--preset ordered`` (idempotent), with the
  import's bounded queue (its default) and with librdkafka's own 1 GiB
  (``-X queue.buffering.max.kbytes=1048576``): wall time and the command's system CPU.
  An idempotent librdkafka 2.16 producer's broker thread polls without sleeping while a
  full batch waits behind the one request in flight, and takes the CPU the broker
  needs: why the import bounds its queue.
* ``first_delivery``: an idempotent producer's first delivery, from its constructor to
  the delivery report, in ``starts`` fresh processes each: cykafka's ``Producer`` (the
  ``ordered`` preset) and confluent-kafka's (``enable.idempotence=true``), the same
  librdkafka 2.16 without cykafka's early metadata requests.  Why cykafka asks for
  metadata at start.

Every import is a fresh process on a fresh topic, deleted afterwards (bench/import_bench
does the same, for the same reason: the memory broker keeps every record); the best run
of each side is kept, every run is in ``*_runs``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from _common import bootstrap_or_local
from import_bench import _topic, _write_lines

__all__ = ["run"]

#: librdkafka's own queue.buffering.max.kbytes (1 GiB), what the import bounds
LIBRDKAFKA_QUEUE_KB = 1_048_576

_FIRST_DELIVERY_CHILD = r"""
import json, sys, time
which, bootstrap, topic = sys.argv[1:4]
import cykafka, confluent_kafka  # imported before the clock starts
t = time.perf_counter()
if which == "cykafka":
    with cykafka.Producer({"bootstrap.servers": bootstrap}, preset="ordered") as p:
        p.produce(topic, b"first").result(30)
        dt = time.perf_counter() - t
else:
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    got = []
    p.produce(topic, b"first", on_delivery=lambda err, msg: got.append(err))
    while not got:
        p.poll(0.001)
    assert got == [None], got
    dt = time.perf_counter() - t
    p.flush(10)
print(json.dumps(dt))
"""


def _import(bootstrap: str, path: str, *extra: str) -> tuple[float, float]:
    """(wall seconds, system CPU seconds) of one ``cykafka import`` process."""
    with _topic(bootstrap, "bench-design", 1) as topic:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cykafka.cli", "import", "-b", bootstrap, "-t", topic,
             "--format", "lines", "--no-progress", *extra, path],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        wall = time.perf_counter() - t
        return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime - before


def _first_delivery(bootstrap: str, which: str) -> float:
    with _topic(bootstrap, "bench-first", 1) as topic:
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_DELIVERY_CHILD, which, bootstrap, topic],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
    return float(json.loads(out.strip().splitlines()[-1]))


def run(
    bootstrap_servers: str, rows: int = 10_000_000, repeat: int = 3, starts: int = 6
) -> dict[str, Any]:
    """Measure, each side in the same interleaved rounds (see the module's doc)."""
    out: dict[str, Any] = {"rows": rows, "repeat": repeat}
    runs: dict[str, list[tuple[float, float]]] = {}
    sides = {
        "lz4": (),
        "none": ("-X", "compression.type=none"),
        "ordered_bounded": ("--preset", "ordered"),
        "ordered_unbounded": (
            "--preset", "ordered", "-X", f"queue.buffering.max.kbytes={LIBRDKAFKA_QUEUE_KB}",
        ),
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-") as tmp:
        lines = os.path.join(tmp, "lines.txt")
        _write_lines(lines, rows)
        for _ in range(max(repeat, 1)):
            for side, extra in sides.items():
                runs.setdefault(side, []).append(_import(bootstrap_servers, lines, *extra))

    def best(side: str) -> dict[str, Any]:
        wall, sys_cpu = min(runs[side])
        return {
            "wall_s": wall,
            "sys_s": sys_cpu,
            "wall_runs": [w for w, _ in runs[side]],
            "sys_runs": [s for _, s in runs[side]],
        }

    out["lz4"] = {"lz4": best("lz4"), "none": best("none")}
    out["queue_bound"] = {
        "bounded": best("ordered_bounded"),
        "unbounded": best("ordered_unbounded"),
        "unbounded_kbytes": LIBRDKAFKA_QUEUE_KB,
    }
    firsts: dict[str, list[float]] = {"cykafka": [], "confluent": []}
    for _ in range(starts):
        for which in firsts:
            firsts[which].append(_first_delivery(bootstrap_servers, which))
    out["first_delivery"] = {
        which: {"median_s": statistics.median(v), "max_s": max(v), "runs": v}
        for which, v in firsts.items()
    }
    out["first_delivery"]["starts"] = starts
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="the measurements behind cykafka's defaults")
    ap.add_argument("bootstrap", nargs="?", help="default: a local broker for the run")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--starts", type=int, default=6)
    args = ap.parse_args()
    with bootstrap_or_local([args.bootstrap] if args.bootstrap else []) as bs:
        print(json.dumps(run(bs, args.rows, args.repeat, args.starts)))
