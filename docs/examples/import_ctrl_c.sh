#!/usr/bin/env bash
# Ctrl-C (a real SIGINT) one second into an import of 3,000,000 lines.
set -u
exec 2>&1
here=$(cd "$(dirname "$0")" && pwd)
cd "$(mktemp -d)"
. "$here/_broker.sh" --topic events --partitions 3
python -c "
with open('events.txt', 'w') as f:
    f.writelines(f'{{\"event\":{i}}}\n' for i in range(3_000_000))
"
echo '$ cykafka import events.txt -t events -b $BOOTSTRAP --no-progress --dead-letter dead.jsonl'
echo '(Ctrl-C after 1 s)'
cykafka import events.txt -t events -b "$BOOTSTRAP" --no-progress --dead-letter dead.jsonl &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
echo "(exit status $?)"
