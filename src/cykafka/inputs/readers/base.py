"""The interface every input format implements, and the options readers share.

A reader turns one :class:`~cykafka.inputs.sources.Source` into :class:`Chunk` s
(columns for ``produce_batch``, each row carrying its :class:`SourcePosition`), and
reports rows it cannot read as problems instead of stopping.  A new format is one
module defining a :class:`Reader` plus one line in ``readers/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Protocol

from ..model import Chunk, Fields, ImportInputError, Report, SourcePosition
from ..sources import ByteStream, Source

if TYPE_CHECKING:
    from ...schema_registry.formats import ColumnEncoders

__all__ = ["ReadOptions", "Reader", "check_columns", "skip_to"]


@dataclass(frozen=True)
class ReadOptions:
    """How to read the input (the CLI's reading flags)."""

    #: Bytes per read of text formats.  2 MB rather than more: every block is fresh
    #: memory (the read and its split), and at 8 MB page faults were half the reading
    #: CPU of a lines import (42,000 per 100 MB against 10,000-17,000 at 1-2 MB).
    block_bytes: int = 2 << 20
    #: Rows per batch of row-group formats (Parquet).
    batch_rows: int = 65536
    #: A record longer than this is skipped and reported, never held in memory
    #: (the producer's ``message.max.bytes``: it could not be sent anyway).
    max_record_bytes: int = 1_000_000
    # CSV
    delimiter: Optional[str] = None  # None: "," ("\t" for .tsv)
    quote_char: Optional[str] = '"'  # None or "": no quoting
    #: quote_char was not given: detect it (' or ") with the delimiter (csv_sniff.py).
    sniff_quote: bool = False
    encoding: str = "utf-8"
    header: bool = True
    column_names: Optional[tuple[str, ...]] = None
    null_value: Optional[str] = None  # this exact field text is null (default: none)
    csv_types: str = "infer"  # "infer": numbers and true/false as JSON; "string": all text
    # lines
    key_delimiter: Optional[bytes] = None  # -K: the line is KEY<delim>VALUE
    # Schema Registry formats (--value-format/--key-format): a
    # cykafka.schema_registry.ColumnEncoders, or None for JSON/raw fields
    encoders: Optional[ColumnEncoders] = None
    # NaN and infinities in Arrow input: "refuse" (dead letters), "null" or "string"
    nonfinite: str = "refuse"
    #: An input that holds no rows (0 bytes, a CSV header alone, a Parquet file of 0
    #: rows, only blank JSON lines) is read as zero rows; else it is refused, naming it.
    allow_empty: bool = False


class Reader(Protocol):
    """One input format."""

    #: The --format name.
    name: str
    #: File extensions that select it (compression extensions are stripped first).
    extensions: tuple[str, ...]
    #: Whether records have named fields (--key-field and friends).
    has_fields: bool

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        """The field names, read without consuming the input (only regular files), for
        checks before anything is produced; None when they cannot be known early."""
        ...

    def uses_arrow(self, options: ReadOptions) -> bool:
        """Whether reading with ``options`` loads pyarrow (and NumPy, which it loads):
        a tenth of a second, which ``cykafka import`` then spends while it waits on the
        network."""
        ...

    def read(
        self,
        source: Source,
        fields: Fields,
        options: ReadOptions,
        report: Report,
        start: Optional[SourcePosition] = None,
    ) -> Iterator[Chunk]:
        """The rows of ``source`` in order; unreadable rows go to ``report``.  Raises
        :class:`ImportInputError` when the input as a whole is unusable.  ``start``: a
        position this reader gave (a chunk's ``end``): read from that row on."""
        ...


def check_columns(
    name: str, names: Sequence[str], fields: Fields, what: str = "is not a column; columns are"
) -> None:
    """Every field the user named is a column of ``name`` (``what``: how the error
    says where it looked)."""
    for flag, field in fields.named():
        if field not in names:
            raise ImportInputError(f"{name}: {flag} {field!r} {what} {list(names)}")


def skip_to(f: ByteStream, offset: int) -> None:
    """Move ``f`` (at its start) to byte ``offset`` of the stream: a seek when it can,
    else reading and dropping the bytes before it (compressed input, pipes)."""
    seek: Optional[Callable[[int], object]] = getattr(f, "seek", None)
    try:
        if seek is not None:
            seek(offset)
            return
    except (OSError, ValueError):
        pass
    left = offset
    while left > 0:
        got = f.read(min(left, 8 << 20))
        if not got:
            raise ImportInputError(f"cannot start at byte {offset:,}: the input is shorter")
        left -= len(got)
