#!/usr/bin/env bash
# An --exactly-once import killed with SIGKILL half-way, the same command again, and
# `cykafka verify` comparing the topic with the file.
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
        --commit-every 50000 --no-progress)
echo '$ cykafka import orders.csv -t orders -b $BOOTSTRAP --key-field user --exactly-once --commit-every 50000 --rate 50000'
"${import[@]}" --rate 50000 > /dev/null 2>&1 &
pid=$!
sleep 3
kill -KILL "$pid"
wait "$pid" 2>/dev/null
echo "(killed with SIGKILL after 3 s)"
echo '$ cykafka import orders.csv -t orders -b $BOOTSTRAP --key-field user --exactly-once --commit-every 50000'
"${import[@]}"
echo '$ cykafka verify orders.csv -t orders -b $BOOTSTRAP --key-field user'
cykafka verify orders.csv -t orders -b "$BOOTSTRAP" --key-field user
echo "(exit status $?)"
