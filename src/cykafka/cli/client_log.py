"""librdkafka's log as a command presents it.

The producer hands librdkafka's log lines and error events to the ``cykafka`` logger
(``rdkafka#producer-1 [FAC] text``).  With no handler configured, Python prints every
warning raw on stderr: a first import into a freshly started Apache Kafka printed
``Failed to acquire idempotence PID from broker ...: Coordinator load in progress:
retrying`` for a state librdkafka leaves by itself (KIP-98: a transaction coordinator
answers COORDINATOR_LOAD_IN_PROGRESS while it loads its partition of
``__transaction_state``, and the client retries), and a broker restarting printed a
line per connection attempt.

A command's normal run instead keeps quiet about what librdkafka recovers from (the
import's summary says what was delivered; a cluster that stays away fails the cluster
check or the rows, each said in cykafka's words), and says anything else once, naming
what the client reported.  ``--verbose`` shows librdkafka's own lines as they come;
a program that configures logging itself gets them through the ``cykafka`` logger, as
always.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["RECOVERS", "ClientLog", "presented"]

#: States librdkafka retries by itself, by their text in its log and error events: a
#: coordinator loading or moving (KIP-98), a leader being elected, a broker going away
#: and coming back (librdkafka reconnects with backoff, reconnect.backoff.ms).
RECOVERS = re.compile(
    "|".join(
        (
            r"[Cc]oordinator load in progress",
            r"COORDINATOR_LOAD_IN_PROGRESS",
            r"[Cc]oordinator not available",
            r"COORDINATOR_NOT_AVAILABLE",
            r"[Nn]ot coordinator",
            r"NOT_COORDINATOR",
            r"[Ll]eader not available",
            r"LEADER_NOT_AVAILABLE",
            r"[Nn]ot leader",
            r"NOT_LEADER",
            r"Connection refused",
            r"Disconnected",
            r"[Cc]onnection reset",
            r"brokers are down",
            r"Broker transport failure",
            r"_TRANSPORT",
            r"_ALL_BROKERS_DOWN",
        )
    )
)

#: "rdkafka#producer-3 [GETPID] [thrd:main]: " or "rdkafka#producer-3: ": which client
#: and thread said it.
_CLIENT = re.compile(r"^rdkafka#\w+-\d+(?: \[\w+\])?(?: \[thrd:[^\]]*\])?:? ")
_NUMBERS = re.compile(r"\d+")


class ClientLog(logging.Handler):
    """The ``cykafka`` logger's records for ``command``: raw when ``verbose``; else what
    librdkafka recovers from counted in :attr:`recovered` and the rest said once per
    kind on ``stream``."""

    def __init__(self, command: str, verbose: bool, stream: TextIO) -> None:
        super().__init__(logging.DEBUG if verbose else logging.WARNING)
        self.command, self.verbose, self.stream = command, verbose, stream
        self.recovered = 0
        self._said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if self.verbose:
                self._write(text)
                return
            if RECOVERS.search(text):
                self.recovered += 1
                return
            said = _CLIENT.sub("", text)
            kind = _NUMBERS.sub("#", said)  # the same report about another broker or count
            if kind in self._said:
                return
            self._said.add(kind)
            self._write(
                f"cykafka {self.command}: the Kafka client reports: {said} "
                "(said once; --verbose shows librdkafka's every line)"
            )
        except Exception:
            self.handleError(record)

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


@contextlib.contextmanager
def presented(command: str, verbose: bool, stream: TextIO | None = None) -> Iterator[ClientLog]:
    """Within the block, the ``cykafka`` logger's records are presented by a
    :class:`ClientLog` (and Python's last-resort printing of each warning is off, since a
    handler now takes them); handlers a program configured, on the root logger or on
    ``cykafka``, still get them, as always."""
    logger = logging.getLogger("cykafka")
    handler = ClientLog(command, verbose, stream if stream is not None else sys.stderr)
    level = logger.level
    logger.addHandler(handler)
    if verbose:
        logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
