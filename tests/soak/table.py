"""The README's reliability table, produced by running the tests that measure it.

    .venv/bin/python tests/soak/table.py                 # CI-sized runs (~3 min)
    .venv/bin/python tests/soak/table.py --soak          # + 1 M-message broker down/up
                                                         #   import and the 10 M RSS soak
    ... tests/soak/table.py --valgrind /tmp/cykafka-valgrind  # + the row written by
                                                         #   tests/soak/valgrind.sh (if any)

Each reliability/fuzz/security test appends a JSON row (item, tried, lost,
failed_reported, extras) to $CYKAFKA_RELIABILITY_LOG (see
tests/support/reliability_log.py:record); this script sets that, runs the tests, and
prints a Markdown table with the command that produced each row.  "lost" counts
messages that vanished: neither refused with an exception, nor failed through
their future, nor found (delivered) in the broker's log where it is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The tests import the cykafka that ``python`` has installed (``./run`` puts it in
    .venv); ``src`` goes on PYTHONPATH only when it holds a built extension (an in-place
    build), since a ``src`` without one shadows the installed package and fails."""
    env = {**os.environ, **extra}
    if "PYTHONPATH" not in env and list((ROOT / "src" / "cykafka").glob("_native*.so")):
        env["PYTHONPATH"] = str(ROOT / "src")
    return env


SUITES = [
    ("tests/producer/test_reliability.py", {}),
    ("tests/producer/test_fuzz.py", {}),
    ("tests/security/test_security.py", {}),
]
SOAK_SUITES = [
    (
        "tests/producer/test_reliability.py -k mock_all_brokers",
        {"CYKAFKA_RELIABILITY_N": "1000000"},
    ),
    ("tests/producer/test_fuzz.py -k fuzz_", {"CYKAFKA_FUZZ_EXAMPLES": "2000"}),
]


def run_pytest(spec: str, env_extra: dict[str, str], log: Path) -> list[dict]:
    before = log.read_text().count("\n") if log.exists() else 0
    env = _env({**env_extra, "CYKAFKA_RELIABILITY_LOG": str(log)})
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *spec.split()]
    rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode
    rows = [json.loads(line) for line in log.read_text().splitlines()[before:]]
    prefix = " ".join(f"{k}={v}" for k, v in env_extra.items())
    command = f"{prefix + ' ' if prefix else ''}pytest {spec}"
    for r in rows:
        r["command"] = command
        r["rc"] = rc
    return rows


def merge(rows: list[dict]) -> list[dict]:
    """Rows with the same item and command (one per case of a parametrized test) become
    one: counts summed, a note kept where every case agrees, "cases" added."""
    out: dict[tuple[str, str], dict] = {}
    cases: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["item"], r.get("command", ""))
        if key not in out:
            out[key] = dict(r)
            cases[key] = 1
            continue
        m = out[key]
        cases[key] += 1
        for k, v in r.items():
            if k in ("item", "command"):
                continue
            if (
                k in ("tried", "lost", "failed_reported", "refused")
                and isinstance(v, int)
                and isinstance(m.get(k), int)
            ):
                m[k] += v
            elif k == "rc":
                m[k] = m.get(k) or v
            elif m.get(k) != v:
                m.pop(k, None)
    for key, n in cases.items():
        if n > 1:
            out[key]["cases"] = n
    return list(out.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak", action="store_true", help="also the long runs")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument(
        "--valgrind",
        metavar="DIR",
        help="include the memcheck row tests/soak/valgrind.sh wrote to DIR/row.json "
        "(its $OUT, default /tmp/cykafka-valgrind); skipped with a message "
        "if there is none",
    )
    args = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "rows.jsonl"
        for spec, env in SUITES + (SOAK_SUITES if args.soak else []):
            print(f"running pytest {spec} ...", file=sys.stderr, flush=True)
            rows += merge(run_pytest(spec, env, log))
    if args.soak:
        print("running the 10 M-message RSS soak ...", file=sys.stderr, flush=True)
        out = subprocess.run(
            [PY, "tests/soak/rss_soak.py"], cwd=ROOT, capture_output=True, text=True, env=_env({})
        )
        res = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(
            {
                "item": "memory soak: produce + produce_batch, RSS flat, futures freed",
                "tried": res["messages"],
                "lost": res["lost"],
                "failed_reported": res["failed"],
                "rc": out.returncode,
                "rss_mb": f"{res['rss_mb_after_warmup']} -> {res['rss_mb_end']} "
                f"(max {res['rss_mb_max']})",
                "python_blocks_growth": res["python_blocks_growth"],
                "command": "python tests/soak/rss_soak.py",
            }
        )
    if args.valgrind:
        vg = Path(args.valgrind) / "row.json"
        if vg.exists():
            rows.append(json.loads(vg.read_text()))
        else:
            print(f"no valgrind row at {vg}: run tests/soak/valgrind.sh first", file=sys.stderr)
    print("| fault / input class | tried | lost | failed (reported) | notes | command |")
    print("|---|---:|---:|---:|---|---|")
    for r in rows:
        extras = {
            k: v
            for k, v in r.items()
            if k not in ("item", "tried", "lost", "failed_reported", "command", "rc")
        }
        note = ", ".join(f"{k}={v}" for k, v in extras.items())
        if r.get("rc"):
            note = f"**FAILED (rc {r['rc']})** " + note
        print(
            f"| {r['item']} | {r['tried']:,} | {r['lost']} | {r['failed_reported']:,} | "
            f"{note} | `{r['command']}` |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    # "lost" is "-" where no messages are counted (the valgrind row).
    return 1 if any((isinstance(r["lost"], int) and r["lost"]) or r.get("rc") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
