"""Batches sized for the topics a producer writes to.

Kafka refuses a record batch above the topic's ``max.message.bytes`` whole
(MESSAGE_TOO_LARGE) and librdkafka 2.16 fails every message in it, where the Java
producer splits the batch and sends the halves.  librdkafka fixes ``batch.size`` when its
handle is made.  So a producer reads a topic's limit before it sends anything there:
``Producer(topics=...)`` when it is made, and otherwise the first call writing to the
topic (the extension calls :meth:`TopicSizing.meet` then, before the topic's handle
exists).  Above the limit, the handle is made again with ``batch.size`` lowered while
nothing was handed to librdkafka; after that, the call is refused with
:class:`TopicLimitError`, queueing nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Callable, Optional, Protocol

from ._native import KafkaError

if TYPE_CHECKING:
    from .config import ResolvedConfig


class SizedProducer(Protocol):
    """What sizing needs of a :class:`cykafka.Producer`."""

    _resolved: ResolvedConfig
    _config: dict[str, str]

    def _set_topic_limits(self, limits: Mapping[str, int]) -> None: ...
    def _remake_sized(self, resolved: ResolvedConfig) -> bool: ...
    def _meet_topic(self, topic: str) -> None: ...


__all__ = ["TopicLimitError", "TopicSizing", "meeter"]

#: librdkafka's RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE (Kafka's MESSAGE_TOO_LARGE).
_MSG_SIZE_TOO_LARGE = 10

#: The longest the first call writing to a topic waits for its limits.
MEET_TIMEOUT_MAX = 60.0


class TopicLimitError(KafkaError):
    """A call writing to a topic first met whose ``max.message.bytes`` (``limit``) is
    below the producer's ``batch.size``, when the producer can no longer be made again
    with smaller batches (it has sent already, or is transactional): nothing of the call
    was queued.  Flush this producer and write that topic through one made with
    ``topics=`` naming it (or ``batch.size`` at most ``limit``): every message handed
    over before then keeps its order."""

    def __init__(self, topic: str, limit: int, message: str) -> None:
        super().__init__(_MSG_SIZE_TOO_LARGE, message)
        self.topic = topic
        self.limit = limit


class TopicSizing:
    """What one producer knows of its topics' limits: ``met`` (topic -> its
    max.message.bytes, None when the cluster did not say), and the topics it refused."""

    def __init__(self, named: Iterable[str], limits: Mapping[str, int]) -> None:
        self.met: dict[str, Optional[int]] = dict.fromkeys(named, None)
        self.met.update(limits)
        self._refused: dict[str, tuple[int, int]] = {}  # topic -> (its limit, batch.size)
        self._lock = threading.Lock()

    def meet(self, producer: SizedProducer, topic: str) -> None:
        """The first call writing to ``topic``: read its max.message.bytes (one
        DescribeConfigs request, as ``topics=`` does) before anything is sent to it,
        and size ``producer``'s batches for it, or raise :class:`TopicLimitError`.  The
        request waits at most ``max.block.ms`` and :data:`MEET_TIMEOUT_MAX` (the Java
        producer's first ``send()`` to a topic waits max.block.ms for its metadata), and
        no longer once every broker has refused the connection; when the cluster does
        not say, the producer goes on with its ``batch.size``."""
        with self._lock:  # one look per topic, even from many threads
            if topic in self._refused:
                raise self._refusal(producer, topic, *self._refused[topic])
            if topic in self.met:
                return
            from .cluster.admin import topic_limits

            resolved = producer._resolved
            found = topic_limits(
                producer._config,
                [topic],
                min(resolved.max_block_ms / 1000.0, MEET_TIMEOUT_MAX),
                until_unreachable=True,
            ).get(topic)
            if found is not None:
                known = {**self.met, topic: found}
                producer._set_topic_limits({t: n for t, n in known.items() if n is not None})
                batch = int(resolved.effective("batch.size").value)
                if batch > found and not producer._remake_sized(resolved.sized_for({topic: found})):
                    self._refused[topic] = (found, batch)
                    raise self._refusal(producer, topic, found, batch)
            self.met[topic] = found

    def _refusal(
        self, producer: SizedProducer, topic: str, limit: int, batch: int
    ) -> TopicLimitError:
        why = (
            "is transactional (a transaction cannot span two librdkafka handles)"
            if producer._resolved.transactional
            else "has already handed messages to librdkafka"
        )
        names = sorted({*self.met, topic})
        return TopicLimitError(
            topic,
            limit,
            f"topic {topic!r} accepts record batches of at most {limit} bytes (its "
            f"max.message.bytes), below this producer's batch.size of {batch}: the broker "
            f"would refuse its batches whole, and librdkafka fails every message in a "
            f"refused batch.  librdkafka fixes batch.size when a producer is made, and this "
            f"one {why}, so it cannot be made again now; nothing was queued.  Name the "
            f"topics when making the producer, Producer(config, topics={names!r}), so its "
            f"batches fit the smallest limit, or set batch.size to at most {limit}",
        )


def meeter(ref: weakref.ReferenceType[SizedProducer]) -> Callable[[str], None]:
    """``Producer._meet_topic`` through a weak reference, for the extension to hold."""

    def meet(topic: str) -> None:
        producer = ref()
        if producer is not None:
            producer._meet_topic(topic)

    return meet
