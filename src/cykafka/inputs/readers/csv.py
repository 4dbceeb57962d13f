"""``csv``: blocks of whole records (a line end inside quotes does not end one; a lone
``\\r`` does, as for pyarrow's parser and Python's csv module), each
parsed by ``pyarrow.csv`` with every column as bytes, so that one bad row (wrong
column count, bytes that are not text in the encoding) is reported with its line and
the others are imported.  A plain block sent as whole-row JSON skips pyarrow for one C
pass (``csv_fast``) that writes the same bytes.  Each record's byte offset and physical
line come from the block split itself, which also makes pipes, FIFOs and compressed
input work."""

from __future__ import annotations

import codecs
import csv as _pycsv
from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from ..encode import batch_chunk, csv_record_json
from ..model import Chunk, Fields, ImportInputError, Problem, Report, SourcePosition
from ..sources import ByteStream, Source
from .base import ReadOptions, check_columns, skip_to
from .blocks import Block, blocks, first_records, line_ends, record_starts
from .csv_decode import decode
from .csv_dialect import default_delimiter, dialect_of, quote_of, sample_of, settle
from .csv_fast import fast_columns
from .encoding import prefixed, utf8_stream

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    import pyarrow.csv as pcsv

__all__ = ["READER"]

#: A lone CR ends a record (and a line) for pyarrow's parser, so it does for the block
#: split and the row positions too (blocks.py).
_CR = True
#: Delimiters a one-column header is checked for (a wrong --delimiter).
_OTHER_DELIMITERS = (";", "\t", "|", ",")


def _delimiter(source: Source, options: ReadOptions) -> str:
    return options.delimiter or default_delimiter(source)


def _quote(options: ReadOptions) -> Optional[str]:
    return quote_of(options)


#: What the import inferred about empty fields, said once per file.
EMPTY_IS_NULL = (
    'empty fields are sent as null, as pandas and DuckDB read them (a quoted "" is the '
    "empty string; --null-value names another spelling of null, --csv-types string "
    "keeps them as text)"
)


def _notes_once(report: Report) -> Report:
    """``report``, each note passed on once (blocks repeat what they find)."""
    seen: set[str] = set()

    def to(p: Problem) -> None:
        if p.stage == "note":
            if p.error in seen:
                return
            seen.add(p.error)
        report(p)

    return to


def unnamed(i: int) -> str:
    """The name of column ``i`` (0-based) when the header gives none, as pandas names it."""
    return f"Unnamed: {i}"


def _parse_record(text: str, delimiter: str, quote: Optional[str]) -> list[str]:
    rows = list(
        _pycsv.reader(
            [text.rstrip("\r\n")],
            delimiter=delimiter,
            quotechar=quote or '"',
            quoting=_pycsv.QUOTE_MINIMAL if quote else _pycsv.QUOTE_NONE,
        )
    )
    return rows[0] if rows else []


