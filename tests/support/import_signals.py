"""A real `cykafka import` process interrupted once it is far enough: by a real signal,
or by its broker restarting without its log."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

from .cluster_faults import wait_until


def wait_for(proc: subprocess.Popen, text: str) -> None:
    """Read the process's stderr until a line holds ``text`` (it is that far)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"the import ended before printing {text!r}")


def stop_after(
    cmd: list[str],
    sig: int,
    text: str,
    delay: float = 0.0,
    pid_first: bool = False,
    ready: Callable[[], bool] | None = None,
) -> tuple[int, str, str]:
    """Run ``cmd``, send ``sig`` ``delay`` s after its stderr shows ``text`` (to the pid
    it prints first, with ``pid_first``: a script's background command), and return
    its exit status, stdout and the rest of stderr.  With ``ready``, the signal waits
    (after ``text``) until ``ready()`` holds: a condition, where a delay would be too
    short on a busy machine."""
    # ``sig`` reaches the command at its default however the suite was started (nohup's
    # ignored SIGHUP is not handed down: tests/conftest.py), as the import keeps an
    # ignored SIGHUP ignored (importer/signals.py) and would finish instead of stopping.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        pid = int(proc.stderr.readline()) if pid_first else proc.pid
        wait_for(proc, text)
        if ready is not None:
            assert wait_until(ready, 60, "the import to be ready", proc), "it ended first"
        time.sleep(delay)  # a point within the run, not a wait for something
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # the command ended first: the test proved nothing
            out, err = proc.communicate(timeout=60)
            raise AssertionError(f"it ended before the signal:\n{out}\n{err}") from None
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def lose_the_log_mid_import(broker: Any, topic: str, cmd: list[str]) -> tuple[int, str]:
    """Run the exactly-once import ``cmd`` into ``topic`` (one partition) of the
    embedded ``broker``; once 300 rows are committed, restart the broker without its
    data and make the topic again, as an operator would.  The import's exit status and
    output."""
    from .consume import committed_so_far

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        bs = broker.bootstrap_servers
        far = wait_until(lambda: committed_so_far(bs, topic) >= 300, 60, "300 rows", proc)
        assert far, "the import ended before 300 rows were committed"
        broker.restart()
        broker.create_topic(topic, partitions=1)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out
