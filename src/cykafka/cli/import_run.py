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

__all__ = ["run_import", "verify_command"]


#: Import options whose records verify cannot compare yet (cli/verify.py refuses them).
_VERIFY_CANNOT = frozenset(
    {"value_format", "key_format", "schema_registry", "value_schema", "key_schema"}
)


def verify_command(argv: list[str], parser: Optional[argparse.ArgumentParser]) -> Optional[str]:
    """The ``cykafka verify`` of the import ``argv`` (``import FILE... -t T ...``), which
    ``parser`` (cykafka's, with both commands) read: its inputs and every option verify
    takes too (-t, -b, the input and client options), the import's own left out; None
    when there is no file to verify (``--sample``, stdin), no parser, or an option's
    values cannot be told apart from the files."""
    import shlex

    if parser is None:
        return None
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    imp, ver = sub.choices["import"], sub.choices["verify"]
    out, files, i, rest = ["cykafka", "verify"], 0, 0, argv[1:]
    while i < len(rest):
        tok = rest[i]
        if tok == "--":
            files += len(rest) - i - 1
            out += rest[i:]
            break
        if not tok.startswith("-") or tok == "-":
            if tok == "-":
                return None  # stdin is gone once read
            files += 1
            out.append(tok)
            i += 1
            continue
        name, eq, _ = tok.partition("=")
        attached = not tok.startswith("--") and len(tok) > 2  # -Xkey=value, -p3
        if attached:
            name = tok[:2]
        action = imp._option_string_actions.get(name)
        if action is None:
            return None
        n = 0 if (eq or attached or action.nargs == 0) else action.nargs
        if n is None:
            n = 1
        if not isinstance(n, int):
            return None
        if action.dest in _VERIFY_CANNOT:
            return None
        if name in ver._option_string_actions and action.dest != "skip_rows":
            # (--skip-rows: verify compares the whole input, which the import and the
            # runs that finish it hold together)
            out += rest[i : i + 1 + n]
        i += 1 + n
    return shlex.join(out) if files else None


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
        result.verify_command = verify_command(
            getattr(args, "argv", []), getattr(args, "parser", None)
        )
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
        raise UsageError(_with_commands(e, args)) from None
    return result.exit_status


def _with_commands(error: Exception, args: argparse.Namespace) -> str:
    """``error``'s text, and when it advises commands (a progress topic whose log the
    broker lost: read the topic, then rerun with --restart), those commands as they run."""
    from ..importer.summary import rerun_with_restart
    from ..importer.txn_sink import ProgressLost

    text, argv = str(error), getattr(args, "argv", [])
    if not isinstance(error, ProgressLost) or not argv:
        return text
    verify = verify_command(argv, getattr(args, "parser", None))
    read = f"read it with `{verify}`, and " if verify else ""
    return f"{text}: {read}rerun with `{rerun_with_restart(['cykafka', *argv])}`"


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