class CsvReader:
    name = "csv"
    extensions: tuple[str, ...] = (".csv", ".tsv")
    has_fields = True

    def uses_arrow(self, options: ReadOptions) -> bool:
        return True

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        if not source.is_regular:
            return list(options.column_names) if options.column_names else None
        options, _ = dialect_of(source, options)
        if options.column_names:
            return list(options.column_names)
        if not options.header:
            return None
        with source.open() as f:
            stream, bom = utf8_stream(f, source.name, options.encoding)
            q = self._q(options)
            for b in blocks(stream, options.block_bytes, options.max_record_bytes, q, 0, _CR):
                if isinstance(b, Block):
                    names, _ = self._header(source, b, options)
                    if names is not None:
                        return names
                    continue
                raise ImportInputError(
                    f"{source.name}: the header is longer than message.max.bytes"
                )
        if options.allow_empty:
            return None  # no header, no rows: no field will be asked for
        raise ImportInputError(_no_header(source))

    @staticmethod
    def _q(options: ReadOptions) -> Optional[int]:
        q = _quote(options)
        return ord(q) if q else None

    def _header(
        self, source: Source, b: Block, options: ReadOptions
    ) -> tuple[Optional[list[str]], int]:
        """The header's names and the offset in ``b.data`` after it (None: no
        non-blank record in the block)."""
        for s, e in first_records(b.data, b.end, self._q(options), _CR):
            raw = b.data[s:e]
            if raw.strip(b"\r\n"):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ImportInputError(
                        f"{source.name}: the header is not valid {options.encoding}"
                    ) from None
                names = _parse_record(text, _delimiter(source, options), _quote(options))
                names = [n or unnamed(i) for i, n in enumerate(names)]
                if len(set(names)) != len(names):
                    dup = sorted({n for n in names if names.count(n) > 1})
                    raise ImportInputError(
                        f"{source.name}: duplicate column names {dup} in the header"
                    )
                return names, int(e)
        return None, b.end

    def read(
        self,
        source: Source,
        fields: Fields,
        options: ReadOptions,
        report: Report,
        start: Optional[SourcePosition] = None,
    ) -> Iterator[Chunk]:
        report = _notes_once(report)
        note = None
        if source.is_regular:
            options, note = dialect_of(source, options)
        delimiter = _delimiter(source, options)
        quote = self._q(options)
        names: Optional[list[str]] = list(options.column_names) if options.column_names else None
        need_header = options.header
        row = 1
        line = 1
        at: Optional[int] = None
        if start is not None:
            if codecs.lookup(options.encoding).name not in ("utf-8", "utf-8-sig"):
                raise ImportInputError(
                    f"{source.name}: only UTF-8 input can be read from a position"
                )
            if need_header:
                names = self.columns(source, options)  # the header, read on its own
                if names is None:
                    raise ImportInputError(
                        f"{source.name}: its header cannot be read twice (not a regular file)"
                    )
                check_columns(source.name, names, fields)
            need_header = False
            row, line, at = start.row, start.line or 1, start.offset or 0
        with source.open() as f:
            stream: ByteStream
            if at is not None:
                skip_to(f, at)
                stream, bom = f, at
            else:
                stream, bom = utf8_stream(f, source.name, options.encoding)
            if not source.is_regular and at is None:  # read once: sample the stream's start
                sample, at_eof = sample_of(stream)
                options, note = settle(source, options, sample, at_eof)
                delimiter, quote = _delimiter(source, options), self._q(options)
                stream = prefixed(sample, stream)
            if note is not None:
                report(Problem(source.name, "note", note, line=1))
            for b in blocks(stream, options.block_bytes, options.max_record_bytes, quote, bom, _CR):
                if not isinstance(b, Block):
                    report(
                        Problem(
                            source.name,
                            "parse",
                            f"record of {b.size:,} bytes is longer than message.max.bytes "
                            f"({options.max_record_bytes:,}); skipped",
                            line=line,
                            row=row,
                            offset=b.start,
                            raw=b.head,
                        )
                    )
                    line += b.newlines + 1
                    row += 1
                    continue
                skip = 0
                if need_header:
                    header, skip = self._header(source, b, options)
                    if header is None:
                        line += line_ends(b.data, 0, b.end, _CR)
                        continue
                    need_header = False
                    line += line_ends(b.data, 0, skip, _CR)
                    names = names or header
                    self._warn_one_column(source, names, delimiter, report)
                    self._note_unnamed(source, names, report)
                    check_columns(source.name, names, fields)
                chunk, row, line, names = self._block(
                    source, b, skip, names, fields, options, report, row, line
                )
                if b.torn:
                    report(
                        Problem(
                            source.name,
                            "note",
                            "the last record has no final newline (was the file still being "
                            "written?); it was read as it is",
                            line=line - 1,
                        )
                    )
                if chunk is not None:
                    yield chunk
        if need_header and not options.allow_empty:
            raise ImportInputError(_no_header(source))

    def _note_unnamed(self, source: Source, names: list[str], report: Report) -> None:
        named = [(i, n) for i, n in enumerate(names) if n == unnamed(i)]
        if named:
            which = ", ".join(f"column {i + 1} as {n!r}" for i, n in named)
            report(
                Problem(
                    source.name,
                    "note",
                    f"the header names no column {', '.join(str(i + 1) for i, _ in named)} "
                    f"(pandas' to_csv() writes its index so): sent as {which}, the name pandas "
                    "gives it; --column-names names every column",
                    line=1,
                )
            )

    def _warn_one_column(
        self, source: Source, names: list[str], delimiter: str, report: Report
    ) -> None:
        if len(names) != 1:
            return
        for d in _OTHER_DELIMITERS:
            if d != delimiter and d in names[0]:
                report(
                    Problem(
                        source.name,
                        "note",
                        f"the header has one column, {names[0]!r}, which contains {d!r}: "
                        f"if that is the delimiter, pass --delimiter {d!r}",
                        line=1,
                    )
                )
                return

    def _block(
        self,
        source: Source,
        b: Block,
        skip: int,
        names: Optional[list[str]],
        fields: Fields,
        options: ReadOptions,
        report: Report,
        row: int,
        line: int,
    ) -> tuple[Optional[Chunk], int, int, Optional[list[str]]]:
        """The records of block ``b`` after offset ``skip`` as a chunk (None: no row
        to send), and the row, line and column names the next block starts with."""
        first_line = line - line_ends(b.data, 0, skip, _CR)
        quote = self._q(options)
        positions = _Positions(b, skip, quote, first_line)
        if names is not None:
            fast = fast_columns(
                b.data, skip, b.end, names, _delimiter(source, options), quote, fields, options
            )
            if fast is not None:
                chunk, n = _fast_chunk(source, b, fast, row, line, positions)
                return chunk, row + n, line + n, names
        line_after = first_line + line_ends(b.data, 0, b.end, _CR)
        if names is None:  # --no-header without --column-names: c1, c2, ...
            names = _numbered_names(source, b, options, quote, positions)
            if names is None:
                return None, row, line_after, None
            check_columns(source.name, names, fields)
        null = _null_values(options)
        table, bad_rows = _parse(source, b, skip, names, options, null, first_line, line_after)
        if null == [""] and any(c.null_count for c in table.columns):
            report(Problem(source.name, "note", EMPTY_IS_NULL))
        if bad_rows:
            _report_refused(source, bad_rows, positions, row, report)
        n = table.num_rows + len(bad_rows)  # non-blank records in the block
        if n == 0:
            return None, row, line_after, names
        chunk = _parsed_chunk(
            source,
            b,
            table,
            [i for i, _, _ in bad_rows],
            n,
            fields,
            options,
            report,
            row,
            line_after,
            positions,
        )
        return chunk, row + n, line_after, names


