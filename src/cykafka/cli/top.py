"""``cykafka top``: run a script with a live view of every Producer it creates."""

from __future__ import annotations

import argparse
import sys

from .options import UsageError

__all__ = ["NAME", "setup"]

NAME = "top"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "top",
        help="run a Python script with a live view of every Producer it creates",
        description=(
            "Run SCRIPT (or -m MODULE) in this process, as 'python SCRIPT ARGS...' would, "
            "with the accumulator inspector attached to every cykafka Producer it creates: "
            "a live table of partitions, brokers and queue fill refreshing every --interval "
            "seconds on a terminal, or one plain line per producer every --log-interval "
            "seconds when stdout is not a terminal. Producers that do not choose their own "
            "inspect_interval_ms get --stats-interval-ms. Exits with the script's exit code."
        ),
    )
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module instead")
    p.add_argument("--interval", type=float, default=0.25, help="refresh period (s)")
    p.add_argument(
        "--log-interval",
        type=float,
        default=5.0,
        help="period of plain lines when stdout is not a terminal (s)",
    )
    p.add_argument(
        "--stats-interval-ms",
        type=int,
        default=250,
        help="statistics.interval.ms for the producers (ms)",
    )
    p.add_argument("script", nargs="?", metavar="SCRIPT")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(handler=_run_top)


def _run_top(args: argparse.Namespace) -> int:
    import runpy

    from ..inspector import watch_new_producers

    if (args.module is None) == (args.script is None):
        raise UsageError("give exactly one of SCRIPT or -m MODULE")
    if args.interval <= 0 or args.stats_interval_ms < 0:
        raise UsageError("--interval must be > 0 and --stats-interval-ms >= 0")
    target = args.module or args.script
    saved_argv = sys.argv
    sys.argv = [target, *args.args]
    code = 0
    try:
        with watch_new_producers(
            args.interval, args.stats_interval_ms, log_interval=args.log_interval
        ):
            try:
                if args.module:
                    runpy.run_module(args.module, run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if e.code is not None and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
            except FileNotFoundError as e:
                if args.script and e.filename == args.script:
                    raise UsageError(f"cannot open {args.script}: {e.strerror}") from None
                raise
    finally:
        sys.argv = saved_argv
    return code
