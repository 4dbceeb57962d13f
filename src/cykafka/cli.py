"""The ``cykafka`` command.

Subcommands live in ``SUBCOMMANDS`` (name -> setup function). A setup function adds its
parser to the subparsers and sets ``handler`` (``args -> exit code``); add one with the
``subcommand`` decorator. Imports of cykafka modules happen inside handlers so that
``cykafka --help`` stays fast and never loads the extension.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any, Callable, Optional

__all__ = ["SUBCOMMANDS", "load_config_file", "main", "parse_assignments", "subcommand"]

SetupFn = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Subcommand name -> function that registers it on the subparsers.
SUBCOMMANDS: dict[str, SetupFn] = {}


def subcommand(name: str) -> Callable[[SetupFn], SetupFn]:
    """Register a subcommand setup function under ``name``."""

    def register(fn: SetupFn) -> SetupFn:
        SUBCOMMANDS[name] = fn
        return fn

    return register


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit code 2."""


# --------------------------------------------------------------------------- helpers


def parse_assignments(lines: list[str], origin: str = "-X") -> dict[str, str]:
    """``key=value`` lines (librdkafka .properties style; ``#``/``!`` comments, blanks)."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            where = f"{origin}:{lineno}" if origin != "-X" else "-X"
            raise UsageError(f"{where}: expected key=value, got {line!r}")
        out[key.strip()] = value.strip()
    return out


def load_config_file(path: str) -> dict[str, Any]:
    """A config file: JSON object if it ends with .json, else key=value lines."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if path.endswith(".json"):
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: invalid JSON: {e}") from None
        if not isinstance(data, Mapping):
            raise UsageError(f"{path}: expected a JSON object of properties")
        return dict(data)
    return dict(parse_assignments(text.splitlines(), origin=path))


# --------------------------------------------------------------------------- presets


@subcommand("presets")
def _setup_presets(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "presets",
        help="list config presets with their settings and guarantees",
        description="List cykafka's config presets (combine with '+', e.g. ordered+java_compatible).",
    )
    p.add_argument("name", nargs="?", help="show only this preset")
    p.set_defaults(handler=_run_presets)


def _run_presets(args: argparse.Namespace) -> int:
    import textwrap

    from . import presets

    try:
        chosen = [args.name] if args.name else presets.names()
        described = [presets.describe(n) for n in chosen]
    except ValueError as e:
        raise UsageError(str(e)) from None
    for i, p in enumerate(described):
        if i:
            print()
        print(f"{p.name}: {p.summary}")
        for key, value in p.settings.items():
            print(f"    {key}={value}")
        for key in p.requires:
            print(f"    {key}=<you must supply this>")
        print(textwrap.fill(p.guarantees, 100, initial_indent="  ", subsequent_indent="  "))
    return 0


# --------------------------------------------------------------------------- explain


@subcommand("explain")
def _setup_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="explain the delivery guarantees of a producer config",
        description=(
            "Explain what a producer config guarantees on librdkafka (ordering, duplicates, "
            "loss, partitioning) and warn about risky settings. Java property names are "
            "translated first."
        ),
    )
    p.add_argument(
        "config_file",
        nargs="?",
        metavar="CONFIG_FILE",
        help="key=value .properties file (# comments), or JSON if it ends with .json",
    )
    p.add_argument(
        "-X",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a property (repeatable; wins over the file)",
    )
    p.add_argument(
        "--preset",
        action="append",
        default=[],
        metavar="P",
        help="apply preset(s) first (repeatable, or joined with '+')",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_explain)


def _run_explain(args: argparse.Namespace) -> int:
    from .explain import explain

    config: dict[str, Any] = load_config_file(args.config_file) if args.config_file else {}
    config.update(parse_assignments(args.overrides))
    try:
        report = explain(config, preset=args.preset or None)
    except (ValueError, TypeError) as e:
        from .config import redact

        raise UsageError(redact(str(e), config)) from None
    if args.json:
        import json

        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report)
    return 0


# --------------------------------------------------------------------------- top


@subcommand("top")
def _setup_top(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument("--log-interval", type=float, default=5.0,
                   help="period of plain lines when stdout is not a terminal (s)")
    p.add_argument("--stats-interval-ms", type=int, default=250,
                   help="statistics.interval.ms for the producers (ms)")
    p.add_argument("script", nargs="?", metavar="SCRIPT")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(handler=_run_top)


def _run_top(args: argparse.Namespace) -> int:
    import runpy

    from .inspector import watch_new_producers

    if (args.module is None) == (args.script is None):
        raise UsageError("give exactly one of SCRIPT or -m MODULE")
    if args.interval <= 0 or args.stats_interval_ms < 0:
        raise UsageError("--interval must be > 0 and --stats-interval-ms >= 0")
    target = args.module or args.script
    saved_argv = sys.argv
    sys.argv = [target, *args.args]
    code = 0
    try:
        with watch_new_producers(args.interval, args.stats_interval_ms,
                                 log_interval=args.log_interval):
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


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cykafka", description="cykafka: a fast Kafka producer for Python."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for setup in SUBCOMMANDS.values():
        setup(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of the ``cykafka`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except UsageError as e:
        print(f"cykafka {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
