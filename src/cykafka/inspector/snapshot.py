"""The snapshot types: where a producer's messages are at one moment, and how that
reads on a terminal or in a log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .figures import AccumulatorFigures, BrokerSnapshot, EosSnapshot, PartitionSnapshot
from .render import log_line, render

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["AccumulatorSnapshot", "BrokerSnapshot", "EosSnapshot", "PartitionSnapshot"]


class AccumulatorSnapshot(AccumulatorFigures):
    """Where the producer's messages are, at ``taken_at`` (wall clock, seconds)."""

    def table(self, max_rows: Optional[int] = None) -> Text:
        """A rich renderable: fill gauges, partition table (the ``max_rows`` busiest
        partitions if given), broker table, eos line; colour-coded."""
        return render(self, max_rows)

    def log_line(self) -> str:
        """One plain line (the live view's form when stdout is not a terminal)."""
        return log_line(self)
