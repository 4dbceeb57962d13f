"""``cykafka verify`` against the import it checks, both as whole processes.

``python bench/verify_speed.py [BOOTSTRAP] [--verify-rows N] [--repeat R]``

Writes an N-line file (default 3,000,000 lines of 100 bytes, bench/import_bench.py's),
then, round by round: ``cykafka import --format lines`` of it into a fresh 2-partition
topic, then ``cykafka verify`` of the file against that topic, each timed as a process.
Prints one JSON line: each side's rows/s per round and the target, verify's rows/s at
least 0.5 x the import's (median of the per-round ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _common  # noqa: F401 - puts src/ on the path for a checkout without an install
from _common import bootstrap_or_local, fresh_topic
from import_bench import _write_lines

TARGET = 0.5


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(
            f"bench: {' '.join(cmd[:4])} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return dt


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap", nargs="?")
    ap.add_argument("--verify-rows", type=int, default=3_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, help="ignored (bench/run.py passes it to every step)")
    a = ap.parse_args(argv)
    from confluent_kafka.admin import AdminClient

    cli = [sys.executable, "-m", "cykafka.cli"]
    imp: list[float] = []
    ver: list[float] = []
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        admin = AdminClient({"bootstrap.servers": bs})
        with tempfile.TemporaryDirectory(prefix="cykafka-bench-verify-speed-") as tmp:
            path = os.path.join(tmp, "lines.txt")
            _write_lines(path, a.verify_rows)
            for _ in range(a.repeat):
                topic = fresh_topic(bs, "bench-verify-speed", 2)
                try:
                    base = ["-b", bs, path, "-t", topic, "--format", "lines"]
                    imp.append(_timed([*cli, "import", "--no-progress", *base]))
                    ver.append(_timed([*cli, "verify", *base, "--tmp-dir", tmp]))
                finally:
                    admin.delete_topics([topic])[topic].result(60)
    ratio = statistics.median(i / v for i, v in zip(imp, ver))
    n = a.verify_rows
    print(
        json.dumps(
            {
                "rows": n,
                "import_rows_per_s": [round(n / s) for s in imp],
                "verify_rows_per_s": [round(n / s) for s in ver],
                "targets": [
                    {
                        "target": f"verify >= {TARGET} x import rows/s ({n:,} rows, processes)",
                        "ratio": round(ratio, 3),
                        "paired_median": round(ratio, 3),
                        "need": TARGET,
                        "pass": ratio >= TARGET,
                    }
                ],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
