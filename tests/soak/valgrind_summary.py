"""Summarise a valgrind memcheck log for cykafka (used by tests/soak/valgrind.sh).

Each error block is attributed by its stack: "cykafka" if any frame is in the
extension (_native*.so), else "librdkafka" if any frame is in librdkafka, else
"other" (CPython and its modules: e.g. CPython 3.11's known maybe_small_long
uninitialised-value reports).  Exit status 1 if any invalid read/write, bad
free, uninitialised use or definite leak is attributed to cykafka.

With ``--row FILE`` it also writes one reliability-table row (JSON, the format
of tests/support/reliability_log.py:record) that ``tests/soak/table.py --valgrind DIR``
includes: "tried" is the number of tests that ran under valgrind (from
``--pytest-output``), and the notes give the error blocks in cykafka's extension
by kind.  "lost" is "-": memcheck counts memory errors, not messages.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time

KINDS = ("invalid read/write", "bad free", "uninitialised", "definite leak")


def classify(text: str) -> collections.Counter[tuple[str, str]]:
    """(owner, kind) -> number of error blocks in a memcheck log."""
    pid = re.search(r"==(\d+)==", text)
    prefix = f"=={pid.group(1)}==" if pid else "=="
    blocks = re.split(rf"\n{re.escape(prefix)} \n", text)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for b in blocks:
        if re.search(r"Invalid (read|write)", b):
            kind = "invalid read/write"
        elif re.search(r"Invalid free|Mismatched free|double free", b):
            kind = "bad free"
        elif re.search(r"uninitialised|Conditional jump", b):
            kind = "uninitialised"
        elif re.search(r"blocks are definitely lost", b):
            kind = "definite leak"
        else:
            continue
        if re.search(r"_native[^ )]*\.so|_native\.c|\.pxi", b):
            owner = "cykafka"
        elif "librdkafka" in b or "rd_kafka" in b:
            owner = "librdkafka"
        else:
            owner = "other"
        counts[(owner, kind)] += 1
    return counts


def examples(text: str, limit: int = 6) -> list[str]:
    pid = re.search(r"==(\d+)==", text)
    prefix = f"=={pid.group(1)}==" if pid else "=="
    out = []
    for b in re.split(rf"\n{re.escape(prefix)} \n", text):
        if re.search(
            r"Invalid|Mismatched free|double free|uninitialised|Conditional jump"
            r"|definitely lost",
            b,
        ) and (
            re.search(r"_native[^ )]*\.so|_native\.c|\.pxi", b)
            or "librdkafka" in b
            or "rd_kafka" in b
        ):
            out.append(b[:4000])
            if len(out) >= limit:
                break
    return out


def tests_run(pytest_output: str | None) -> int:
    """passed + failed from pytest's last summary line (0 if unknown)."""
    if not pytest_output or not os.path.exists(pytest_output):
        return 0
    text = open(pytest_output, errors="replace").read()
    return sum(int(n) for n, what in re.findall(r"(\d+) (passed|failed|error)", text)[-3:])


def row(counts: collections.Counter[tuple[str, str]], tried: int, log: str, command: str) -> dict:
    ours = {k: counts.get(("cykafka", k), 0) for k in KINDS}
    return {
        "item": "valgrind memcheck: errors in cykafka's extension (invalid reads/writes, "
        "bad frees, uninitialised use, definite leaks)",
        "tried": tried,
        "lost": "-",
        "failed_reported": 0,
        "tried_counts": "tests run under memcheck",
        **{k.replace(" ", "_").replace("/", "_"): n for k, n in ours.items()},
        "outside_cykafka": sum(n for (o, _), n in counts.items() if o != "cykafka"),
        "log": f"{log} ({time.strftime('%Y-%m-%d', time.gmtime(os.path.getmtime(log)))})",
        "rc": 1 if any(ours.values()) else 0,
        "command": command,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="the memcheck log of the pytest process")
    ap.add_argument("--pytest-output", help="pytest's output (for the count of tests run)")
    ap.add_argument("--row", help="write the reliability-table row (JSON) here")
    ap.add_argument(
        "--command", default="tests/soak/valgrind.sh", help="the command shown in the table row"
    )
    args = ap.parse_args(argv)
    text = open(args.log, errors="replace").read()
    counts = classify(text)
    print(f"valgrind memcheck log: {args.log}")
    for line in re.findall(
        r"(?:ERROR SUMMARY|definitely lost|indirectly lost|possibly lost"
        r"|in use at exit): .*",
        text,
    )[-5:]:
        print(" ", line)
    print("error blocks by owner and kind:")
    for (owner, kind), n in sorted(counts.items()):
        print(f"  {owner:10s} {kind:20s} {n}")
    if not counts:
        print("  (none)")
    for e in examples(text):
        print("-" * 72)
        print(e)
    ours = sum(n for (owner, _), n in counts.items() if owner == "cykafka")
    print(
        "RESULT:",
        "clean (nothing attributed to cykafka)"
        if ours == 0
        else f"{ours} error block(s) in cykafka's extension",
    )
    if args.row:
        with open(args.row, "w") as fh:
            json.dump(
                row(counts, tests_run(args.pytest_output), args.log, args.command.strip()), fh
            )
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
