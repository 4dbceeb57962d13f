"""The input check before anything is read for sending: what ``cykafka import`` and
``cykafka verify`` both run on their FILE arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from .model import Fields, ImportInputError
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
        reader = READERS[f]
        names = reader.columns(s, options)
        if names is not None:
            # A reader may say how a missing field is put (records need not share fields).
            how = getattr(reader, "missing_field", "is not a column; columns are")
            check_columns(s.name, names, fields, how)
    return checked
