"""Structured Streaming in the tests: one foreachBatch query run to its end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Starts of a query whose foreachBatch worker did not connect back in time, tried again.
WORKER_STARTS = 3


def run_available_now(stream: Any, writer: Any, chk: Path) -> None:
    """Run the streaming DataFrame ``stream`` through ``foreachBatch(writer)`` with the
    checkpoint ``chk`` once (``availableNow``), and wait for it to end; AssertionError
    with the query's failure.

    Spark Connect starts foreachBatch's Python worker on the server and gives it a fixed
    10 s to connect back (``PythonWorkerFactory.createSimpleWorker``, a constant): on a
    starved machine the worker's start takes longer, and ``start()`` fails "Python worker
    failed to connect back".  No batch ran yet, so starting the query again is the same
    test; any other failure is not retried."""
    for attempt in range(1, WORKER_STARTS + 1):
        try:
            q = (
                stream.writeStream.foreachBatch(writer)
                .option("checkpointLocation", str(chk))
                .trigger(availableNow=True)
                .start()
            )
            break
        except Exception as exc:
            if "Python worker failed to connect back" not in str(exc) or attempt == WORKER_STARTS:
                raise
    q.awaitTermination(180)
    if q.exception() is not None:
        raise AssertionError(f"streaming query failed: {q.exception()}")
