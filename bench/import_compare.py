"""Two comparisons of ``cykafka import``, each in one run with the sides interleaved.

``typed(bootstrap_servers, rows=500_000, repeat=3) -> dict``: the same rows as three
Parquet files: *flat* (int64, string, double), *typed* (plus what Spark and pandas
files hold: a UTC microsecond timestamp, a decimal(12,2), a dictionary-encoded string,
a list<string>, a struct) and *nested* (plus a list<struct<double,string>>, a
map<string,int64> and a nanosecond timestamp).  Each is imported as the CLI imports it
(``import_files``, the default ``ordered`` preset and the import's own config, by a
producer that has delivered one message, as the C loop has when its clock starts), and
each file's JSON records are sent by the C floor (``bench/cfloor.c`` with
``cfloor.file``: a ``rd_kafka_producev`` loop over the records, written out before
the clock starts, with the import's librdkafka config), rounds interleaved.  Target:
each import >= 0.8 x the C loop over its own JSON (median of the per-round ratios):
reading Parquet and encoding every Arrow type cost no more than a fifth of what C
needs to send the bytes.  For information, typed and nested against flat in rows/s,
for the imports and for the C loops: the typed and nested rows are 3 and 5 times the
flat rows' bytes, and the broker's work per byte sets the C loops' ratio, which bounds
the imports' (see docs/benchmark.md).  And the encoder alone (``record_json``, no
Kafka) over each file's rows in RecordBatch slices of 65,536 rows.

``kcat(bootstrap_servers, rows=(2_000_000, 10_000_000), repeat=3) -> dict``: ``cykafka
import FILE --format lines`` against ``kcat -P -l FILE``, both timed as whole
processes (start to exit) on the same file of 100-byte lines.  kcat is Debian's
(installed with apt-get when missing) on the wheel's librdkafka 2.16 (a directory with
a ``librdkafka.so.1`` symlink first on ``LD_LIBRARY_PATH``; Debian's 2.0.2 cannot talk
to the test broker).  Four pairs: *defaults* (each at its own: ``cykafka import`` is
idempotent, the ``ordered`` preset, and compresses with lz4; kcat is neither), *same
guarantee* (``kcat -X enable.idempotence=true``, otherwise kcat's defaults), and *same
settings*: kcat given, as ``-X``, every librdkafka setting the import runs with, against
``--preset none`` and against the default ``ordered`` import.  Targets: >= 1.0 x kcat
at 2 M lines and >= 1.2 x at 10 M, for each pair.  Each process's CPU seconds (user +
system, all threads) are kept too: on a shared machine they move less than wall time.  cykafka's wall time is split into the
phases ``--timings`` prints (start-up: interpreter and imports; the cluster check's
metadata; producer start; waiting for input; handing over; the final flush) and the
rest (closing the producer, exit).

``python bench/import_compare.py [BOOTSTRAP] --typed [--rows N] [--repeat R]`` and
``... --kcat [--lines N ...]`` print the dict as JSON.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

from _common import bootstrap_or_local, wheel_librdkafka
from import_bench import CFLOOR_BIN, _import, _topic, _write_lines

__all__ = ["kcat", "kcat_command", "typed"]

#: each Parquet import at least this times the C loop sending the same JSON records
TYPED_TARGET = 0.8
#: cykafka import at least this times kcat -P -l (processes), by number of lines
KCAT_TARGETS = {2_000_000: 1.0, 10_000_000: 1.2}


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


# -- typed vs flat Parquet ----------------------------------------------------------


def _tables(rows: int) -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    ids = np.arange(rows, dtype=np.int64)
    flat = {
        "id": pa.array(ids),
        "name": pa.array(np.char.add("user-", (ids % 1000).astype(str)).astype(object)),
        "score": pa.array(rng.random(rows) * 100),
    }
    at_us = 1_700_000_000_000_000 + ids * 1_000_003
    le128 = np.zeros((rows, 2), np.int64)  # decimal128: 16 little-endian bytes, in cents
    le128[:, 0] = (ids * 7919) % 10_000_000
    typed = {
        **flat,
        "at": pa.array(at_us, pa.timestamp("us", "UTC")),
        "price": pa.Array.from_buffers(pa.decimal128(12, 2), rows, [None, pa.py_buffer(le128)]),
        "category": pa.DictionaryArray.from_arrays(
            pa.array(ids % 3, pa.int32()), pa.array(["red", "green", "blue"])
        ),
        "tags": pa.ListArray.from_arrays(
            pa.array(np.arange(rows + 1, dtype=np.int32) * 2),
            pa.array(np.tile(np.array(["etl", "spark"], dtype=object), rows)),
        ),
        "info": pa.StructArray.from_arrays(
            [pa.array(ids % 100_000, pa.int32()), pa.array(np.full(rows, "eu", dtype=object))],
            names=["shop", "region"],
        ),
    }
    points = pa.StructArray.from_arrays(
        [pa.array(rng.random(rows) * 10), pa.array(np.full(rows, "p", dtype=object))],
        names=["x", "label"],
    )
    nested = {
        **typed,
        "points": pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32)), points),
        "attrs": pa.MapArray.from_arrays(
            pa.array(np.arange(rows + 1, dtype=np.int32)),
            pa.array(np.full(rows, "k", dtype=object)),
            pa.array(ids),
        ),
        "at_ns": pa.array(at_us * 1000 + 789, pa.timestamp("ns", "UTC")),
    }
    return {"flat": pa.table(flat), "typed": pa.table(typed), "nested": pa.table(nested)}


def _encode_rate(table: Any) -> float:
    """rows/s of the C encoder alone (record_json, no Kafka) over the table in
    RecordBatches of 65,536 rows, sliced from it as a Spark or pandas caller's are;
    best of three passes."""
    from cykafka._arrow import record_json

    batches = table.combine_chunks().to_batches(max_chunksize=65536)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for b in batches:
            record_json(b)
        best = min(best, time.perf_counter() - t)
    return table.num_rows / best


def _c_floor_of(bootstrap: str, path: str, tmp: str) -> float:
    """rows/s of bench/cfloor.c sending the file's JSON records (written out before the
    clock starts, one per line) with the import's own librdkafka config: what a C loop
    over rd_kafka_producev gets for exactly these bytes on this broker."""
    import pyarrow.parquet as pq

    from cykafka._arrow import record_json

    records = os.path.join(tmp, os.path.basename(path) + ".jsonl")
    rows = 0
    with open(records, "wb") as f:
        for b in pq.ParquetFile(path).iter_batches(batch_size=65536):
            arr = record_json(b)[0]  # strings: JSON text never holds a raw newline
            f.write(("\n".join(arr.to_pylist()) + "\n").encode())
            rows += len(arr)
    conf = _import_config(bootstrap, "ordered")
    extra = [f"{k}={v}" for k, v in conf.items()] + [f"cfloor.file={records}"]
    try:
        with _topic(bootstrap, "bench-typed-cfloor", 1) as topic:
            out = subprocess.run(
                [CFLOOR_BIN, bootstrap, topic, str(rows), "0", *extra],
                capture_output=True,
                text=True,
                timeout=600,
                check=True,
            ).stdout
    finally:
        os.unlink(records)
    res = json.loads(out.strip().splitlines()[-1])
    if res["delivered"] != rows or res["failed"]:
        raise RuntimeError(f"the C loop over {path} lost messages: {res}")
    return float(res["msgs"]) / float(res["seconds"])


def typed(bootstrap_servers: str, rows: int = 500_000, repeat: int = 3) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from cykafka._arrow import record_json

    if not os.path.exists(CFLOOR_BIN):
        raise SystemExit(f"bench: {CFLOOR_BIN} is missing (bench/run.py builds it)")
    kinds = ("flat", "typed", "nested")
    runs: dict[str, list[float]] = {k: [] for k in kinds}
    floors: dict[str, list[float]] = {k: [] for k in kinds}
    out: dict[str, Any] = {"rows": rows, "preset": "ordered", "target": TYPED_TARGET}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-typed-") as tmp:
        paths = {}
        tables = _tables(rows)
        for kind, table in tables.items():
            paths[kind] = os.path.join(tmp, f"{kind}.parquet")
            pq.write_table(table, paths[kind])
            out[f"{kind}_columns"] = [f"{f.name}: {f.type}" for f in table.schema]
        out["parquet_mb"] = {k: round(os.path.getsize(p) / 1e6, 1) for k, p in paths.items()}
        for kind, table in tables.items():
            first = next(pq.ParquetFile(paths[kind]).iter_batches(batch_size=65536))
            out[f"{kind}_json_bytes_per_row"] = round(
                record_json(first)[0].buffers()[2].size / first.num_rows
            )
            out[f"{kind}_encode_rows_per_s"] = round(_encode_rate(table))
        for _ in range(max(repeat, 1)):
            for kind in kinds:
                # warm: the producer has connected and has its producer id, as the C
                # loop has before its clock starts (start-up is the kcat step's subject)
                res = _import(bootstrap_servers, paths[kind], "ordered", {}, 1, warm=True)
                runs[kind].append(res.rows_per_second)
                floors[kind].append(_c_floor_of(bootstrap_servers, paths[kind], tmp))
    for kind in kinds:
        ratio = _med([r / f for r, f in zip(runs[kind], floors[kind])])
        out[kind] = {
            "rows_per_s_median": round(_med(runs[kind])),
            "rows_per_s_best": round(max(runs[kind])),
            "runs_rows_per_s": [round(r) for r in runs[kind]],
            "c_floor_rows_per_s_median": round(_med(floors[kind])),
            "runs_c_floor_rows_per_s": [round(f) for f in floors[kind]],
            "ratio_to_c_floor_median": round(ratio, 2),
        }
        out[f"{kind}_pass"] = ratio >= TYPED_TARGET
    # Not rounded: bench/run.py holds the import to a share of the C loop's ratio, and
    # the share of two rounded ratios can pass or miss by the rounding alone.
    for kind in ("typed", "nested"):
        out[f"{kind}_vs_flat_median"] = _med([t / f for t, f in zip(runs[kind], runs["flat"])])
        out[f"{kind}_c_floor_vs_flat_median"] = _med(
            [t / f for t, f in zip(floors[kind], floors["flat"])]
        )
    return out


# -- lines vs kcat, as processes ------------------------------------------------------


def kcat_command(workdir: str) -> tuple[str, dict[str, str]]:
    """(kcat's path, the environment that runs it on the wheel's librdkafka).  Installs
    Debian's kcat when it is missing (apt-get, with sudo when not root)."""
    path = shutil.which("kcat")
    if path is None:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "kcat"], check=True, env=env)
        path = shutil.which("kcat")
        if path is None:
            raise SystemExit("bench: apt-get installed kcat but it is not on PATH")
    libdir = os.path.join(workdir, "kcat-lib")
    os.makedirs(libdir, exist_ok=True)
    link = os.path.join(libdir, "librdkafka.so.1")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.abspath(wheel_librdkafka()), link)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = libdir + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""
    )
    version = subprocess.run([path, "-V"], capture_output=True, text=True, env=env).stdout
    m = re.search(r"librdkafka (\d+\.\d+\.\d+)", version)
    if not m or m.group(1).split(".")[:2] == ["2", "0"]:
        raise SystemExit(f"bench: kcat does not load the wheel's librdkafka: {version!r}")
    return path, env


