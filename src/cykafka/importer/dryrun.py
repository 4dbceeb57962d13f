"""``--dry-run``: read and check the input, show the first records as they would be
sent, count rows and problems; send nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..inputs.model import Problem
from ..inputs.readers import READERS
from .summary import plural

if TYPE_CHECKING:
    from .job import ImportJob

__all__ = ["dry_run"]


def _show(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            return repr(v)
    return str(v)


def dry_run(job: ImportJob, out: TextIO, *, show: int = 5) -> int:
    """Print what ``job`` would send (its first ``show`` records, every row counted,
    its problems and what its producers guarantee); returns the exit status (1 if any
    row could not be read)."""
    problems: list[Problem] = []
    notes: list[Problem] = []

    def report(p: Problem) -> None:
        (notes if p.stage == "note" else problems).append(p)

    rows = 0
    shown = 0
    for source, f in job.plan:
        for chunk in READERS[f].read(source, job.fields, job.options, report):
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
    if job.partition is not None or job.static_headers:
        every = [f"partition={job.partition}"] if job.partition is not None else []
        every += [f"header {h}={_show(v)}" for h, v in job.static_headers]
        print(f"  every message: {', '.join(every)}", file=out)
    for p in problems[:10]:
        print(f"  problem  {p.describe()}", file=out)
    for p in notes[:10]:
        print(f"  note     {p.describe()}", file=out)
    print(f"  guarantees  {job.guarantees}", file=out)
    print("  nothing was sent (--dry-run)", file=out)
    return 1 if problems else 0
