"""`cykafka import` throughput: lines vs the bulk path's floor, CSV vs a hand-written loop.

``run(bootstrap_servers, rows=1_000_000, c_floor=None) -> dict``; ``python
bench/import_bench.py [BOOTSTRAP]`` prints the dict as JSON (a local broker is started
when no bootstrap is given).

* ``lines``: ``cykafka import --format lines`` of a file of ``rows`` 100-byte lines,
  against the floor: the same lines handed to ``produce_batch`` as one ready-made Arrow
  array (the bulk path with no reading at all), and against bench/run.py's C loop
  (``build/cfloor``) sending as many messages of the same size, both in the same
  rounds as the import.  Target: >= 0.9 x the C floor.
* ``csv``: a ``rows``-row CSV (id,user,amount,ts) with key field ``user`` and the row
  as JSON, against ``csv.reader`` + ``json.dumps`` + ``confluent_kafka.Producer.produce``
  per row.  Target: >= 7 x.  ``csv_none`` infers types (numbers as JSON numbers, the
  default); ``csv_none_text`` is ``--csv-types string`` (every field a JSON string, as
  the naive loop writes them).

Both sides of each comparison use the same librdkafka settings; the import is timed by
its own summary (reading, producing and waiting for every delivery; not interpreter
start-up).  Every run gets a fresh topic, deleted afterwards, as bench/run.py does for
its lines: the memory broker keeps every record, and one holding ~2 GB (what this step
used to leave behind) ran the C floor itself ~25 % slower.

``memory(bootstrap_servers, big_mb=500, small_mb=50) -> dict``: constant memory.  Peak
RSS (the child's VmHWM, interpreter and libraries included) of ``import_files`` of a
generated ``big_mb`` MB lines file against a ``small_mb`` MB one, each in a fresh
process so the peaks are its own; the big file is far larger than the import's pending
window (``sink.MAX_PENDING`` chunks of ``ReadOptions.block_bytes``).  Target: big <=
1.5 x small.
``python bench/import_bench.py --memory [BOOTSTRAP]`` prints that dict as JSON.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any, Optional

from _common import bootstrap_or_local, fresh_topic

__all__ = ["memory", "run"]


#: bench/run.py's C floor binary (built before its ETL steps run)
CFLOOR_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build", "cfloor")


@contextlib.contextmanager
def _topic(bootstrap: str, prefix: str, parts: int) -> Iterator[str]:
    """A fresh topic, deleted after the run: the memory broker keeps every record, and
    a broker holding ~2 GB ran the C floor itself ~25 % slower."""
    from confluent_kafka.admin import AdminClient

    name = fresh_topic(bootstrap, prefix, parts)
    try:
        yield name
    finally:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics([name])[name].result(60)


def _c_floor(
    bootstrap: str, rows: int, size: int, preset: Optional[str], conf: dict[str, str], parts: int
) -> Optional[float]:
    """rows/s of bench/run.py's C loop (``c_floor``, or ``c_floor_idem`` for the
    idempotent ``ordered`` preset) with ``size``-byte messages, None without the
    binary."""
    if not os.path.exists(CFLOOR_BIN):
        return None
    extra = [f"{k}={v}" for k, v in conf.items()]
    if preset == "ordered":
        extra.append("enable.idempotence=true")
    with _topic(bootstrap, "bench-import-cfloor", parts) as topic:
        out = subprocess.run(
            [CFLOOR_BIN, bootstrap, topic, str(rows), str(size), *extra],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        ).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["delivered"] == rows and res["failed"] == 0, res
    return float(res["msgs"]) / float(res["seconds"])


#: bytes per line of the lines file, newline included
LINE_BYTES = 100


def _write_lines(path: str, rows: int) -> None:
    import numpy as np

    # 100-byte lines: "line-<7 digits>-" + filler, written in blocks.
    with open(path, "wb") as f:
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            ids = np.arange(start, start + n)
            f.write(b"".join(b"line-%07d-" % i + b"x" * 86 + b"\n" for i in ids.tolist()))


def _floor(
    bootstrap: str, path: str, preset: Optional[str], conf: dict[str, str], parts: int
) -> float:
    """produce_batch of the file's lines as one ready-made Arrow array: no reading."""
    import cykafka
    from cykafka._arrow import lines_array
    from cykafka.importer import IMPORT_DEFAULTS

    with open(path, "rb") as f:
        values = lines_array(f.read())
    config = {"bootstrap.servers": bootstrap, **IMPORT_DEFAULTS, **conf}
    with (
        _topic(bootstrap, "bench-floor", parts) as topic,
        cykafka.Producer(config, preset=preset) as p,
    ):
        p.produce_batch(topic, [b"warm-up"]).result(30)
        t = time.perf_counter()
        report = p.produce_batch(topic, values).result()
        dt = time.perf_counter() - t
    assert report.ok, report
    return len(values) / dt


