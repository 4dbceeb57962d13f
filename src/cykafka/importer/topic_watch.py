"""The import's topic, watched while the import runs: deleted, or deleted and made
again (a broker with ``auto.create.topics.enable`` recreates it, empty, on the next
metadata request that names it - the producer's own).

librdkafka alone says neither: a deleted topic's messages wait in its queue as
"unknown partition" until ``message.timeout.ms`` (measured: 213 s, then 1,133,529
rows "not sent" as ``_UNKNOWN_PARTITION``), and a recreated one takes the producer's
next batches as if nothing happened, while the rows the old topic acknowledged are
gone with it.  The watch asks the cluster for the topic's id (DescribeTopics, which
never creates a topic) about once a second; a topic gone, or with another id, stops
the import at once with the cause named (:mod:`.run`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Callable, Optional

__all__ = ["TopicWatch", "WATCH_EVERY_S"]

#: How often the topic's id is asked for: a deleted topic stops the import within
#: about this (and a request's round trip).
WATCH_EVERY_S = 1.0


class TopicWatch:
    """A thread that calls ``on_lost(why, made_again)`` once when ``topic`` is deleted
    (``made_again`` False) or replaced by a new topic of the same name (True);
    :meth:`stop` ends it."""

    def __init__(
        self,
        client: Mapping[str, object],  # the producer's config: how to reach the brokers
        topic: str,
        on_lost: Callable[[str, bool], None],
        every: float = WATCH_EVERY_S,
    ) -> None:
        from confluent_kafka.admin import AdminClient

        from ..cluster.admin import connection_config, short_lived

        self.topic = topic
        self.on_lost = on_lost
        self.every = every
        # log_level 0: a cluster that does not answer once is asked again, not logged.
        self.admin = AdminClient(short_lived(connection_config(client), log_level=0))
        self._stop = threading.Event()
        self.first: Optional[tuple[str, int]] = self._look()  # (id, partitions) at the start
        self._thread = threading.Thread(target=self._run, name="cykafka-topic-watch", daemon=True)
        if self.first is not None:
            self._thread.start()

    def _look(self) -> Optional[tuple[str, int]]:
        """The topic's (id, partition count) now; None when the cluster has no such
        topic.  Raises what the cluster answered otherwise (an unreachable cluster is
        not a deleted topic)."""
        from confluent_kafka import KafkaError, KafkaException, TopicCollection

        fut = self.admin.describe_topics(TopicCollection([self.topic]), request_timeout=10)[
            self.topic
        ]
        try:
            d = fut.result()
        except KafkaException as e:
            if e.args and e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise
        return str(d.topic_id), len(d.partitions)

    def _run(self) -> None:
        assert self.first is not None
        first_id, partitions = self.first
        while not self._stop.wait(self.every):
            try:
                now = self._look()
            except Exception:  # the cluster did not answer this time: ask again
                continue
            if self._stop.is_set():  # the import ended while the cluster was asked
                return
            if now is None:
                self.on_lost(
                    f"topic {self.topic!r} was deleted during the import (it had "
                    f"{partitions} partitions); the rows it had acknowledged went with it",
                    False,
                )
                return
            if now[0] != first_id:
                self.on_lost(
                    f"topic {self.topic!r} was deleted during the import and made again, "
                    f"empty ({now[1]} partitions, a new topic id: a broker with "
                    f"auto.create.topics.enable recreates a topic a producer still asks "
                    f"for); the rows the deleted topic had acknowledged went with it",
                    True,
                )
                return

    def stop(self) -> None:
        """Ends the watch without waiting on a request in flight: a stalled broker holds
        one for up to its request timeout (10 s), and a stop (Ctrl-C) must not wait for
        it; the thread reports nothing once stopped."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(0.2)