class _Positions:
    """(byte offset, physical line) of every non-blank record of a block after its
    header: one NumPy pass, made only when a row is reported or a position asked for."""

    def __init__(self, b: Block, skip: int, quote: Optional[int], first_line: int) -> None:
        self._b, self._skip, self._quote, self._first_line = b, skip, quote, first_line
        self._found: Optional[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = None

    def __call__(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        if self._found is None:
            import numpy as np

            b = self._b
            starts, nls = record_starts(b.data, b.end, self._quote, _CR)
            keep = starts >= self._skip
            starts, nls = starts[keep], nls[keep]
            ends = np.append(starts[1:], b.end)
            length = ends - starts
            a = np.frombuffer(b.data, np.uint8, b.end)
            first = a[np.minimum(starts, b.end - 1)]
            blank = (length == 1) | ((length == 2) & (first == 13))
            self._found = (b.start + starts[~blank], self._first_line + nls[~blank])
        return self._found

    def record(self, k: int) -> bytes:
        """The bytes of record ``k`` of the block, newline excluded."""
        b = self._b
        offsets = self()[0]
        lo = int(offsets[k]) - b.start
        hi = int(offsets[k + 1]) - b.start if k + 1 < len(offsets) else b.end
        return b.data[lo:hi].rstrip(b"\r\n")


def _fast_chunk(
    source: Source,
    b: Block,
    fast: tuple[pa.Array, Optional[pa.Array]],
    row: int,
    line: int,
    positions: _Positions,
) -> tuple[Optional[Chunk], int]:
    """The chunk ``csv_fast`` wrote (one line end per record: no quotes, no lone CR, so
    no count of the block) and its number of records."""
    n = len(fast[0])
    if n == 0:
        return None, 0
    chunk = Chunk(
        fast[0],
        keys=fast[1],
        file=source.name,
        first_row=row,
        lines=lambda: positions()[1],
        offsets=lambda: positions()[0],
        end=SourcePosition(source.name, row + n, b.start + b.end, line + n),
        bytes_done=b.start + b.end,
    )
    return chunk, n


def _numbered_names(
    source: Source, b: Block, options: ReadOptions, quote: Optional[int], positions: _Positions
) -> Optional[list[str]]:
    """c1, c2, ... as many as the block's first record has fields (None: no record)."""
    offsets = positions()[0]
    if not len(offsets):
        return None
    lo = int(offsets[0]) - b.start
    _, hi = next(first_records(b.data, b.end, quote, _CR, lo))
    first = b.data[lo:hi].decode("utf-8", "replace")
    count = len(_parse_record(first, _delimiter(source, options), _quote(options)))
    return [f"c{i}" for i in range(1, count + 1)]


def _report_refused(
    source: Source,
    bad_rows: list[tuple[int, str, str]],
    positions: _Positions,
    row: int,
    report: Report,
) -> None:
    offsets, lines = positions()
    for i, msg, text in bad_rows:
        report(
            Problem(
                source.name,
                "parse",
                msg,
                line=int(lines[i]),
                row=row + i,
                offset=int(offsets[i]),
                text=text,
            )
        )


def _null_values(options: ReadOptions) -> list[str]:
    # An empty field (unquoted) is null, as pandas and DuckDB read it: pandas writes
    # NaN so.  A quoted one ("") is the empty string; --null-value names another
    # spelling instead, and --csv-types string keeps every field as its text.
    null = [options.null_value] if options.null_value is not None else []
    if not null and options.csv_types != "string":
        null = [""]
    return null


def _parse(
    source: Source,
    b: Block,
    skip: int,
    names: list[str],
    options: ReadOptions,
    null: list[str],
    first_line: int,
    line_after: int,
) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    """The block's records after ``skip`` parsed by pyarrow, and the rows it refused:
    (index among the block's non-blank records, why, the text)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    bad_rows: list[tuple[int, str, str]] = []

    def on_invalid(bad: pcsv.InvalidRow) -> str:
        # bad.number counts the non-blank records of the buffer
        msg = f"expected {bad.expected_columns} columns, got {bad.actual_columns}"
        bad_rows.append((bad.number - 1, msg, bad.text))
        return "skip"

    quote = _quote(options)
    buf = pa.py_buffer(b.data)[skip : b.end]
    # Text columns first (UTF-8 checked while parsing); bytes only for a block that
    # holds a row that is not UTF-8, so that row alone can be found and dropped.
    for typ in (pa.string(), pa.binary()):
        bad_rows.clear()
        try:
            table = pcsv.read_csv(
                buf,
                read_options=pcsv.ReadOptions(
                    column_names=names, use_threads=False, block_size=max(b.end, 1 << 20)
                ),
                parse_options=pcsv.ParseOptions(
                    delimiter=_delimiter(source, options),
                    quote_char=quote or False,
                    double_quote=True,
                    newlines_in_values=bool(quote),
                    invalid_row_handler=on_invalid,
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={c: typ for c in names},
                    null_values=null,
                    strings_can_be_null=bool(null),
                    quoted_strings_can_be_null=False,
                ),
            )
            break
        except pa.ArrowInvalid as e:
            if typ == pa.string() and "UTF8" in str(e):
                continue
            raise ImportInputError(
                f"{source.name}: CSV parse error in lines {first_line}..{line_after - 1}: {e}"
            ) from None
    return table, bad_rows


def _parsed_chunk(
    source: Source,
    b: Block,
    table: pa.Table,
    invalid: list[int],
    n: int,
    fields: Fields,
    options: ReadOptions,
    report: Report,
    row: int,
    line_after: int,
    positions: _Positions,
) -> Optional[Chunk]:
    """The chunk of a parsed block's ``n`` records but the ``invalid`` ones, decoded
    and encoded as messages (None: no row left)."""
    import numpy as np
    import pyarrow as pa

    keep = np.arange(n, dtype=np.int64)
    if invalid:
        ok = np.ones(n, bool)
        ok[invalid] = False
        keep = keep[ok]
    batch = table.combine_chunks().to_batches()
    batch = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=table.schema)
    batch, keep = decode(batch, keep, row, positions, positions.record, source, options, report)
    if batch.num_rows == 0:
        return None
    chunk = Chunk(
        None,
        file=source.name,
        first_row=row + int(keep[0]),
        rows=None if len(keep) == n else row + keep,
        lines=lambda: positions()[1][keep],
        offsets=lambda: positions()[0][keep],
        end=SourcePosition(source.name, row + n, b.start + b.end, line_after),
        bytes_done=b.start + b.end,
    )
    infer = options.csv_types != "string"
    chunk, problems = batch_chunk(
        batch,
        fields,
        chunk,
        record=lambda t: csv_record_json(t, infer),
        encoders=options.encoders,
    )
    for p in problems:
        report(p)
    return chunk


READER = CsvReader()


def _no_header(source: Source) -> str:
    """The refusal of a CSV input without even a header: the one rule for inputs that
    hold no rows (``inputs/check.py``)."""
    return (
        f"{source.name}: the input holds no rows (no header); if an empty input is "
        "expected, pass --allow-empty (it is then read as zero rows)"
    )
