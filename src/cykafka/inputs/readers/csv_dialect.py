"""A CSV input's dialect, settled once before anything is sent: the delimiter and quote
given, or sniffed from the start of the input (:mod:`.csv_sniff`), and that start
checked as the import will read it.  One home for the dialect's rules (the default
delimiter, what "no quote" is)."""

from __future__ import annotations

from typing import Optional

from ..model import ImportInputError
from ..sources import ByteStream, Source
from .base import ReadOptions
from .csv_sniff import (
    SNIFF_BYTES,
    check_sample,
    first_record,
    header_looks_like_data,
    sniff,
)
from .encoding import check_encoding, is_utf8, utf8_stream

__all__ = ["default_delimiter", "dialect_of", "quote_of", "sample_of", "settle"]


def quote_of(options: ReadOptions) -> Optional[str]:
    """The quote character, None for no quoting ('' given)."""
    return options.quote_char or None


def default_delimiter(source: Source) -> str:
    return "\t" if source.stem.lower().endswith(".tsv") else ","


def settle(
    source: Source, options: ReadOptions, sample: bytes, at_eof: bool
) -> tuple[ReadOptions, Optional[str]]:
    """``options`` with the dialect of the input's first ``sample`` bytes (UTF-8, no
    BOM) settled: the delimiter (and quote) detected when not given; and the sample
    checked (encoding, consistent records, a header that is not data).  Also the note
    saying what was detected, when it is not the default."""
    import dataclasses

    if is_utf8(options.encoding):
        check_encoding(source.name, sample, at_eof)
    text = sample.decode("utf-8", "replace")
    default = default_delimiter(source)
    dia = sniff(
        text,
        at_eof,
        default,
        options.delimiter,
        quote_of(options),
        quote_given=not options.sniff_quote,
    )
    note = None
    detected = []
    if options.delimiter is None and dia.delimiter != default:
        detected.append(f"delimiter {dia.delimiter!r}")
    if options.sniff_quote and dia.quote != '"':
        detected.append(f"quote {dia.quote!r}")
    if detected:
        agree = dia.counts.count(dia.columns)
        note = (
            f"detected {' and '.join(detected)} ({dia.columns} fields in {agree:,} of the "
            f"first {len(dia.counts):,} records); pass --delimiter/--quote-char to say otherwise"
        )
    options = dataclasses.replace(
        options, delimiter=dia.delimiter, quote_char=dia.quote or "", sniff_quote=False
    )
    check_sample(
        source.name,
        dia,
        options.header,
        "pass the right --delimiter/--quote-char (or --encoding), or fix the file",
    )
    if options.header and not options.column_names and dia.counts:
        first = first_record(text, dia.delimiter, dia.quote)
        if header_looks_like_data(first):
            raise ImportInputError(
                f"{source.name}: the first row {first[:5]} looks like data, not a header (all "
                "numbers): pass --no-header (and --column-names a,b,...), or --column-names "
                "to name the columns"
            )
    return options, note


def sample_of(f: ByteStream) -> tuple[bytes, bool]:
    """Up to SNIFF_BYTES from ``f`` and whether that is all of it."""
    parts: list[bytes] = []
    n = 0
    while n < SNIFF_BYTES:
        got = f.read(SNIFF_BYTES - n)
        if not got:
            return b"".join(parts), True
        parts.append(got)
        n += len(got)
    return b"".join(parts), False


#: Dialects settled, by file identity and options (the check before a broker starts,
#: the one in import_files and the read itself sniff once).
_DIALECTS: dict[
    tuple[Optional[str], int, int, int, ReadOptions], tuple[ReadOptions, Optional[str]]
] = {}


def dialect_of(source: Source, options: ReadOptions) -> tuple[ReadOptions, Optional[str]]:
    """``options`` with the dialect settled from the start of ``source`` (a regular
    file: read on its own, once per file and options), and the note saying what
    was detected."""
    import dataclasses
    import os

    st = os.stat(source.path or "")
    # (encoders, e.g. Schema Registry serializers, do not change the dialect)
    key = (source.path, st.st_ino, st.st_size, st.st_mtime_ns,
           dataclasses.replace(options, encoders=None))  # fmt: skip
    if key not in _DIALECTS:
        with source.open() as f:
            stream, _ = utf8_stream(f, source.name, options.encoding)
            sample, at_eof = sample_of(stream)
        _DIALECTS[key] = settle(source, dataclasses.replace(options, encoders=None), sample, at_eof)
    found, note = _DIALECTS[key]
    return dataclasses.replace(found, encoders=options.encoders), note
