# Before a long load: is the cluster there?  require() waits at most its timeout for a
# broker to answer, and says what it saw; a wrong address fails in one line, at once,
# instead of after message.timeout.ms (5 minutes) of messages that wait and then fail.
import socket

import cykafka
from cykafka.broker import LocalBroker

with LocalBroker() as broker:
    with cykafka.Producer({"bootstrap.servers": broker.bootstrap_servers}) as p:
        seen = p.require(timeout=10)
        print(f"brokers {list(seen.brokers.values())}, controller {seen.controller}")

with socket.socket() as s:  # a port of ours that nothing listens on
    s.bind(("127.0.0.1", 0))
    wrong = f"127.0.0.1:{s.getsockname()[1]}"
    with cykafka.Producer({"bootstrap.servers": wrong}) as p:
        try:
            p.require(timeout=2)
        except cykafka.ClusterUnreachable as e:
            print(f"{type(e).__name__}: {e}")
