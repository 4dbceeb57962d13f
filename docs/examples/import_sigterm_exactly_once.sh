#!/usr/bin/env bash
# An --exactly-once import stopped with SIGTERM (what `timeout`, systemd, Kubernetes and
# Airflow send), then the same command again.
set -u
exec 2>&1
here=$(cd "$(dirname "$0")" && pwd)
cd "$(mktemp -d)"
. "$here/_broker.sh" --topic orders --partitions 3
python -c "
import random
random.seed(7)
with open('orders.csv', 'w') as f:
    f.write('id,user,amount\n')
    f.writelines(f'{i},user-{random.randrange(500)},{random.randrange(10000) / 100:.2f}\n' for i in range(200_000))
"
import=(cykafka import orders.csv -t orders -b "$BOOTSTRAP" --key-field user --exactly-once
        --commit-every 20000 --rate 50000 --no-progress)
echo '$ cykafka import orders.csv -t orders -b $BOOTSTRAP --key-field user --exactly-once --commit-every 20000 --rate 50000 --no-progress'
"${import[@]}" > run.log 2>&1 &
pid=$!
until grep -qs reading run.log; do sleep 0.05; done
sleep 1.5
kill -TERM "$pid"
wait "$pid"
status=$?
echo '(SIGTERM 1.5 s after it started reading)'
cat run.log
echo "(exit status $status)"
echo '$ cykafka import orders.csv -t orders -b $BOOTSTRAP --key-field user --exactly-once --commit-every 20000 --rate 50000 --no-progress'
"${import[@]}"
echo "(exit status $?)"
