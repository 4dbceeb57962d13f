"""``cykafka presets``: the config presets with their settings and guarantees."""

from __future__ import annotations

import argparse

from .options import UsageError

__all__ = ["NAME", "setup"]

NAME = "presets"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "presets",
        help="list config presets with their settings and guarantees",
        description="List cykafka's config presets (combine with '+', e.g. ordered+java_compatible).",
    )
    p.add_argument("name", nargs="?", help="show only this preset")
    p.set_defaults(handler=_run_presets)


def _run_presets(args: argparse.Namespace) -> int:
    import textwrap

    from .. import presets

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
