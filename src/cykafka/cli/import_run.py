"""``cykafka import`` once its arguments are checked: the import's runner
(:func:`cykafka.importer.import_files`) runs the job; this prints what it reports and
the summary."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Optional

from .options import UsageError

if TYPE_CHECKING:
    from ..importer import ImportJob

__all__ = ["run_import"]


def _load_arrow() -> None:
    """pyarrow and NumPy take about 0.1 s to load, which this thread spends while the
    cluster check waits on the network.  A failure here is left to the reader's own
    import to report."""
    try:
        import cykafka._arrow  # noqa: F401
    except Exception:
        pass


def _uses_arrow(job: ImportJob) -> bool:
    """Whether some input's reader loads pyarrow (all but plain lines do)."""
    from ..inputs.readers import READERS

    return any(READERS[f].uses_arrow(job.options) for _, f in job.plan)


def run_import(
    job: ImportJob,
    args: argparse.Namespace,
    *,
    sample_rows: Optional[int] = None,
    sample_s: Optional[float] = None,
) -> int:
    """Run ``job`` through the import's runner, printing what it reports and the
    summary; ``args``: how to run it (embedded broker, progress, timings); returns the
    exit status.  ``sample_rows``: the job imports that many generated sample orders,
    which took ``sample_s`` seconds to write (a phase of its own in ``--timings``)."""
    if _uses_arrow(job):
        threading.Thread(target=_load_arrow, name="cykafka-load-arrow").start()
    from ..importer import ImportInputError, ImportResult, import_files
    from ..importer.topic_checks import TopicCheckError

    phases: dict[str, float] = {}
    startup = _process_age()  # (the checks and the job's decisions included)
    if startup is not None:
        phases["startup"] = startup - (sample_s or 0.0)
    if sample_s is not None:
        phases["sample"] = sample_s

    def show(result: ImportResult, broker_lines: list[str]) -> None:
        if sample_rows is not None:
            result.files = [f"sample of {sample_rows:,} orders"]
        result.command = ["cykafka", *getattr(args, "argv", [])] or None
        result.phases = {**phases, **result.phases}
        for line in [*result.summary_lines(timings=args.timings), *broker_lines]:
            print(line, flush=True)

    try:
        result = import_files(
            job,
            progress=False if args.no_progress else None,
            inspect=args.inspect,
            replace_stuck=True,
            keep_broker=args.keep_broker,
            notify=lambda line: print(line, file=sys.stderr),
            on_result=show,
        )
    except TopicCheckError as e:
        if e.usage:
            raise UsageError(str(e)) from None
        print(f"cykafka import: error: {e}", file=sys.stderr)
        return 1
    except ImportInputError as e:
        raise UsageError(str(e)) from None
    return result.exit_status


def _process_age() -> Optional[float]:
    """Seconds since this process started (the interpreter's start-up and imports,
    when called first thing), from Linux's /proc; None elsewhere.  /proc gives the
    start in clock ticks since boot (proc(5), field 22 of /proc/self/stat), the
    same clock as CLOCK_BOOTTIME, so the resolution is one tick (10 ms)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        start_ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return age if 0.0 <= age < 3600.0 else None
