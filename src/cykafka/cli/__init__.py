"""The ``cykafka`` command line (``main`` is the console script's entry point)."""

from __future__ import annotations

from .main import SUBCOMMANDS, build_parser, main, subcommand
from .options import UsageError, check_config, load_config_file, parse_assignments

__all__ = [
    "SUBCOMMANDS",
    "UsageError",
    "build_parser",
    "check_config",
    "load_config_file",
    "main",
    "parse_assignments",
    "subcommand",
]
