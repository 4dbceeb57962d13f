"""What every launcher shares about the processes it starts: a free port, waiting until
something is ready, a child that dies with this process and writes into a log file, the
tail of that log, and stopping at interpreter exit whatever is still running.

Only the standard library is imported.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self, TypeVar

from .errors import LauncherError

__all__ = [
    "OwnedProcess",
    "dies_with_this_process",
    "free_port",
    "log_tail",
    "poll_until",
    "port_is_free",
    "reap",
    "start_process",
    "stop_at_exit",
    "stop_process",
    "tcp_open",
    "unregister",
]

T = TypeVar("T")

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------------- ports


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (for a process about to bind it)."""
    # Bind-0 trick: the kernel hands out an unused port; there is a small race until the
    # process binds it, which a launcher covers by retrying with a new port.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now (``SO_REUSEADDR``, as servers bind:
    leftovers in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def tcp_open(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------- readiness


def poll_until(
    cond: Callable[[], bool],
    timeout: float,
    what: str,
    error: type[Exception] = LauncherError,
    interval: float = 0.1,
) -> None:
    """Call ``cond`` every ``interval`` s until it is true; ``error`` after ``timeout``
    s, naming ``what`` and the last exception ``cond`` raised (it may raise while a
    process settles: that counts as not yet)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception as exc:
            last = exc
        time.sleep(interval)
    raise error(
        f"timed out after {timeout:.1f}s waiting for {what}"
        + (f" (last error: {last})" if last else "")
    )


# ---------------------------------------------------------------------- the child


def dies_with_this_process(cmd: list[str]) -> list[str]:
    """``cmd`` run so that the kernel kills it if this process dies (a SIGKILL too): no
    orphan keeps its ports.  Linux's parent-death signal fires when the *creating
    thread* exits, so it is asked for only from the main thread (whose exit is the
    process exit)."""
    setpriv = shutil.which("setpriv")
    if (
        sys.platform.startswith("linux")
        and setpriv
        and threading.current_thread() is threading.main_thread()
    ):
        return [setpriv, "--pdeathsig", "KILL", "--", *cmd]
    return cmd


def start_process(
    cmd: list[str], log: IO[bytes], env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` with no stdin, its stdout and stderr appended to ``log``, dying with
    this process (:func:`dies_with_this_process`).  ``env``: its whole environment
    (default: this process's)."""
    return subprocess.Popen(
        dies_with_this_process(cmd),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        close_fds=True,
    )


def reap(proc: subprocess.Popen[bytes], timeout: float | None) -> None:
    """Wait for ``proc`` to exit; SIGKILL it after ``timeout`` s (None: wait for ever)."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


def stop_process(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM (a clean shutdown), then SIGKILL after ``timeout`` s."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
    reap(proc, timeout)


def log_tail(paths: Iterable[Path], lines: int = 20) -> str:
    """The last ``lines`` lines of the log files ``paths`` (in that order), ANSI colours
    stripped; a file that cannot be read counts as empty."""
    out: list[str] = []
    for path in paths:
        with contextlib.suppress(OSError):
            out += _ANSI.sub("", path.read_text(errors="replace")).splitlines()[-lines:]
    return "\n".join(out[-lines:])


# ---------------------------------------------------------------------- at exit

# What is running, each with the process that started it and how to stop it at exit.
# Weak, so a forgotten launcher can still be collected (its own finalizer stops it).
_LIVE: weakref.WeakKeyDictionary[Any, tuple[int, Callable[[Any], None]]] = (
    weakref.WeakKeyDictionary()
)


def stop_at_exit(launcher: T, stop: Callable[[T], None]) -> None:
    """Have ``stop(launcher)`` called when the interpreter exits, unless
    :func:`unregister` comes first.  ``stop`` must not hold ``launcher`` itself (the
    entry is weak)."""
    _LIVE[launcher] = (os.getpid(), stop)


def unregister(launcher: object) -> None:
    """``launcher`` stopped: nothing to do for it at exit."""
    _LIVE.pop(launcher, None)


@atexit.register
def _stop_all() -> None:
    for launcher, (pid, stop) in list(_LIVE.items()):
        # A forked child exiting must not stop what its parent started.
        if pid != os.getpid():
            continue
        with contextlib.suppress(Exception):
            stop(launcher)


class OwnedProcess:
    """What every launcher that owns one child process answers about it, and the
    context manager around its :meth:`start` and :meth:`stop`."""

    _proc: subprocess.Popen[bytes] | None = None
    _log_path: Path | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        """PID of the running process, or ``None`` when it is not running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def log_path(self) -> Path | None:
        """The process's log of the current (or last) run."""
        return self._log_path

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
