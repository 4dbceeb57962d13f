"""A committed and an aborted transaction, and what a read_committed reader would see."""

from cykafka import Producer
from cykafka.broker import LocalBroker
from cykafka.testing import committed_view, read_log, read_raw_log

with LocalBroker() as broker:
    servers = broker.bootstrap_servers
    broker.create_topic("payments", partitions=1)
    config = {"bootstrap.servers": servers, "transactional.id": "docs-payments"}
    with Producer(config, preset="exactly_once") as p:
        p.init_transactions()
        with p.transaction():  # commits when the block ends
            p.produce("payments", b"kept-1")
            p.produce("payments", b"kept-2")
        try:
            with p.transaction():  # an exception aborts the transaction
                p.produce("payments", b"dropped").result(10)  # written to the log
                raise RuntimeError("something went wrong half-way")
        except RuntimeError:
            pass

    raw = read_raw_log(servers, "payments")
    print("stored:   ", [r.control or r.value.decode() for r in raw])
    consumer_view = read_log(servers, "payments", isolation_level="read_committed")
    print("consumer: ", [r.value.decode() for r in consumer_view])
    print("committed:", [r.value.decode() for r in committed_view(raw)])
