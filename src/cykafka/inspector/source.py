"""What the inspector reads from a producer: a small statistics-source interface.

The inspector depends on this, not on the Producer class: anything that offers the
extension's counters and its latest statistics can be inspected, and the producer does
not need to know the inspector's internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Protocol

if TYPE_CHECKING:
    from .snapshot import AccumulatorSnapshot

__all__ = ["Inspectable", "StatsSource"]


class StatsSource(Protocol):
    """The nine reads the inspector makes (``cykafka._native.NativeProducer`` has them)."""

    @property
    def name(self) -> Optional[str]: ...

    def _counters(self) -> Mapping[str, Any]:
        """Exact producer-wide counters: produced, delivered, failed, pending,
        blocked_seconds."""
        ...

    def _partition_counters(self) -> Mapping[tuple[str, int], tuple[int, int, int]]:
        """Exact per-partition (delivered, failed, last acked offset)."""
        ...

    def _take_record_size_max(self) -> int:
        """The largest key + value (bytes) produced since the previous call, -1: none."""
        ...

    def _last_stats(
        self,
    ) -> tuple[Optional[str], Optional[float], int, Optional[Mapping[tuple[str, int], int]]]:
        """(latest statistics JSON, monotonic time received, emit count, direct counts).
        The direct counts, per (topic, partition), are the messages handed over with
        their partition given when the emit was served; the emit's ``msgs`` leaves
        them out.  None: there were none."""
        ...

    def _take_stats(
        self,
    ) -> Sequence[tuple[float, str, Optional[Mapping[tuple[str, int], int]]]]:
        """Every statistics emit (monotonic time received, JSON, direct counts) since the
        previous call, oldest first (the last minute of them at most)."""
        ...

    def _last_outcome_time(self) -> float:
        """Monotonic time the latest delivery outcome was served (0.0: none yet)."""
        ...

    def _on_event_thread(self) -> bool:
        """Whether the caller is the thread that serves the statistics (a callback)."""
        ...

    def _effective_config(self, key: str) -> Optional[str]:
        """The value librdkafka runs with for ``key`` (after its own adjustments)."""
        ...


class Inspectable(Protocol):
    """What the live view shows: anything with an accumulator snapshot."""

    def accumulator(self) -> AccumulatorSnapshot: ...
