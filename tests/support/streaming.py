"""Structured Streaming in the tests: one foreachBatch query run to its end."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

#: Waits before each start again of a query whose foreachBatch worker did not connect
#: back in time: spread over a minute, as a load that starves a worker's start (other
#: tests' JVMs starting) lasts tens of seconds, and starts one after the other met the
#: same load.
WORKER_START_BACKOFF_S = (5.0, 15.0, 30.0)
#: The running Spark Connect server's log, where its Python workers' stderr goes (set
#: by the ``spark`` fixture of tests/spark/conftest.py while it runs).
connect_server_log: Path | None = None


def _server_tail(lines: int = 40) -> str:
    """The end of the Connect server's log without the JVM's stack frames."""
    if connect_server_log is None or not connect_server_log.exists():
        return "(no Spark Connect server log)"
    text = connect_server_log.read_text(errors="replace").splitlines()
    kept = [line for line in text if not line.lstrip().startswith(("at ", "..."))]
    return "\n".join(kept[-lines:])


def run_available_now(stream: Any, writer: Any, chk: Path) -> None:
    """Run the streaming DataFrame ``stream`` through ``foreachBatch(writer)`` with the
    checkpoint ``chk`` once (``availableNow``), and wait for it to end; AssertionError
    with the query's failure.

    Spark Connect starts foreachBatch's Python worker on the server and gives it a fixed
    10 s to connect back (``PythonWorkerFactory.createSimpleWorker``, a constant): on a
    starved machine the worker's start takes longer, and ``start()`` fails "Python worker
    failed to connect back".  No batch ran yet, so starting the query again is the same
    test; any other failure is not retried.  If every start fails, the error gives each
    try's time and load and the server log's end (the worker's own stderr)."""
    tries: list[str] = []
    for wait in (*WORKER_START_BACKOFF_S, None):
        began = time.monotonic()
        try:
            q = (
                stream.writeStream.foreachBatch(writer)
                .option("checkpointLocation", str(chk))
                .trigger(availableNow=True)
                .start()
            )
            break
        except Exception as exc:
            if "Python worker failed to connect back" not in str(exc):
                raise
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            tries.append(f"{time.monotonic() - began:.1f} s, load {load}")
            if wait is None:
                raise AssertionError(
                    f"foreachBatch's worker never connected back, {len(tries)} starts "
                    f"({'; '.join(tries)}); the server's log ends:\n{_server_tail()}"
                ) from exc
            time.sleep(wait)
    q.awaitTermination(180)
    if q.exception() is not None:
        raise AssertionError(f"streaming query failed: {q.exception()}")
