"""The ``cykafka`` command: one module per subcommand, registered in ``SUBCOMMANDS``.

A command module has ``NAME`` and ``setup(subparsers)``, which adds its parser and sets
``handler`` (``args -> exit code``).  Imports of cykafka modules happen inside handlers
so that ``cykafka --help`` stays fast and never loads the extension.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Optional

from ..cluster.reach import ClusterUnreachable
from . import broker, explain, import_cmd, presets, registry, top, verify
from .options import UsageError

__all__ = ["SUBCOMMANDS", "build_parser", "main", "subcommand"]

SetupFn = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Subcommand name -> function that registers it on the subparsers.
SUBCOMMANDS: dict[str, SetupFn] = {
    m.NAME: m.setup for m in (import_cmd, verify, broker, registry, top, explain, presets)
}


def subcommand(name: str) -> Callable[[SetupFn], SetupFn]:
    """Register a subcommand setup function under ``name`` (for code outside cli/)."""

    def register(fn: SetupFn) -> SetupFn:
        SUBCOMMANDS[name] = fn
        return fn

    return register


#: Commands that run no user code and no linear algebra (see :func:`main`).
NO_BLAS = ("import", "verify")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cykafka")
    except PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``, looked up only when asked: importlib.metadata's scan of the
    installed distributions costs every other command about 30 ms of start-up."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: object):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"cykafka {_version()}")  # to stdout, as argparse's own version action
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cykafka", description="cykafka: a fast Kafka producer for Python."
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for setup in SUBCOMMANDS.values():
        setup(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of the ``cykafka`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # What was run, for advice such as "run the same command again".
    args.argv = list(sys.argv[1:] if argv is None else argv)
    # ... and the parser that read it, for advice that turns it into another command
    # (the verify of an import's inputs: cli/import_run.py).
    args.parser = parser
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command in NO_BLAS:
        # pyarrow loads NumPy, whose OpenBLAS starts a thread per core that spins for a
        # while: on a 2-core machine about 60 ms of CPU taken from the import and the
        # broker.  These commands never multiply matrices, and run no user code (unlike
        # `cykafka top SCRIPT`); a value the user set is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        return int(handler(args))
    except (UsageError, ClusterUnreachable) as e:
        # Both are said in one line, with no traceback: bad input, or a cluster that
        # does not answer (every command says that one the same way, cykafka.cluster.reach).
        print(f"cykafka {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
