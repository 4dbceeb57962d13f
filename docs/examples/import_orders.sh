#!/usr/bin/env bash
# An orders.csv with a row with one field too many (line 4), a byte that is not UTF-8
# (line 6) and a last line still being written (no final newline).
set -u
exec 2>&1
cd "$(mktemp -d)"
printf 'id,user,amount,paid_at\n1,alice,2.50,2024-05-01T12:00:00Z\n2,bob,10.00,2024-05-01T12:00:05Z\n3,carol,7.25,2024-05-01T12:00:09Z,EXTRA\n4,alice,3.10,2024-05-01T12:00:12Z\n5,\xe9ve,1.00,2024-05-01T12:00:15Z\n6,bob,4.00,2024-05-01T12:00:20Z' > orders.csv
echo '$ cykafka import orders.csv -t orders --key-field user --dead-letter dead.jsonl --no-progress'
cykafka import orders.csv -t orders --key-field user --dead-letter dead.jsonl --no-progress
rc=$?
echo "\$ echo \$?"
echo $rc
echo '$ cat dead.jsonl'
cat dead.jsonl
