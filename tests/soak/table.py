"""The README's reliability table, produced by running the tests that measure it.

    PYTHONPATH=src python tests/soak/table.py            # CI-sized runs (~3 min)
    PYTHONPATH=src python tests/soak/table.py --soak     # + 1 M-message broker down/up
                                                         #   import and the 10 M RSS soak

Each reliability/fuzz/security test appends a JSON row (item, tried, lost,
failed_reported, extras) to $CYKAFKA_RELIABILITY_LOG (see
tests/test_reliability.py:record); this script sets that, runs the tests, and
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

SUITES = [
    ("tests/test_reliability.py", {}),
    ("tests/test_fuzz.py", {}),
    ("tests/test_security.py", {}),
]
SOAK_SUITES = [
    ("tests/test_reliability.py -k mock_all_brokers", {"CYKAFKA_RELIABILITY_N": "1000000"}),
    ("tests/test_fuzz.py -k fuzz_", {"CYKAFKA_FUZZ_EXAMPLES": "2000"}),
]


def run_pytest(spec: str, env_extra: dict[str, str], log: Path) -> list[dict]:
    before = log.read_text().count("\n") if log.exists() else 0
    env = {**os.environ, **env_extra, "CYKAFKA_RELIABILITY_LOG": str(log)}
    env.setdefault("PYTHONPATH", str(ROOT / "src"))
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *spec.split()]
    rc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode
    rows = [json.loads(line) for line in log.read_text().splitlines()[before:]]
    prefix = " ".join(f"{k}={v}" for k, v in env_extra.items())
    command = f"{prefix + ' ' if prefix else ''}pytest {spec}"
    for r in rows:
        r["command"] = command
        r["rc"] = rc
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak", action="store_true", help="also the long runs")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "rows.jsonl"
        for spec, env in SUITES + (SOAK_SUITES if args.soak else []):
            print(f"running pytest {spec} ...", file=sys.stderr, flush=True)
            rows += run_pytest(spec, env, log)
    if args.soak:
        print("running the 10 M-message RSS soak ...", file=sys.stderr, flush=True)
        out = subprocess.run([PY, "tests/soak/rss_soak.py"], cwd=ROOT, capture_output=True,
                             text=True, env={**os.environ,
                                             "PYTHONPATH": os.environ.get("PYTHONPATH",
                                                                          str(ROOT / "src"))})
        res = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"item": "memory soak: produce + produce_batch, RSS flat, futures freed",
                     "tried": res["messages"], "lost": res["lost"],
                     "failed_reported": res["failed"], "rc": out.returncode,
                     "rss_mb": f"{res['rss_mb_after_warmup']} -> {res['rss_mb_end']} "
                               f"(max {res['rss_mb_max']})",
                     "python_blocks_growth": res["python_blocks_growth"],
                     "command": "python tests/soak/rss_soak.py"})
    print("| fault / input class | tried | lost | failed (reported) | notes | command |")
    print("|---|---:|---:|---:|---|---|")
    for r in rows:
        extras = {k: v for k, v in r.items()
                  if k not in ("item", "tried", "lost", "failed_reported", "command", "rc")}
        note = ", ".join(f"{k}={v}" for k, v in extras.items())
        if r.get("rc"):
            note = f"**FAILED (rc {r['rc']})** " + note
        print(f"| {r['item']} | {r['tried']:,} | {r['lost']} | {r['failed_reported']:,} | "
              f"{note} | `{r['command']}` |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if any(r["lost"] or r.get("rc") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
