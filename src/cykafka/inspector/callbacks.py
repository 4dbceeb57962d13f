"""The statistics callback the producer hands the extension: the user's, at the user's
pace, and the epoch watch."""

from __future__ import annotations

import time
from typing import Callable, Optional

__all__ = ["ThrottledStatsCallback", "stats_setup"]


# --------------------------------------------------------------------------- stats_cb


class ThrottledStatsCallback:
    """The user's ``stats_cb``, called at the user's ``statistics.interval.ms`` although
    librdkafka emits at the (faster) interval the inspector asked for."""

    def __init__(self, fn: Callable[[str], object], user_ms: int, effective_ms: int) -> None:
        self.fn = fn
        # Half an emit interval of slack: emits come every effective_ms with jitter, so a
        # strict ">= user_ms" would skip to the next emit about half the time.
        self._min_gap = max(0.0, (user_ms - effective_ms / 2) / 1000.0)
        self._last = time.monotonic()  # first call ~user_ms after creation, as librdkafka

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last >= self._min_gap:
            self._last = now
            self.fn(text)


def stats_setup(
    user_ms: int,
    inspect_ms: int,
    stats_cb: Optional[Callable[[str], object]],
    watch: Optional[Callable[[str], object]] = None,
) -> tuple[int, Optional[Callable[[str], object]]]:
    """(statistics.interval.ms to give librdkafka, callback to give the extension).

    The faster of the two intervals wins; the user's callback keeps librdkafka's meaning
    (never called when the user's interval is 0) and the user's own pace.  ``watch``
    (e.g. :class:`~cykafka.inspector.watchdog.EpochWatch`) sees every emit."""
    intervals = [ms for ms in (user_ms, inspect_ms) if ms > 0]
    effective = min(intervals) if intervals else 0
    user: Optional[Callable[[str], object]] = None
    if stats_cb is not None and user_ms > 0:
        user = (
            stats_cb
            if effective == user_ms
            else ThrottledStatsCallback(stats_cb, user_ms, effective)
        )
    if watch is None or not effective:
        return effective, user
    if user is None:
        return effective, watch
    return effective, _Both(watch, user)


class _Both:
    """The watch, then the user's callback (whose exceptions the extension logs)."""

    def __init__(self, watch: Callable[[str], object], user: Callable[[str], object]) -> None:
        self.watch, self.user = watch, user

    def __call__(self, text: str) -> None:
        try:
            self.watch(text)
        finally:
            self.user(text)
