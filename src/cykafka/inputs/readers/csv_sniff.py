"""What a CSV file's dialect is, from its first block, before anything is sent.

Like DuckDB's sniffer and Python's ``csv.Sniffer``: each candidate delimiter (and
quote, when none was given) parses the sample with Python's csv module (quoted line
ends included); the dialect whose records agree on one field count, with more than one
field, wins.  Then the sample is checked as the import will read it: a file whose
records do not parse consistently (most of them disagree with the header's field
count) or a header that looks like data (all numbers) is refused, naming the file and the flag
that fixes it, instead of being imported as rows that are not the file's records.
"""

from __future__ import annotations

import collections
import csv as _pycsv
import io
from dataclasses import dataclass
from typing import Optional

from ..model import ImportInputError

__all__ = [
    "SNIFF_BYTES",
    "Dialect",
    "check_sample",
    "first_record",
    "header_looks_like_data",
    "sniff",
]

#: Bytes of the input sniffed: thousands of records, a few milliseconds per candidate.
SNIFF_BYTES = 256 << 10
_DELIMITERS = (",", ";", "\t", "|")
_QUOTES: tuple[Optional[str], ...] = ('"', "'")
#: Records the sample needs before field counts are judged.
_ENOUGH = 10


@dataclass(frozen=True)
class Dialect:
    delimiter: str
    quote: Optional[str]
    counts: tuple[int, ...]  # fields per record of the sample (the cut last one left out)

    @property
    def columns(self) -> int:
        return collections.Counter(self.counts).most_common(1)[0][0] if self.counts else 0

    @property
    def consistency(self) -> float:
        if not self.counts:
            return 0.0
        return self.counts.count(self.columns) / len(self.counts)


def _counts(text: str, delimiter: str, quote: Optional[str], at_eof: bool) -> tuple[int, ...]:
    reader = _pycsv.reader(
        io.StringIO(text, newline=""),
        delimiter=delimiter,
        quotechar=quote or '"',
        quoting=_pycsv.QUOTE_MINIMAL if quote else _pycsv.QUOTE_NONE,
    )
    out = []
    try:
        for rec in reader:
            if rec and any(rec):
                out.append(len(rec))
    except _pycsv.Error:
        pass  # a field the sample cut (or an oddity): judged on the records before it
    if not at_eof and out:
        out.pop()  # the sample may end inside the last record
    return tuple(out)


def sniff(
    text: str,
    at_eof: bool,
    default_delimiter: str,
    delimiter: Optional[str] = None,
    quote: Optional[str] = None,
    quote_given: bool = True,
) -> Dialect:
    """The dialect of ``text`` (the start of the input): ``delimiter`` and, when
    ``quote_given``, ``quote`` as given, the rest detected."""
    # Only candidates the sample holds (a delimiter or quote it lacks cannot win).
    delims = (delimiter,) if delimiter else tuple(d for d in _DELIMITERS if d in text)
    delims = delims or (default_delimiter,)
    quotes = (quote,) if quote_given else tuple(q for q in _QUOTES if q == '"' or (q and q in text))
    best: Optional[tuple[tuple[object, ...], Dialect]] = None
    for i, d in enumerate(delims):
        for j, q in enumerate(quotes):
            dia = Dialect(d, q, _counts(text, d, q, at_eof))
            # Agreeing records first, then more fields; ties go to the usual dialect.
            key = (
                dia.columns > 1,
                round(dia.consistency, 3),
                dia.columns,
                d == default_delimiter,
                -i,
                -j,
            )
            if best is None or key > best[0]:
                best = (key, dia)
    assert best is not None
    dia = best[1]
    if delimiter is None and dia.columns <= 1:  # one column whatever the delimiter
        dia = Dialect(
            default_delimiter, dia.quote, _counts(text, default_delimiter, dia.quote, at_eof)
        )
    return dia


def _is_number(s: str) -> bool:
    try:
        float(s.replace("_", "x"))
    except ValueError:
        return False
    return True


def check_sample(name: str, dia: Dialect, header: bool, flags: str) -> None:
    """Refuse a sample that does not parse consistently with ``dia``, or whose header
    looks like data.  ``flags``: what the user can pass to say otherwise."""
    counts = dia.counts
    if header and counts:
        first = counts[0]
        rest = counts[1:]
        if len(rest) >= _ENOUGH and rest.count(first) * 2 < len(rest):
            seen = ", ".join(
                f"{n} fields: {c:,}" for n, c in collections.Counter(rest).most_common(4)
            )
            raise ImportInputError(
                f"{name}: the records do not parse consistently as CSV with delimiter "
                f"{dia.delimiter!r} and quote {dia.quote!r}: the header has {first} "
                f"field{'s' if first != 1 else ''} but "
                f"only {rest.count(first):,} of the next {len(rest):,} records do ({seen}); "
                f"{flags}"
            )
    elif len(counts) >= _ENOUGH and dia.consistency < 0.5:
        raise ImportInputError(
            f"{name}: the records do not parse consistently as CSV with delimiter "
            f"{dia.delimiter!r} and quote {dia.quote!r} (field counts "
            f"{sorted(set(counts))[:6]}); {flags}"
        )


def first_record(text: str, delimiter: str, quote: Optional[str]) -> list[str]:
    """The first non-blank record of ``text`` (any line end), [] if it cannot be read."""
    reader = _pycsv.reader(
        io.StringIO(text, newline=""),
        delimiter=delimiter,
        quotechar=quote or '"',
        quoting=_pycsv.QUOTE_MINIMAL if quote else _pycsv.QUOTE_NONE,
    )
    try:
        for rec in reader:
            if rec and any(rec):
                return rec
    except _pycsv.Error:
        pass
    return []


def header_looks_like_data(names: list[str]) -> bool:
    """Every name is a number: the first row is data, not a header."""
    return bool(names) and all(n.strip() and _is_number(n.strip()) for n in names)
