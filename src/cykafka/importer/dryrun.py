"""``--dry-run``: read and check the input, show the first records as they would be
sent, count rows and problems; send nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, TextIO

from .model import Fields, Problem
from .pipeline import DEFAULT_OPTIONS, NO_FIELDS, plan_files
from .readers import READERS, ReadOptions
from .summary import plural

__all__ = ["dry_run"]


def _show(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return repr(v)
    return str(v)


def dry_run(
    paths: Sequence[str],
    out: TextIO,
    *,
    fmt: Optional[str] = None,
    fields: Fields = NO_FIELDS,
    options: ReadOptions = DEFAULT_OPTIONS,
    guarantees: str = "",
    show: int = 5,
    partition: Optional[int] = None,
    static_headers: Sequence[tuple[str, bytes]] = (),
) -> int:
    """Print what an import would send; returns the exit status (1 if any row could
    not be read)."""
    problems: list[Problem] = []
    notes: list[Problem] = []

    def report(p: Problem) -> None:
        (notes if p.stage == "note" else problems).append(p)

    rows = 0
    shown = 0
    for source, f in plan_files(paths, fmt, fields, options):
        for chunk in READERS[f].read(source, fields, options, report):
            keys, values = chunk.items(chunk.keys), chunk.items(chunk.values)
            for i in range(len(chunk)):
                if shown >= show:
                    break
                shown += 1
                pos = chunk.position(i)
                where = f"{pos.file}:{pos.line}" if pos.line else f"{pos.file} row {pos.row}"
                extra = ""
                if chunk.partitions is not None:
                    extra += f" partition={chunk.partitions[i]}"
                if chunk.timestamps is not None:
                    extra += f" timestamp={chunk.timestamps[i]}"
                if chunk.headers is not None:
                    extra += " headers=" + ",".join(f"{h}={_show(v)}" for h, v in chunk.headers[i])
                print(f"  {where}: key={_show(keys[i])}{extra} value={_show(values[i])}", file=out)
            rows += len(chunk)
    line = f"Dry run: {rows:,} {plural(rows, 'row')} would be sent"
    if problems:
        line += f", {len(problems):,} {plural(len(problems), 'row')} cannot be"
    print(line, file=out)
    if partition is not None or static_headers:
        every = [f"partition={partition}"] if partition is not None else []
        every += [f"header {h}={_show(v)}" for h, v in static_headers]
        print(f"  every message: {', '.join(every)}", file=out)
    for p in problems[:10]:
        print(f"  problem  {p.describe()}", file=out)
    for p in notes[:10]:
        print(f"  note     {p.describe()}", file=out)
    if guarantees:
        print(f"  guarantees  {guarantees}", file=out)
    print("  nothing was sent (--dry-run)", file=out)
    return 1 if problems else 0