def _timed(cmd: list[str], env: Optional[dict[str, str]] = None) -> tuple[float, str, float]:
    """(wall seconds, stdout, CPU seconds of the process: user + system, all threads)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, proc.stdout, cpu


def _phases(stdout: str) -> dict[str, float]:
    """The ``--timings`` phases of a summary: {phase key: seconds}."""
    from cykafka.importer.summary import PHASES

    names = {label: key for key, label in PHASES.items()}
    out: dict[str, float] = {}
    for line in stdout.splitlines():
        m = re.match(r"\s+(.+?)\s+([\d.]+) s\s+\d+%$", line)
        if m and m.group(1) in names:
            out[names[m.group(1)]] = float(m.group(2))
    return out


def _import_config(bootstrap: str, preset: Optional[str]) -> dict[str, str]:
    """The librdkafka config ``cykafka import --preset PRESET`` runs with (1 partition)."""
    from cykafka.importer import resolve_import

    conf = resolve_import({"bootstrap.servers": bootstrap}, preset, 1).librdkafka()
    conf.pop("bootstrap.servers")
    return conf


def _x(conf: dict[str, str]) -> list[str]:
    return [a for k, v in sorted(conf.items()) for a in ("-X", f"{k}={v}")]


def kcat(
    bootstrap_servers: str, rows: tuple[int, ...] = (2_000_000, 10_000_000), repeat: int = 3
) -> dict[str, Any]:
    cy = os.path.join(os.path.dirname(sys.executable), "cykafka")
    out: dict[str, Any] = {"repeat": repeat}
    with tempfile.TemporaryDirectory(prefix="cykafka-bench-kcat-") as tmp:
        kcat_bin, env = kcat_command(tmp)
        version = subprocess.run([kcat_bin, "-V"], capture_output=True, text=True, env=env)
        out["kcat"] = next(x for x in version.stdout.splitlines() if "librdkafka" in x).strip()
        sides = {
            "kcat": [kcat_bin, "-P", "-b", bootstrap_servers, "-t", "{topic}", "-l", "{file}"],
            "kcat_idempotent": [
                kcat_bin,
                "-P",
                "-b",
                bootstrap_servers,
                "-t",
                "{topic}",
                "-X",
                "enable.idempotence=true",
                "-l",
                "{file}",
            ],  # fmt: skip
            "cykafka": [
                cy,
                "import",
                "{file}",
                "--format",
                "lines",
                "-b",
                bootstrap_servers,
                "-t",
                "{topic}",
                "--no-progress",
                "--timings",
            ],  # fmt: skip
        }
        sides["cykafka_none"] = [*sides["cykafka"], "--preset", "none"]
        # kcat with every librdkafka setting the import resolves to (its defaults, lz4
        # and linger.ms=20 among them, and under ordered the preset's and the queue bound)
        configs = {
            "kcat_same": _import_config(bootstrap_servers, None),
            "kcat_same_ordered": _import_config(bootstrap_servers, "ordered"),
        }
        for side, conf in configs.items():
            sides[side] = [*sides["kcat"][:-2], *_x(conf), "-l", "{file}"]
        for n in rows:
            path = os.path.join(tmp, f"lines-{n}.txt")
            _write_lines(path, n)
            times: dict[str, list[float]] = {s: [] for s in sides}
            cpus: dict[str, list[float]] = {s: [] for s in sides}
            phases: list[dict[str, float]] = []
            for _ in range(max(repeat, 1)):
                for side, cmd in sides.items():
                    with _topic(bootstrap_servers, f"bench-{side}", 1) as topic:
                        argv = [a.format(topic=topic, file=path) for a in cmd]
                        took, stdout, cpu = _timed(argv, env if side.startswith("kcat") else None)
                    times[side].append(took)
                    cpus[side].append(cpu)
                    if side == "cykafka":
                        phases.append(_phases(stdout))
            os.unlink(path)
            for ph, took in zip(phases, times["cykafka"]):
                ph["rest_close_and_exit"] = took - sum(ph.values())

            def ratio(k: str, c: str, times: dict[str, list[float]] = times) -> float:
                return round(_med([a / b for a, b in zip(times[k], times[c])]), 2)

            out[str(n)] = {
                "seconds_median": {s: round(_med(v), 2) for s, v in times.items()},
                "rows_per_s_median": {s: round(n / _med(v)) for s, v in times.items()},
                "cpu_seconds_median": {s: round(_med(v), 2) for s, v in cpus.items()},
                "runs_seconds": {s: [round(x, 2) for x in v] for s, v in times.items()},
                "defaults_ratio": ratio("kcat", "cykafka"),
                "same_guarantee_ratio": ratio("kcat_idempotent", "cykafka"),
                "same_settings_ratio": ratio("kcat_same", "cykafka_none"),
                "same_settings_ordered_ratio": ratio("kcat_same_ordered", "cykafka"),
                "kcat_configs": configs,
                "cykafka_phases_s": {
                    k: round(_med([ph.get(k, 0.0) for ph in phases]), 3) for k in phases[0]
                },
                "target": KCAT_TARGETS.get(n),
            }
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="typed vs flat Parquet; lines vs kcat")
    ap.add_argument("bootstrap", nargs="?", help="default: a local broker for the run")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--typed", action="store_true", help="typed and nested vs flat Parquet")
    what.add_argument("--kcat", action="store_true", help="import --format lines vs kcat -P -l")
    ap.add_argument("--rows", type=int, default=500_000, help="--typed: rows per file")
    ap.add_argument("--lines", type=int, nargs="+", default=list(KCAT_TARGETS), help="--kcat")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with bootstrap_or_local([a.bootstrap] if a.bootstrap else []) as bs:
        if a.typed:
            print(json.dumps(typed(bs, a.rows, a.repeat)))
        else:
            print(json.dumps(kcat(bs, tuple(a.lines), a.repeat)))
