#!/usr/bin/env bash
# kcat habits (-K, -H, -p), checked without sending anything.
set -u
exec 2>&1
cd "$(mktemp -d)"
printf 'k1:{"n":1}\nk2:{"n":2}\nno-delimiter-here\n' > events.txt
echo '$ cykafka import events.txt -t events -K : -H source=nightly -p 0 --dry-run'
cykafka import events.txt -t events -K : -H source=nightly -p 0 --dry-run
echo "(exit status $?)"
