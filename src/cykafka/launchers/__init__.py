"""The processes cykafka starts for users and tests, one concern a module.

:mod:`.process` is what every launcher shares (free ports, readiness polling, a child
that dies with this process, its log and its tail, stopping at exit), :mod:`.errors`
the one error hierarchy (:class:`~.errors.LauncherError`), :mod:`.topics` the topic
admin both brokers answer, over :mod:`cykafka.cluster.admin`, and :mod:`.jvm` Java and
jars fetched once with Maven.  On top: :mod:`.tansu` (:class:`~.tansu.LocalBroker`, the
embedded default) and :mod:`.kafka` (:class:`~.kafka.KafkaCluster`, Apache Kafka).

Nothing here imports the producer, the compiled extension or a front door: the CLI,
the front doors and :mod:`cykafka.testing` import the launchers, never the other way.
"""
