"""Avro through a Schema Registry from an Arrow table, read back with confluent's deserializer."""

import pyarrow as pa
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cykafka import Producer
from cykafka.broker import LocalBroker
from cykafka.schema_registry import AvroSerializer

schema = """{"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"},
  {"name": "city", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["order", "refund"]}},
  {"name": "source", "type": "string", "default": "parquet"}]}"""

# Three rows as pq.read_table("orders.parquet") would give them; the third row's kind is
# not a symbol of the enum, and the missing "source" column takes its default.
table = pa.table(
    {
        "id": [1, 2, 3],
        "city": ["Lyon", None, "Porto"],
        "tags": [["new"], [], ["vip", "eu"]],
        "kind": ["order", "refund", "chargeback"],
    }
)

registry = SchemaRegistryClient.new_client({"url": "mock://docs"})  # or "http://host:8081"
with LocalBroker() as broker:
    broker.create_topic("orders", partitions=1)
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        serializer = AvroSerializer(registry, schema)
        report = p.produce_batch("orders", table, value_serializer=serializer).result()
        print(report)
        for index, exc in report.errors:
            print(index, exc)

    # Read the two delivered messages back with confluent's reference deserializer.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "docs"})
    consumer.assign([TopicPartition("orders", 0, 0)])
    deserialize = AvroDeserializer(registry)
    for _ in range(report.delivered):
        msg = consumer.poll(10)
        ctx = SerializationContext("orders", MessageField.VALUE)
        print(msg.value()[:5].hex(" "), deserialize(msg.value(), ctx))
    consumer.close()
