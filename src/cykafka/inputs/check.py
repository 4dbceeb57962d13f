"""The input check before anything is read for sending: what ``cykafka import`` and
``cykafka verify`` both run on their FILE arguments."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Optional

from .model import Fields, ImportInputError, Problem
from .readers import FORMATS, READERS, ReadOptions, check_columns, detect_format
from .sources import Source, expand

__all__ = ["DEFAULT_OPTIONS", "NO_FIELDS", "plan_files"]

NO_FIELDS = Fields()
DEFAULT_OPTIONS = ReadOptions()


def plan_files(
    paths: Sequence[str],
    fmt: Optional[str] = None,
    fields: Fields = NO_FIELDS,
    options: ReadOptions = DEFAULT_OPTIONS,
) -> list[tuple[Source, str]]:
    """Check the input before anything is produced: each input exists and is readable,
    has a known format, and (when it can be read twice) has the named fields.  Returns
    ``[(source, format), ...]``; raises :class:`ImportInputError` naming the culprit.
    Pipes, FIFOs and standard input are not touched: their header is checked as the
    import reads it."""
    if fmt is not None and fmt not in FORMATS:
        raise ImportInputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    sources = [s.checked() for s in expand(list(paths))]
    checked: list[tuple[Source, str]] = []
    for s in sources:
        # Standard input has no extension: lines, as kcat and kafka-console-producer read it.
        checked.append((s, fmt or ("lines" if s.path is None else detect_format(s))))
    for s, f in checked:
        if fields.any and not READERS[f].has_fields:
            raise ImportInputError(
                f"{s.name}: the {f} format has no fields; --key-field, --value-field, "
                f"--partition-field, --timestamp-field and --header-fields need csv, "
                f"jsonl or parquet"
            )
    if fields.headers and len(set(fields.headers)) != len(fields.headers):
        raise ImportInputError(f"--header-fields lists a field twice: {list(fields.headers)}")
    for s, f in checked:
        why = None if options.allow_empty or not s.is_regular else _no_rows(s, f, options)
        if why is not None:
            raise ImportInputError(
                f"{s.name}: the input holds no rows ({why}); if an empty input is expected, "
                "pass --allow-empty (it is then read as zero rows)"
            )
    for s, f in checked:
        reader = READERS[f]
        names = reader.columns(s, options)
        if names is not None:
            # A reader may say how a missing field is put (records need not share fields).
            how = getattr(reader, "missing_field", "is not a column; columns are")
            check_columns(s.name, names, fields, how)
    return checked


#: Why a file of each format that is not 0 bytes can still hold no rows.
_EMPTY = {
    "csv": "a header and no rows",
    "jsonl": "blank lines only",
    "parquet": "0 rows",
}


def _no_rows(source: Source, fmt: str, options: ReadOptions) -> Optional[str]:
    """Why the regular file ``source`` holds no rows, or None when it holds one (good or
    malformed: a malformed row is a row, counted and reported by the import).  One rule
    for every format, so an empty export is never taken for a delivered one.  Reads at
    most the first block (or row group) for each format's own idea of a row."""
    if source.size == 0:
        return "0 bytes" + (" once decompressed" if source.compression else "")
    problems = [0]

    def report(p: Problem) -> None:
        if p.stage != "note":
            problems[0] += 1

    # What a row is, not what it becomes: no serializer is asked (no registry call).
    plain = dataclasses.replace(options, encoders=None)
    for chunk in READERS[fmt].read(source, NO_FIELDS, plain, report):
        if len(chunk) or problems[0]:
            return None
    return None if problems[0] else _EMPTY.get(fmt, "no rows")
