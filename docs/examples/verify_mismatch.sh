#!/usr/bin/env bash
# `cykafka verify` against a topic that lost one record of the file, holds one the file
# does not, one twice, and one out of order.
set -u
exec 2>&1
here=$(cd "$(dirname "$0")" && pwd)
cd "$(mktemp -d)"
. "$here/_broker.sh" --topic events --partitions 1
python - "$BOOTSTRAP" <<'PY'
import json, sys
from cykafka import Producer

rows = [{"k": f"user-{i % 3}", "v": f"event-{i}"} for i in range(30)]
with open("events.jsonl", "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
sent = [r for i, r in enumerate(rows) if i != 7]          # row 8 (line 8) is missing
sent.insert(20, rows[12])                                  # row 13 again
sent[3], sent[6] = sent[6], sent[3]                        # rows 4 and 7 swapped
sent.append({"k": "user-9", "v": "not-in-the-file"})       # one the file does not hold
with Producer({"bootstrap.servers": sys.argv[1]}, preset="ordered") as p:
    p.produce_batch("events", [r["v"] for r in sent], keys=[r["k"] for r in sent]).result()
PY
echo '$ cykafka verify events.jsonl -t events -b $BOOTSTRAP --key-field k --value-field v'
cykafka verify events.jsonl -t events -b "$BOOTSTRAP" --key-field k --value-field v
echo "(exit status $?)"
