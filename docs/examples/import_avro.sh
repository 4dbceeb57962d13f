#!/usr/bin/env bash
# `cykafka import` of a Parquet file as Avro through a (mock) Schema Registry, into the
# embedded broker; the row that does not fit the schema goes to the dead-letter file.
set -u
exec 2>&1  # progress lines (stderr) and the summary (stdout) in the order they are written
cd "$(mktemp -d)"
python - <<'PY'
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({
    "id": [1, 2, 3], "city": ["Lyon", None, "Porto"],
    "tags": [["new"], [], ["vip", "eu"]], "kind": ["order", "refund", "chargeback"],
    "user": ["u7", "u9", "u1"]}), "orders.parquet")
open("order.avsc", "w").write("""{"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"},
  {"name": "city", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["order", "refund"]}},
  {"name": "source", "type": "string", "default": "parquet"}]}""")
PY
echo '$ cykafka import orders.parquet -t orders --value-format avro --schema-registry mock://docs \'
echo '    --value-schema order.avsc --key-field user --dead-letter dead.jsonl --no-progress'
cykafka import orders.parquet -t orders --value-format avro --schema-registry mock://docs \
    --value-schema order.avsc --key-field user --dead-letter dead.jsonl --no-progress
echo "(exit status $?)"
echo '$ cat dead.jsonl'
cat dead.jsonl; echo
