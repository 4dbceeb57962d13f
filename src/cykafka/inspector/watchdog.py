"""Telling the user when an idempotent producer is stuck re-bumping its epoch.

Measured against Tansu restarted without durable storage: the broker forgets the
producer id, answers every Produce with UNKNOWN_PRODUCER_ID, librdkafka bumps the epoch
locally and retries (debug=eos: "failed due to unknown producer id ... resetting PID and
retry", "bumped epoch to PID{Id:1,Epoch:N}"), the broker refuses that too, and so on
about ten times a second.  The producer does not recover by itself (the epoch was still
climbing after three further rounds of messages), every message fails with
_MSG_TIMED_OUT after message.timeout.ms, and nothing but debug logs says why.  The
watch reads the epoch from each statistics emit and reports the loop once per episode
through ``on_error`` and the ``cykafka`` logger, saying what to do: a new Producer gets a
new producer id from the broker and works (measured).
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from typing import Callable, Optional

__all__ = ["EPOCH_BUMPS", "EPOCH_WINDOW_S", "EpochWatch"]

_logger = logging.getLogger("cykafka")

_UNKNOWN_PRODUCER_ID = 59  # the Kafka protocol's error code

#: Epoch bumps within EPOCH_WINDOW_S that mean a loop, not a recovery (one error episode
#: normally bumps the epoch once).
EPOCH_BUMPS = 3
EPOCH_WINDOW_S = 10.0

_EOS = re.compile(
    r'"eos":\s*\{[^}]*?"idemp_state":\s*"(?P<state>\w+)"[^}]*?"producer_id":\s*(?P<pid>-?\d+)'
    r'[^}]*?"producer_epoch":\s*(?P<epoch>-?\d+)'
)


class EpochWatch:
    """Called with each statistics JSON text (cheap: only the ``eos`` object is read)."""

    def __init__(
        self,
        on_error: Optional[Callable[[Exception], object]],
        name: str = "",
        hint: Optional[Callable[[Optional[str]], object]] = None,
    ) -> None:
        self.on_error = on_error
        self.name = name
        #: Called with the cause while the loop lasts, None after: the producer adds it
        #: to the _MSG_TIMED_OUT delivery errors the loop causes.
        self.hint = hint
        self._bumps: deque[float] = deque()
        self._last: Optional[tuple[int, int]] = None
        self._reported = False

    def __call__(self, text: str) -> None:
        at = text.rfind('"eos"')
        if at < 0:
            return
        m = _EOS.match(text, at)
        if m is None:
            return
        now = time.monotonic()
        pid, epoch = int(m["pid"]), int(m["epoch"])
        if self._last is not None and pid == self._last[0] and epoch > self._last[1]:
            self._bumps.extend([now] * min(epoch - self._last[1], 100))
        self._last = (pid, epoch)
        while self._bumps and now - self._bumps[0] > EPOCH_WINDOW_S:
            self._bumps.popleft()
        if len(self._bumps) < EPOCH_BUMPS:
            if self._reported and self.hint is not None:
                self.hint(None)
            self._reported = False  # the episode is over; report the next one
            return
        if self._reported:
            return
        self._reported = True
        self._report(pid, epoch, len(self._bumps))

    def _report(self, pid: int, epoch: int, bumps: int) -> None:
        from .._native import KafkaError

        text = (
            f"idempotent producer {self.name} is stuck: producer id {pid} had its epoch "
            f"bumped {bumps} times in {EPOCH_WINDOW_S:g} s (now {epoch}). librdkafka bumps "
            "the epoch when the broker answers UNKNOWN_PRODUCER_ID (or an out-of-order "
            "sequence), and this broker refuses the bumped epoch too, so messages will fail "
            "with _MSG_TIMED_OUT after message.timeout.ms. The broker has lost this "
            "producer's state (e.g. restarted without durable storage). This producer does "
            "not recover by itself: flush or close it and create a new Producer, which "
            "gets a new producer id; resend what failed."
        )
        err = KafkaError(_UNKNOWN_PRODUCER_ID, text, retriable=False)
        _logger.error("%s", text)
        if self.hint is not None:
            self.hint(
                f"cause: the broker refuses producer id {pid} (UNKNOWN_PRODUCER_ID) and every "
                "epoch librdkafka bumps to; recreate the Producer (see on_error)"
            )
        if self.on_error is not None:
            try:
                self.on_error(err)
            except Exception:
                _logger.exception("cykafka: on_error raised")
