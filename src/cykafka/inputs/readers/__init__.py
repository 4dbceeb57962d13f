"""The input formats: one module each, registered here (a new format is one module
with a ``READER`` and one line below)."""

from __future__ import annotations

from collections.abc import Mapping

from ..model import ImportInputError
from ..sources import Source
from . import csv, jsonl, lines, parquet
from .base import Reader, ReadOptions, check_columns

__all__ = ["FORMATS", "READERS", "ReadOptions", "Reader", "check_columns", "detect_format"]

#: --format name -> reader, in the order formats are listed to users.
READERS: Mapping[str, Reader] = {
    r.name: r for r in (csv.READER, jsonl.READER, parquet.READER, lines.READER)
}

#: Formats and the file extensions that select them.
FORMATS: Mapping[str, tuple[str, ...]] = {name: r.extensions for name, r in READERS.items()}


def detect_format(source: Source | str) -> str:
    """The format implied by the extension (after a compression extension);
    ImportInputError if there is none."""
    name = source.stem if isinstance(source, Source) else Source(source, source).stem
    lower = name.lower()
    for fmt, exts in FORMATS.items():
        if lower.endswith(exts):
            return fmt
    known = ", ".join(e for exts in FORMATS.values() for e in exts)
    shown = source.name if isinstance(source, Source) else source
    raise ImportInputError(
        f"{shown}: cannot tell the format from the extension (known: {known}); "
        f"pass --format {'|'.join(FORMATS)}"
    )