def _import(
    bootstrap: str,
    path: str,
    preset: Optional[str],
    conf: dict[str, str],
    parts: int,
    warm: bool = False,
    **kw: Any,
) -> Any:
    """import_files as the CLI runs it; ``warm``: with a producer that has already
    delivered one message (connection, metadata and, when idempotent, the producer id
    from InitProducerId -- 0.5-1 s on Tansu), as the floors are measured."""
    import cykafka
    from cykafka.importer import ImportJob, import_files

    config = {"bootstrap.servers": bootstrap, **conf}
    producer = None
    with contextlib.ExitStack() as stack:
        topic = stack.enter_context(_topic(bootstrap, "bench-import", parts))
        # As the CLI builds it, with the partition count from its cluster check.
        job = ImportJob.build([path], topic, config, preset=preset, topic_partitions=parts, **kw)
        if warm:
            producer = cykafka.Producer(job.resolved)
            stack.callback(producer.close)
            producer.produce_batch(topic, [b"warm-up"]).result(30)
        with open(os.devnull, "w") as devnull:
            result = import_files(job, progress=False, log=devnull, producer=producer)
    assert result.ok, result.summary_lines()
    return result


def _naive_csv(bootstrap: str, path: str, conf: dict[str, str], parts: int) -> float:
    """csv.reader + json.dumps + confluent_kafka produce() per row, flush at the end."""
    with _topic(bootstrap, "bench-naive-csv", parts) as topic:
        return _naive_csv_to(bootstrap, topic, path, conf)


def _naive_csv_to(bootstrap: str, topic: str, path: str, conf: dict[str, str]) -> float:
    import confluent_kafka

    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **conf})
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


#: librdkafka settings of bench/run.py's lines (and so of its C floor), for every side:
#: uncompressed, as those lines are, rather than the import's lz4.
HARNESS_CONFIG = {"linger.ms": "5", "compression.type": "none"}


