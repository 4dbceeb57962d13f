"""What every front door (the import, Spark, verify) shares about a cluster, below them:
the settings of the short-lived clients cykafka opens beside a producer and the topics
they make (:mod:`.admin`), whether the cluster answers at all (:mod:`.reach`: the one
"cannot reach the cluster" every front door reports), a partition log read over Kafka's wire protocol
(:mod:`.wire`) and decoded (:mod:`.records`), and a topic as a ``read_committed`` reader
on Kafka sees it, on any broker (:mod:`.committed`).  What they raise is cykafka's
:class:`~cykafka.KafkaError`, never confluent-kafka's (:mod:`.errors`).  Nothing here loads
the compiled extension, but to translate an error or to probe the cluster."""
