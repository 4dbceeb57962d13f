#!/usr/bin/env bash
# `cykafka verify` with another --key-field than the import used: nearly every record is
# missing and extra, and the report names the option that matches.
set -u
exec 2>&1
here=$(cd "$(dirname "$0")" && pwd)
cd "$(mktemp -d)"
. "$here/_broker.sh" --topic events --partitions 1
python -c '
import json
with open("events.jsonl", "w") as f:
    f.writelines(json.dumps({"user": f"user-{i % 3}", "id": f"e{i}"}) + "\n" for i in range(30))
'
cykafka import events.jsonl -t events -b "$BOOTSTRAP" --key-field id --no-progress > /dev/null 2>&1
echo '$ cykafka verify events.jsonl -t events -b $BOOTSTRAP --key-field user'
cykafka verify events.jsonl -t events -b "$BOOTSTRAP" --key-field user
echo "(exit status $?)"