def run(
    bootstrap_servers: str,
    rows: int = 1_000_000,
    c_floor: Optional[float] = None,
    c_floor_idem: Optional[float] = None,
    partitions: int = 1,
    config: Optional[dict[str, str]] = None,
    repeat: int = 1,
) -> dict[str, Any]:
    """Measure, in ``repeat`` interleaved rounds (as bench/run.py runs its lines); the
    best run of each side is kept and every run's rows/s is in ``*_runs``.

    The C floor the lines import is held against runs in the same rounds (bench/run.py's
    ``c_floor`` binary, ``c_floor_idem`` for the idempotent ``ordered`` preset) with
    messages of the import's size, against the same broker state; ``c_floor`` /
    ``c_floor_idem`` (rows/s of bench/run.py's own lines, minutes earlier) are kept
    as ``c_floor_lines_step_rows_per_s`` for information, and used only when the
    binary is missing.  ``config`` (default :data:`HARNESS_CONFIG`, the harness's
    settings; ``{}`` for the import's own defaults) applies to every side;
    ``partitions`` per topic (the harness uses 1)."""
    import statistics

    from cykafka.importer import Fields, ReadOptions, write_sample_csv

    conf = dict(HARNESS_CONFIG if config is None else config)
    out: dict[str, Any] = {"rows": rows, "partitions": partitions, "config": conf}
    earlier = {"ordered": c_floor_idem, None: c_floor}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-") as tmp:
        lines = os.path.join(tmp, "lines.txt")
        _write_lines(lines, rows)
        size = LINE_BYTES - 1  # the newline is not sent
        sample = write_sample_csv(rows, os.path.join(tmp, "orders.csv"))
        for preset in ("ordered", None):
            tag = preset or "none"
            cs: list[float] = []
            floors_, colds, warms = [], [], []
            for _ in range(max(repeat, 1)):
                c = _c_floor(bootstrap_servers, rows, size, preset, conf, partitions)
                if c is not None:
                    cs.append(c)
                floors_.append(_floor(bootstrap_servers, lines, preset, conf, partitions))
                colds.append(
                    _import(bootstrap_servers, lines, preset, conf, partitions, fmt="lines")
                )
                warms.append(
                    _import(
                        bootstrap_servers, lines, preset, conf, partitions, warm=True, fmt="lines"
                    )
                )
            floor = max(floors_)
            res = max(colds, key=lambda r: r.rows_per_second)
            warm = max(warms, key=lambda r: r.rows_per_second)
            line: dict[str, Any] = {
                "import_rows_per_s": round(res.rows_per_second),
                "import_mb_per_s": round(res.mb_per_second, 1),
                "import_warm_rows_per_s": round(warm.rows_per_second),
                "bulk_floor_rows_per_s": round(floor),
                "warm_ratio_to_bulk_floor": round(warm.rows_per_second / floor, 2),
                "import_runs_rows_per_s": [round(r.rows_per_second) for r in colds],
                "import_warm_runs_rows_per_s": [round(r.rows_per_second) for r in warms],
                "bulk_floor_runs_rows_per_s": [round(f) for f in floors_],
            }
            c_best = max(cs) if cs else earlier[preset]
            if earlier[preset]:
                line["c_floor_lines_step_rows_per_s"] = round(earlier[preset])
            if c_best:
                line["c_floor_rows_per_s"] = round(c_best)
                line["c_floor_same_step"] = bool(cs)
                line["ratio_to_c_floor"] = round(res.rows_per_second / c_best, 2)
                line["warm_ratio_to_c_floor"] = round(warm.rows_per_second / c_best, 2)
            if cs:
                line["c_floor_runs_rows_per_s"] = [round(c) for c in cs]
                line["paired_ratio_median"] = round(
                    statistics.median(r.rows_per_second / c for r, c in zip(colds, cs)), 2
                )
            out[f"lines_{tag}"] = line
        kinds = (
            (None, "none", "infer"),
            ("ordered", "ordered", "infer"),
            (None, "none_text", "string"),
        )
        naives: list[float] = []
        csv_runs: dict[str, list[Any]] = {tag: [] for _, tag, _ in kinds}
        for _ in range(max(repeat, 1)):
            naives.append(_naive_csv(bootstrap_servers, sample, conf, partitions))
            for preset, tag, csv_types in kinds:
                csv_runs[tag].append(
                    _import(
                        bootstrap_servers,
                        sample,
                        preset,
                        conf,
                        partitions,
                        fields=Fields(key="user"),
                        options=ReadOptions(csv_types=csv_types),
                    )
                )
        naive = max(naives)
        out["csv_naive_rows_per_s"] = round(naive)
        out["csv_naive_runs_rows_per_s"] = [round(n) for n in naives]
        for _, tag, _ in kinds:
            res = max(csv_runs[tag], key=lambda r: r.rows_per_second)
            out[f"csv_{tag}"] = {
                "import_rows_per_s": round(res.rows_per_second),
                "import_mb_per_s": round(res.mb_per_second, 1),
                "speedup_vs_naive": round(res.rows_per_second / naive, 2),
                "import_runs_rows_per_s": [round(r.rows_per_second) for r in csv_runs[tag]],
            }
    out["targets"] = {"lines_ratio_to_c_floor": 0.9, "csv_speedup_vs_naive": 7.0}
    return out


#: --exactly-once throughput at least this times the plain import's
EXACTLY_ONCE_TARGET = 0.7


