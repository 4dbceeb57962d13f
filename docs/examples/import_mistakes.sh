#!/usr/bin/env bash
# Mistakes about the cluster fail before any input is read, in one line.
set -u
exec 2>&1
cd "$(mktemp -d)"
printf 'id,user\n1,alice\n' > orders.csv
echo '$ cykafka import orders.csv -t orders -b 127.0.0.1:1'
cykafka import orders.csv -t orders -b 127.0.0.1:1
echo "(exit status $?)"
echo '$ cykafka verify orders.csv -t orders -b 127.0.0.1:1 --connect-timeout 2'
cykafka verify orders.csv -t orders -b 127.0.0.1:1 --connect-timeout 2
echo "(exit status $?)"
echo "\$ cykafka import orders.csv -t 'orders 2024'"
cykafka import orders.csv -t 'orders 2024'
echo "(exit status $?)"
