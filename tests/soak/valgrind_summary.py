"""Summarise a valgrind memcheck log for cykafka (used by tests/soak/valgrind.sh).

Each error block is attributed by its stack: "cykafka" if any frame is in the
extension (_native*.so), else "librdkafka" if any frame is in librdkafka, else
"other" (CPython and its modules: e.g. CPython 3.11's known maybe_small_long
uninitialised-value reports).  Exit status 1 if any invalid read/write, bad
free, uninitialised use or definite leak is attributed to cykafka.
"""

from __future__ import annotations

import collections
import re
import sys


def main(path: str) -> int:
    text = open(path, errors="replace").read()
    pid = re.search(r"==(\d+)==", text)
    prefix = f"=={pid.group(1)}==" if pid else "=="
    blocks = re.split(rf"\n{re.escape(prefix)} \n", text)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    examples: list[str] = []
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
        if owner != "other" and len(examples) < 6:
            examples.append(b[:4000])
    print(f"valgrind memcheck log: {path}")
    for line in re.findall(r"(?:ERROR SUMMARY|definitely lost|indirectly lost|possibly lost"
                           r"|in use at exit): .*", text)[-5:]:
        print(" ", line)
    print("error blocks by owner and kind:")
    for (owner, kind), n in sorted(counts.items()):
        print(f"  {owner:10s} {kind:20s} {n}")
    if not counts:
        print("  (none)")
    for e in examples:
        print("-" * 72)
        print(e)
    ours = sum(n for (owner, _), n in counts.items() if owner == "cykafka")
    print("RESULT:", "clean (nothing attributed to cykafka)" if ours == 0
          else f"{ours} error block(s) in cykafka's extension")
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
