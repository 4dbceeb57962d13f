"""Stopping an import: SIGINT (Ctrl-C), SIGTERM and SIGHUP, one way for every path.

Schedulers and scripts stop programs with SIGTERM (systemd, Kubernetes, Airflow,
``timeout``), terminals with SIGINT or, when they close, SIGHUP.  Each stops the import
the same way: reading stops, what was handed over is settled within a bounded time, the
summary is printed, the dead letters written, and the process exits with 128+signal.

A ``KeyboardInterrupt`` raised at an arbitrary bytecode (Python's default) can land
after ``produce_batch`` queued a batch and before its future was kept: those rows would
be in the topic with no report.  So the first signal only asks the import to stop; the
import looks at :attr:`StopSignals.requested` between batches (and while it waits), then
drains and purges the producer (an exactly-once import commits its open transaction
instead).  A ``produce_batch`` blocked waiting for room in librdkafka's queue (a broker
that stopped answering) is not such a point, so ``purge_after`` seconds after the signal
the producer is closed from another thread: the blocked call then raises with its batch
attached (cykafka's ``exc.batch``), the rows it had not queued failed "not queued", and
the queued ones purged.  A second signal raises at once; rows whose fate that leaves
open are reported "unknown", never "not sent".

A shell starts a script's background command (``cykafka import ... &``) with SIGINT
ignored, and Python then leaves it ignored: the import would run on after ``kill -INT``.
It takes SIGINT deliberately, ignored or not, so that every way of starting it stops the
same way.  SIGHUP is the exception: ignored on purpose (``nohup``), it stays ignored.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Callable, Optional, TextIO, Union

__all__ = ["STOP_SIGNALS", "StartSignals", "StopSignals", "StopRequested", "signal_name"]

#: The signals that stop an import.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: What ``signal.signal`` returns and takes back: the handler a signal had before.
_Handler = Union[Callable[[int, Optional[FrameType]], object], int, signal.Handlers, None]


class StopRequested(KeyboardInterrupt):
    """Raised at a safe point after the first stop signal (a second one raises a
    plain ``KeyboardInterrupt`` wherever the import is)."""


def signal_name(signum: int) -> str:
    """``SIGTERM``, and ``Ctrl-C`` for SIGINT (what a person pressed)."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


class StopSignals:
    """The stop signals while an import reads: the first sets :attr:`requested` (and
    purges after ``purge_after`` s), a second raises at once.  A context manager that
    installs the handlers (main thread only: elsewhere signals are not delivered to
    Python and nothing changes)."""

    def __init__(
        self,
        log: Optional[TextIO] = None,
        purge: Optional[Callable[[], object]] = None,
        purge_after: float = 2.0,
        what: str = "the rows already handed over get their delivery reports",
    ) -> None:
        self.requested = threading.Event()
        #: The first signal received (None: none yet).
        self.signum: Optional[int] = None
        self.log = log
        self.purge, self.purge_after = purge, purge_after
        self.what = what
        self._timer: Optional[threading.Timer] = None
        self._old: dict[int, _Handler] = {}

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.signum = signum
        self.requested.set()
        if self.purge is not None:
            self._timer = threading.Timer(self.purge_after, self._purge)
            self._timer.daemon = True
            self._timer.start()
        if self.log is not None:
            print(
                f"\ncykafka import: {signal_name(signum)}: stopping; {self.what} (a second "
                "signal stops at once)",
                file=self.log,
                flush=True,
            )

    def __enter__(self) -> StopSignals:
        _ENGAGED.set()
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                if sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
                    continue  # nohup: the user asked to outlive the terminal
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
        if self._timer is not None:
            self._timer.cancel()

    def _purge(self) -> None:
        assert self.purge is not None
        try:
            self.purge()
        except Exception as e:  # the import's own purge reports what is left
            if self.log is not None:
                print(f"cykafka import: purging after the stop signal failed: {e}", file=self.log)

    def check(self) -> None:
        """Raise :class:`StopRequested` here (a safe point) if a stop signal came."""
        if self.requested.is_set():
            raise StopRequested


#: Set once an import's :class:`StopSignals` took over the signals (reading has begun).
_ENGAGED = threading.Event()


class StoppedBeforeReading(Exception):
    """A stop signal came while the import was starting (checking the cluster, creating
    the topic), before any row was read: nothing was sent."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StartSignals:
    """The stop signals while an import starts: before :class:`StopSignals` takes over, a
    signal raises :class:`StoppedBeforeReading` (the caller says nothing was sent and
    exits 128+signal).  Once reading has begun and :class:`StopSignals` has finished, a signal
    (during the summary) takes its default course.  Main thread only,
    like StopSignals."""

    def __init__(self) -> None:
        self._old: dict[int, _Handler] = {}

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        if not _ENGAGED.is_set():
            raise StoppedBeforeReading(signum)
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    def __enter__(self) -> StartSignals:
        _ENGAGED.clear()
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                if sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
                    continue
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
