"""Ctrl-C during an import: stop at a point where every row's fate can be known.

A ``KeyboardInterrupt`` raised at an arbitrary bytecode (Python's default) can land
after ``produce_batch`` queued a batch and before its future was kept: those rows would
be in the topic with no report.  So the first Ctrl-C only asks the import to stop; the
import looks at :attr:`CtrlC.requested` between batches (and while it waits), then
drains and purges the producer.  A ``produce_batch`` blocked waiting for room in
librdkafka's queue (a broker that stopped answering) is not such a point, so
``purge_after`` seconds after Ctrl-C the producer is closed from another thread: the
blocked call then raises with its batch attached (cykafka's ``exc.batch``), the rows it
had not queued failed "not queued", and the queued ones purged.  A second Ctrl-C raises
at once, as usual; rows whose fate that leaves open are reported "unknown", never "not
sent".
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any, Callable, Optional, TextIO

__all__ = ["CtrlC"]


class CtrlC:
    """A context manager that installs the handler (main thread only: elsewhere
    signals are not delivered to Python and nothing changes)."""

    def __init__(
        self,
        log: Optional[TextIO] = None,
        purge: Optional[Callable[[], Any]] = None,
        purge_after: float = 2.0,
    ) -> None:
        self.requested = threading.Event()
        self.log = log
        self.purge, self.purge_after = purge, purge_after
        self._timer: Optional[threading.Timer] = None
        self._old: Any = None
        self._installed = False

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.requested.set()
        if self.purge is not None:
            self._timer = threading.Timer(self.purge_after, self._purge)
            self._timer.daemon = True
            self._timer.start()
        if self.log is not None:
            print(
                "\ncykafka import: Ctrl-C: stopping; the rows already handed over get their "
                "delivery reports (Ctrl-C again to stop at once)",
                file=self.log,
                flush=True,
            )

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._old)
            self._installed = False
        if self._timer is not None:
            self._timer.cancel()

    def _purge(self) -> None:
        assert self.purge is not None
        try:
            self.purge()
        except Exception as e:  # the import's own purge reports what is left
            if self.log is not None:
                print(f"cykafka import: purging after Ctrl-C failed: {e}", file=self.log)

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` here (a safe point) if Ctrl-C was pressed."""
        if self.requested.is_set():
            raise KeyboardInterrupt
