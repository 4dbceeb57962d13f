"""A real `cykafka import` process stopped by a real signal once it is far enough."""

from __future__ import annotations

import os
import subprocess
import time


def wait_for(proc: subprocess.Popen, text: str) -> None:
    """Read the process's stderr until a line holds ``text`` (it is that far)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"the import ended before printing {text!r}")


def stop_after(
    cmd: list[str], sig: int, text: str, delay: float = 0.0, pid_first: bool = False
) -> tuple[int, str, str]:
    """Run ``cmd``, send ``sig`` ``delay`` s after its stderr shows ``text`` (to the pid
    it prints first, with ``pid_first``: a script's background command), and return
    its exit status, stdout and the rest of stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        pid = int(proc.stderr.readline()) if pid_first else proc.pid
        wait_for(proc, text)
        time.sleep(delay)  # a point within the run, not a wait for something
        os.kill(pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err
