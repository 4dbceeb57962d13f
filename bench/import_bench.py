"""`cykafka import` throughput: lines vs the bulk path's floor, CSV vs a hand-written loop.

``run(bootstrap_servers, rows=1_000_000, c_floor=None) -> dict``; ``python
bench/import_bench.py [BOOTSTRAP]`` prints the dict as JSON (a local broker is started
when no bootstrap is given).

* ``lines``: ``cykafka import --format lines`` of a file of ``rows`` 100-byte lines,
  against the floor: the same lines handed to ``produce_batch`` as one ready-made Arrow
  array (the bulk path with no reading at all), measured in the same run, and against
  ``c_floor`` (rows/s of the C bulk benchmark) when given.  Target: >= 0.8 x floor.
* ``csv``: a ``rows``-row CSV (id,user,amount,ts) with key field ``user`` and the row
  as JSON, against ``csv.reader`` + ``json.dumps`` + ``confluent_kafka.Producer.produce``
  per row.  Target: >= 3 x.

Both sides of each comparison use the same librdkafka settings; the import is timed by
its own summary (reading, producing and waiting for every delivery; not interpreter
start-up).
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
import time
from typing import Any, Optional

from _common import bootstrap_or_local, fresh_topic

__all__ = ["run"]


def _write_lines(path: str, rows: int) -> None:
    import numpy as np

    # 100-byte lines: "line-<7 digits>-" + filler, written in blocks.
    with open(path, "wb") as f:
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            ids = np.arange(start, start + n)
            f.write(b"".join(b"line-%07d-" % i + b"x" * 86 + b"\n" for i in ids.tolist()))


def _floor(bootstrap: str, path: str, preset: Optional[str]) -> float:
    import cykafka
    from cykafka._arrow import lines_array
    from cykafka.importer import IMPORT_DEFAULTS

    with open(path, "rb") as f:
        values = lines_array(f.read())
    topic = fresh_topic(bootstrap, "bench-floor")
    with cykafka.Producer({"bootstrap.servers": bootstrap, **IMPORT_DEFAULTS}, preset=preset) as p:
        p.produce_batch(topic, [b"warm-up"]).result(30)
        t = time.perf_counter()
        report = p.produce_batch(topic, values).result()
        dt = time.perf_counter() - t
    assert report.ok, report
    return len(values) / dt


def _import(bootstrap: str, path: str, preset: Optional[str], **kw: Any) -> Any:
    from cykafka.importer import import_files

    topic = fresh_topic(bootstrap, "bench-import")
    with open(os.devnull, "w") as devnull:
        result = import_files(
            [path],
            topic,
            {"bootstrap.servers": bootstrap},
            preset=preset,
            progress=False,
            log=devnull,
            **kw,
        )
    assert result.ok, result.summary_lines()
    return result


def _naive_csv(bootstrap: str, path: str) -> float:
    import confluent_kafka

    topic = fresh_topic(bootstrap, "bench-naive-csv")
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    t = time.perf_counter()
    n = 0
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        ki = header.index("user")
        for row in reader:
            value = json.dumps(dict(zip(header, row)), separators=(",", ":"))
            while True:
                try:
                    p.produce(topic, value=value, key=row[ki])
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
            n += 1
    left = p.flush(120)
    dt = time.perf_counter() - t
    assert left == 0, f"{left} messages not delivered"
    return n / dt


def run(
    bootstrap_servers: str, rows: int = 1_000_000, c_floor: Optional[float] = None
) -> dict[str, Any]:
    from cykafka.importer import Fields, write_sample_csv

    out: dict[str, Any] = {"rows": rows}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-") as tmp:
        lines = os.path.join(tmp, "lines.txt")
        _write_lines(lines, rows)
        sample = write_sample_csv(rows, os.path.join(tmp, "orders.csv"))
        for preset in ("ordered", None):
            tag = preset or "none"
            floor = _floor(bootstrap_servers, lines, preset)
            res = _import(bootstrap_servers, lines, preset, fmt="lines")
            out[f"lines_{tag}"] = {
                "import_rows_per_s": round(res.rows_per_second),
                "import_mb_per_s": round(res.mb_per_second, 1),
                "bulk_floor_rows_per_s": round(floor),
                "ratio_to_floor": round(res.rows_per_second / floor, 2),
            }
            if c_floor:
                out[f"lines_{tag}"]["ratio_to_c_floor"] = round(res.rows_per_second / c_floor, 2)
        naive = _naive_csv(bootstrap_servers, sample)
        out["csv_naive_rows_per_s"] = round(naive)
        for preset in (None, "ordered"):
            tag = preset or "none"
            res = _import(bootstrap_servers, sample, preset, fields=Fields(key="user"))
            out[f"csv_{tag}"] = {
                "import_rows_per_s": round(res.rows_per_second),
                "import_mb_per_s": round(res.mb_per_second, 1),
                "speedup_vs_naive": round(res.rows_per_second / naive, 2),
            }
    out["targets"] = {"lines_ratio_to_floor": 0.8, "csv_speedup_vs_naive": 3.0}
    return out


if __name__ == "__main__":
    with bootstrap_or_local(sys.argv[1:]) as bs:
        print(json.dumps(run(bs), indent=2))
