"""Which producers exist, for ``cykafka top``: every Inspectable announces itself here
when it is created, and the statistics interval new producers get when they choose none.

Kept apart from the live view, so that the producer (which announces itself) depends
on this small registry only, never on rendering.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Callable, Optional

from .source import Inspectable
from .stats import DEFAULT_INTERVAL_MS

__all__ = ["collect_new_producers", "default_interval_ms", "producer_created"]

_logger = logging.getLogger("cykafka.inspector")

_created_hooks: list[Callable[[Inspectable], None]] = []
_default_interval_ms: Optional[int] = None


def default_interval_ms() -> int:
    """The statistics interval new producers get when they do not choose one."""
    return DEFAULT_INTERVAL_MS if _default_interval_ms is None else _default_interval_ms


def producer_created(producer: Inspectable) -> None:
    """Called by Inspectable.__init__: lets ``cykafka top`` see every new producer."""
    for hook in list(_created_hooks):
        try:
            hook(producer)
        except Exception:
            _logger.exception("cykafka: a producer-created hook failed")


@contextlib.contextmanager
def collect_new_producers(stats_interval_ms: int) -> Iterator[Callable[[], list[Inspectable]]]:
    """While the block runs, every Inspectable created is collected (the yielded
    function lists them, oldest first) and gets ``stats_interval_ms`` unless it chooses
    its own interval."""
    global _default_interval_ms
    # Strong references: a script's producer is usually closed and dropped before
    # the view's last frame, which must still show its final figures.
    order: list[Inspectable] = []

    def hook(p: Inspectable) -> None:
        if not any(q is p for q in order):
            order.append(p)

    saved = _default_interval_ms
    _default_interval_ms = stats_interval_ms
    _created_hooks.append(hook)
    try:
        yield lambda: list(order)
    finally:
        _created_hooks.remove(hook)
        _default_interval_ms = saved