def exactly_once(bootstrap_servers: str, rows: int = 1_000_000, repeat: int = 3) -> dict[str, Any]:
    """``cykafka import --exactly-once`` against the plain (``ordered``) import of the
    same lines file, with the import's own config, in interleaved rounds (the order
    alternates).  Each exactly-once run uses a fresh topic and transactional.id
    (``--restart``), so it imports every row in transactions plus their progress
    records: once with the default ``--commit-every`` (the target) and once committing
    every ``rows // 10`` rows, for the cost of commits.  Ratios are medians of the
    per-round ratios."""
    import statistics
    import uuid

    from cykafka.importer import ExactlyOnce, ImportJob, import_files

    def timed(commit_rows: Optional[int] = None) -> float:
        eo = None
        if commit_rows is not None:
            kw = {"commit_rows": commit_rows} if commit_rows else {}
            eo = ExactlyOnce(transactional_id=f"bench-{uuid.uuid4().hex}", restart=True, **kw)
        with (
            _topic(bootstrap_servers, "bench-import-eo", 1) as topic,
            open(os.devnull, "w") as devnull,
        ):
            job = ImportJob.build(
                [lines],
                topic,
                {"bootstrap.servers": bootstrap_servers},
                fmt="lines",
                exactly_once=eo,
                topic_partitions=1,  # as the CLI passes it from its cluster check
            )
            result = import_files(job, progress=False, log=devnull)
        assert result.ok, result.summary_lines()
        return float(result.rows_per_second)

    small = max(rows // 10, 1)
    kinds = {"plain": None, "exactly_once": 0, f"exactly_once_commit_every_{small}": small}
    runs: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-") as tmp:
        lines = os.path.join(tmp, "lines.txt")
        _write_lines(lines, rows)
        for r in range(max(repeat, 1)):
            for kind in list(kinds)[:: 1 if r % 2 == 0 else -1]:
                runs[kind].append(timed(kinds[kind]))
    out: dict[str, Any] = {"rows": rows}
    for kind, values in runs.items():
        out[f"{kind}_rows_per_s"] = round(statistics.median(values))
        out[f"{kind}_runs_rows_per_s"] = [round(v) for v in values]
        if kind != "plain":
            ratios = [v / p for v, p in zip(values, runs["plain"])]
            out[f"{kind}_ratio_median"] = round(statistics.median(ratios), 2)
    out["ratio_median"] = out["exactly_once_ratio_median"]
    out["target_ratio"] = EXACTLY_ONCE_TARGET
    return out


def _verify_rss_child(bootstrap: str, path: str, topic: str) -> dict[str, Any]:
    """In a fresh process: ``cykafka verify`` of ``path`` against ``topic``."""
    from cykafka.verify import verify_files

    t = time.perf_counter()
    report = verify_files([path], topic, {"bootstrap.servers": bootstrap})
    assert report.ok, report.lines()
    return {
        "rows": report.expected,
        "seconds": round(time.perf_counter() - t, 1),
        "peak_rss_mb": round(_vm_kb("VmHWM") / 1024, 1),
    }


def verify_memory(
    bootstrap_servers: str, big_rows: int = 3_000_000, small_rows: int = 300_000
) -> dict[str, Any]:
    """Peak RSS of ``cykafka verify`` of a ``big_rows``-line file against a topic holding
    it, vs a ``small_rows`` one (100-byte lines, 2 partitions), each verified by a fresh
    child process: the comparison spills to disk, so memory must not grow with the
    input.  Target: big <= 1.5 x small."""
    from confluent_kafka.admin import AdminClient

    out: dict[str, Any] = {"target_ratio": MEMORY_TARGET_RATIO}
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-verify-") as tmp:
        for tag, rows in (("small", small_rows), ("big", big_rows)):
            path = os.path.join(tmp, f"{tag}.txt")
            _write_lines(path, rows)
            topic = fresh_topic(bootstrap_servers, f"bench-verify-{tag}", 2)
            try:
                _import_for_memory(bootstrap_servers, path, topic)
                proc = subprocess.run(
                    [
                        sys.executable,
                        os.path.abspath(__file__),
                        "--verify-rss-child",
                        bootstrap_servers,
                        path,
                        topic,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=3600,
                    check=False,
                )
            finally:
                admin.delete_topics([topic])[topic].result(60)
            if proc.returncode != 0:
                raise RuntimeError(f"{tag} verify failed: {proc.stderr[-2000:]}")
            out[tag] = json.loads(proc.stdout.strip().splitlines()[-1])
            out[tag]["rows_per_s"] = round(out[tag]["rows"] / out[tag]["seconds"])
    out["ratio"] = round(out["big"]["peak_rss_mb"] / out["small"]["peak_rss_mb"], 2)
    out["pass"] = out["ratio"] <= MEMORY_TARGET_RATIO
    return out


#: peak RSS of the big import at most this times the small one's
MEMORY_TARGET_RATIO = 1.5


def _vm_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _peak_rss_child(bootstrap: str, path: str, topic: str) -> dict[str, Any]:
    """In a fresh process: import ``path`` into ``topic``; the process's peak RSS."""
    import cykafka.importer  # noqa: F401 - (pyarrow and NumPy load during the import)

    base_kb = _vm_kb("VmRSS")
    result = _import_for_memory(bootstrap, path, topic)
    return {
        "rows": result.rows_read,
        "delivered": result.delivered,
        "mb": round(result.bytes_read / 1e6, 1),
        "seconds": round(result.elapsed, 2),
        "baseline_rss_mb": round(base_kb / 1024, 1),
        "peak_rss_mb": round(_vm_kb("VmHWM") / 1024, 1),
    }


def _import_for_memory(bootstrap: str, path: str, topic: str) -> Any:
    from cykafka.importer import ImportJob, import_files

    job = ImportJob.build([path], topic, {"bootstrap.servers": bootstrap}, fmt="lines")
    with open(os.devnull, "w") as devnull:
        result = import_files(job, progress=False, log=devnull)
    assert result.ok, result.summary_lines()
    return result


def memory(
    bootstrap_servers: str, big_mb: int = 500, small_mb: int = 50, partitions: int = 1
) -> dict[str, Any]:
    """Peak RSS of ``cykafka import`` (default config and preset) of a ``big_mb`` MB
    lines file vs a ``small_mb`` MB one (100-byte lines), each imported by a fresh
    child process.  Returns ``{"big": {...}, "small": {...}, "ratio": big/small peak,
    "target_ratio": 1.5, "pass": bool, "pending_window_mb": ...}`` (per side: rows,
    delivered, mb, seconds, baseline_rss_mb (cykafka imported; pyarrow and NumPy load
    during the import), peak_rss_mb).  The topics are deleted afterwards (a memory broker keeps every
    record)."""
    from confluent_kafka.admin import AdminClient

    from cykafka.importer import ReadOptions, sink

    out: dict[str, Any] = {
        "pending_window_mb": round(sink.MAX_PENDING * ReadOptions().block_bytes / 1e6, 1),
        "target_ratio": MEMORY_TARGET_RATIO,
    }
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-mem-") as tmp:
        for tag, mb in (("small", small_mb), ("big", big_mb)):
            path = os.path.join(tmp, f"{tag}.txt")
            _write_lines(path, mb * 10_000)  # 100-byte lines
            topic = fresh_topic(bootstrap_servers, f"bench-mem-{tag}", partitions)
            try:
                proc = subprocess.run(
                    [
                        sys.executable,
                        os.path.abspath(__file__),
                        "--peak-rss-child",
                        bootstrap_servers,
                        path,
                        topic,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                    check=False,
                )
            finally:
                admin.delete_topics([topic])[topic].result(60)
                os.unlink(path)
            if proc.returncode != 0:
                raise RuntimeError(f"{tag} import failed: {proc.stderr[-2000:]}")
            out[tag] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["ratio"] = round(out["big"]["peak_rss_mb"] / out["small"]["peak_rss_mb"], 2)
    out["pass"] = out["ratio"] <= MEMORY_TARGET_RATIO
    return out


if __name__ == "__main__":
    import argparse

    if sys.argv[1:2] == ["--peak-rss-child"]:
        print(json.dumps(_peak_rss_child(*sys.argv[2:5])))
        sys.exit(0)
    if sys.argv[1:2] == ["--verify-rss-child"]:
        print(json.dumps(_verify_rss_child(*sys.argv[2:5])))
        sys.exit(0)

    ap = argparse.ArgumentParser(description="cykafka import throughput")
    ap.add_argument("bootstrap", nargs="?", help="default: a local broker for the run")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--c-floor", type=float, help="rows/s of bench/run.py's c_floor line")
    ap.add_argument("--c-floor-idem", type=float, help="rows/s of its c_floor_idem line")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (best kept)")
    ap.add_argument(
        "--import-defaults", action="store_true", help="the import's config, not HARNESS_CONFIG"
    )
    ap.add_argument(
        "--memory", action="store_true", help="peak RSS of a 500 MB vs a 50 MB lines import"
    )
    ap.add_argument(
        "--exactly-once", action="store_true", help="--exactly-once vs the plain import"
    )
    ap.add_argument(
        "--verify-memory", action="store_true", help="peak RSS of verify, 3M vs 300k rows"
    )
    ap.add_argument(
        "--big-mb", type=int, default=500, help="--memory: size of the big file (5000: 5 GB)"
    )
    a = ap.parse_args()
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        if a.memory:
            print(json.dumps(memory(bs, big_mb=a.big_mb)))
        elif a.verify_memory:
            print(json.dumps(verify_memory(bs)))
        elif a.exactly_once:
            print(json.dumps(exactly_once(bs, a.rows, max(a.repeat, 3))))
        else:
            conf = {} if a.import_defaults else None
            result = run(bs, a.rows, a.c_floor, a.c_floor_idem, a.partitions, conf, a.repeat)
            print(json.dumps(result))
