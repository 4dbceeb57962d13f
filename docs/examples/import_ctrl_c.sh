#!/usr/bin/env bash
# Ctrl-C (a real SIGINT) during an import of 3,000,000 lines, paced at 1,000,000 rows/s
# so that it is still running one second after it starts reading; then the command the
# summary prints, run as printed, imports the rest.
set -u
exec 2>&1
here=$(cd "$(dirname "$0")" && pwd)
cd "$(mktemp -d)"
. "$here/_broker.sh" --topic events --partitions 3
python -c "
with open('events.txt', 'w') as f:
    f.writelines(f'{{\"event\":{i}}}\n' for i in range(3_000_000))
"
echo '$ cykafka import events.txt -t events -b $BOOTSTRAP --no-progress --dead-letter dead.jsonl --rate 1000000'
cykafka import events.txt -t events -b "$BOOTSTRAP" --no-progress --dead-letter dead.jsonl \
  --rate 1000000 > run.log 2>&1 &
pid=$!
until grep -qs reading run.log; do sleep 0.05; done
sleep 1
kill -INT "$pid"
wait "$pid"
status=$?
echo '(Ctrl-C one second after it started reading)'
cat run.log
echo "(exit status $status)"
finish=$(grep -A1 '  to finish' run.log | tail -1)
echo "\$ ${finish#"${finish%%[![:space:]]*}"}"
eval "$finish"
echo "(exit status $?)"
