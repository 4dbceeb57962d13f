"""The engine of ``cykafka import``: files into a topic through the bulk C path.

Readers stream each file in chunks of whole rows (constant memory, whatever the file
size) and turn every chunk into columns that :meth:`Producer.produce_batch` reads
straight from Arrow buffers:

* ``lines``: every line is one message (empty lines too; a final newline does not
  make an extra one; ``\r\n`` counts as a newline).  Big blocks of the file are split
  by NumPy into one binary array per block: no Python object per line.
* ``csv``: ``pyarrow.csv``'s streaming reader (every column read as text, so a later
  block can never disagree with the types guessed from the first); malformed rows are
  reported with their line number and skipped, the rest is imported.
* ``jsonl``: one message per non-blank line; the line itself is the value unless
  fields are picked out of it.
* ``parquet``: ``pyarrow.parquet`` record batches, row group by row group.

Without ``value_field`` the value is the whole record as compact JSON (built column at
a time by :func:`cykafka._arrow.record_json`).  Nothing is lost silently: every row is
either delivered, or counted as failed, listed in the summary and written to the
dead-letter file when one is given.

pyarrow and NumPy are imported when an import runs, rich only for a progress bar on a
terminal.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional, TextIO

__all__ = [
    "FORMATS",
    "IMPORT_DEFAULTS",
    "Fields",
    "ImportInputError",
    "ImportResult",
    "detect_format",
    "import_files",
    "open_producer",
    "plan_files",
    "write_sample_csv",
]

#: Formats and the file extensions that select them.
FORMATS: Mapping[str, tuple[str, ...]] = {
    "csv": (".csv", ".tsv"),
    "jsonl": (".jsonl", ".ndjson", ".json"),
    "parquet": (".parquet", ".pq"),
    "lines": (".txt", ".log", ".lines"),
}

#: Rows per produce_batch call for row-oriented readers (CSV blocks are sized in bytes).
CHUNK_ROWS = 65536
#: Bytes per read for the ``lines`` and ``jsonl`` readers.
BLOCK_BYTES = 8 << 20
# Batches queued whose outcome is still unknown; bounds the memory kept for dead-letter
# rows (librdkafka's own queue limit bounds the rest).
_MAX_PENDING = 8
#: Config the import uses unless the user sets it: a bulk load trades latency for
#: throughput (librdkafka's 5 ms linger makes small requests; with 5 in flight under
#: the ordered preset that halved the rate on a busy 2-core machine).
IMPORT_DEFAULTS: Mapping[str, str] = {"linger.ms": "20"}
# Dead-letter and summary detail: the first N problems are listed on the terminal.
_SHOW_PROBLEMS = 10
# After Ctrl-C, how long to wait for each queued batch's delivery reports.
_INTERRUPT_WAIT_S = 10.0


class ImportInputError(ValueError):
    """Bad input named by the message: a missing file, an unknown format or field."""


@dataclass(frozen=True)
class Fields:
    """Which fields of a record become the key, value, partition and headers."""

    key: Optional[str] = None
    value: Optional[str] = None  # None: the whole record as JSON
    partition: Optional[str] = None
    headers: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.key or self.value or self.partition or self.headers)


@dataclass
class Problem:
    """A row that was not delivered: malformed input or a delivery failure."""

    file: str
    stage: str  # "parse" | "delivery"
    error: str
    line: Optional[int] = None  # physical line number in the file, when known
    row: Optional[int] = None  # 1-based record number in the file
    text: Optional[str] = None  # the raw row (parse problems)
    key: Optional[bytes] = None
    value: Optional[bytes] = None

    def to_json(self) -> str:
        d: dict[str, Any] = {"file": self.file, "stage": self.stage, "error": self.error}
        for name in ("line", "row", "text"):
            v = getattr(self, name)
            if v is not None:
                d[name] = v
        for name in ("key", "value"):
            v = getattr(self, name)
            if v is None:
                continue
            try:
                d[name] = v.decode("utf-8")
            except UnicodeDecodeError:
                import base64

                d[name + "_base64"] = base64.b64encode(v).decode("ascii")
        return json.dumps(d, ensure_ascii=False)

    def describe(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        elif self.row is not None:
            where += f" row {self.row}"
        return f"{where}: {self.error}"


@dataclass
class ImportResult:
    """What an import did; :meth:`summary_lines` renders it for people."""

    topic: str
    files: list[str]
    fmt: str
    bootstrap_servers: str
    rows_read: int = 0
    bytes_read: int = 0
    delivered: int = 0
    failed: int = 0  # delivery failures
    malformed: int = 0  # rows that could not be parsed (never produced)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    first_offsets: dict[int, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)
    elapsed: float = 0.0
    guarantees: str = ""
    interrupted: bool = False
    fatal: Optional[str] = None
    dead_letter: Optional[str] = None

    @property
    def ok(self) -> bool:
        """Every row read was delivered (and nothing was malformed or cut short)."""
        return (
            not self.interrupted
            and self.fatal is None
            and self.failed == 0
            and self.malformed == 0
            and self.delivered == self.rows_read
        )

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.elapsed if self.elapsed > 0 else 0.0

    def summary_lines(self) -> list[str]:
        names = ", ".join(os.path.basename(f) for f in self.files) or "-"
        lost = self.rows_read - self.delivered - self.failed
        out = [
            f"Imported {names} ({self.fmt}) into topic {self.topic!r} on {self.bootstrap_servers}",
            f"  rows read   {self.rows_read:,}  ({self.bytes_read / 1e6:,.1f} MB)"
            + (f", {self.malformed:,} malformed rows skipped" if self.malformed else ""),
            f"  delivered   {self.delivered:,}",
            f"  failed      {self.failed:,}"
            + (f"  (+{lost:,} never confirmed)" if lost > 0 else ""),
        ]
        if self.last_offsets:
            ranges = "  ".join(
                f"{p}: {self.first_offsets.get(p, '?')}..{self.last_offsets[p]}"
                for p in sorted(self.last_offsets)
            )
            out.append(f"  offsets     {ranges}")
        out.append(
            f"  elapsed     {self.elapsed:.2f} s  ({self.rows_per_second:,.0f} rows/s, "
            f"{self.mb_per_second:,.1f} MB/s)"
        )
        if self.guarantees:
            out.append(f"  guarantees  {self.guarantees}")
        if self.problem_count:
            out.append(f"  problems    {self.problem_count:,} rows not delivered:")
            for p in self.problems[:_SHOW_PROBLEMS]:
                out.append(f"    {p.describe()}")
            if self.problem_count > _SHOW_PROBLEMS:
                more = self.problem_count - _SHOW_PROBLEMS
                out.append(
                    f"    ... and {more:,} more"
                    + (f" (all in {self.dead_letter})" if self.dead_letter else "")
                )
            elif self.dead_letter:
                out.append(f"    written to {self.dead_letter}")
        if self.fatal:
            out.append(f"  stopped     {self.fatal}")
        if self.interrupted:
            out.append("  stopped     interrupted (Ctrl-C) before the end of the input")
        out.append(
            "  result      OK: every row was delivered"
            if self.ok
            else "  result      NOT OK: some rows were not delivered (exit status 1)"
        )
        return out


# --------------------------------------------------------------------------- formats


def detect_format(path: str) -> str:
    """The format implied by ``path``'s extension; ImportInputError if there is none."""
    lower = path.lower()
    for fmt, exts in FORMATS.items():
        if lower.endswith(exts):
            return fmt
    known = ", ".join(e for exts in FORMATS.values() for e in exts)
    raise ImportInputError(
        f"{path}: cannot tell the format from the extension (known: {known}); "
        f"pass --format csv|jsonl|parquet|lines"
    )


@dataclass
class _Chunk:
    """One batch for produce_batch, plus what the dead-letter file needs."""

    values: Any
    keys: Any = None
    partitions: Any = None
    headers: Optional[list[Any]] = None
    first_row: int = 1  # record number (1-based, in its file) of element 0
    position: int = 0  # input bytes consumed once this chunk was read
    file: str = ""
    rows: Optional[list[int]] = None  # record numbers when rows were dropped in between
    #: physical line number (what an editor shows) of each element, when known; None
    #: for formats without lines (Parquet)
    lines: Any = None
    #: the lines format: element i is on line first_row + i
    line_is_row: bool = False

    def __len__(self) -> int:
        return len(self.values)

    def row_of(self, index: int) -> int:
        return self.rows[index] if self.rows is not None else self.first_row + index

    def line_of(self, index: int) -> Optional[int]:
        if self.lines is not None:
            return int(self.lines[index])
        return self.row_of(index) if self.line_is_row else None

    def items(self, col: Any) -> list[Optional[bytes]]:
        """Every element of ``col`` as bytes (or None): ``item`` for a whole chunk."""
        if col is None:
            return [None] * len(self)
        vals = col.to_pylist() if hasattr(col, "to_pylist") else list(col)
        return [v.encode("utf-8") if isinstance(v, str) else v for v in vals]

    def item(self, col: Any, index: int) -> Optional[bytes]:
        if col is None:
            return None
        v = col[index]
        if hasattr(v, "as_py"):
            v = v.as_py()
        if isinstance(v, str):
            return v.encode("utf-8")
        return v


_Report = Callable[[Problem], None]


def _split_blocks(f: IO[bytes], block_bytes: int) -> Iterator[tuple[bytes, int, int]]:
    """``(block, end, position)``: ``block[:end]`` is whole lines, each ending in
    b"\\n"; ``position`` is the file offset after the block.  The partial line after
    ``end`` is carried into the next block (a missing final newline is added)."""
    carry = b""
    pos = 0
    while True:
        block = f.read(block_bytes)
        if not block:
            break
        pos += len(block)
        if carry:
            block = carry + block
        end = block.rfind(b"\n") + 1
        carry = block[end:]
        if end:
            yield block, end, pos
    if carry:
        yield carry + b"\n", len(carry) + 1, pos


def _read_lines(path: str, fields: Fields, report: _Report) -> Iterator[_Chunk]:
    from ._arrow import lines_array

    row = 1
    with open(path, "rb", buffering=0) as f:
        for block, end, pos in _split_blocks(f, BLOCK_BYTES):
            values = lines_array(block, end)
            yield _Chunk(values, first_row=row, position=pos, file=path, line_is_row=True)
            row += len(values)


def _field_bytes(v: Any) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _line_problem(path: str, msg: str, line_no: int, row: int, text: bytes) -> Problem:
    return Problem(path, "parse", msg, line=line_no, row=row, text=text.decode("utf-8", "replace"))


def _read_jsonl(path: str, fields: Fields, report: _Report) -> Iterator[_Chunk]:
    line_no = 0
    row = 0
    with open(path, "rb", buffering=0) as f:
        for block, end, pos in _split_blocks(f, BLOCK_BYTES):
            values: list[Optional[bytes]] = []
            keys: list[Optional[bytes]] = []
            parts: list[Optional[int]] = []
            headers: list[Any] = []
            rows: list[int] = []
            line_nos: list[int] = []
            lines = block[:end].split(b"\n")
            lines.pop()  # after the final newline
            for raw in lines:
                line_no += 1
                text = raw.rstrip(b"\r")
                if not text.strip():
                    continue  # blank lines are not records
                row += 1
                try:
                    rec = json.loads(text)
                except ValueError as e:
                    report(_line_problem(path, f"invalid JSON: {e}", line_no, row, text))
                    continue
                if not fields.any:
                    values.append(text)
                    rows.append(row)
                    line_nos.append(line_no)
                    continue
                if not isinstance(rec, dict):
                    msg = f"a JSON {type(rec).__name__}, not an object, cannot have fields"
                    report(_line_problem(path, msg, line_no, row, text))
                    continue
                try:
                    value = _jsonl_fields(rec, fields, text, keys, parts, headers)
                except ValueError as e:
                    report(_line_problem(path, str(e), line_no, row, text))
                    continue
                values.append(value)
                rows.append(row)
                line_nos.append(line_no)
            if not values:
                continue
            yield _Chunk(
                values,
                keys=keys if fields.key else None,
                partitions=parts if fields.partition else None,
                headers=headers if fields.headers else None,
                first_row=rows[0],
                rows=rows,
                lines=line_nos,
                position=pos,
                file=path,
            )


def _jsonl_fields(
    rec: dict[str, Any],
    fields: Fields,
    text: bytes,
    keys: list[Optional[bytes]],
    parts: list[Optional[int]],
    headers: list[Any],
) -> Optional[bytes]:
    """Pick the fields out of one JSON record (appending key/partition/headers)."""
    if fields.value:
        if fields.value not in rec:
            # A missing value would be a null message: a tombstone on compacted topics.
            raise ValueError(f"value field {fields.value!r} is missing")
        value = _field_bytes(rec[fields.value])
    else:
        value = text
    part = None
    if fields.partition:
        p = rec.get(fields.partition)
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 0):
            raise ValueError(f"partition field {fields.partition!r} is {p!r}, not an int >= 0")
        part = p
    if fields.key:
        keys.append(_field_bytes(rec.get(fields.key)))
    if fields.partition:
        parts.append(part)
    if fields.headers:
        headers.append([(h, _field_bytes(rec.get(h))) for h in fields.headers])
    return value


def _check_columns(path: str, names: Sequence[str], fields: Fields) -> None:
    wanted = [
        ("--key-field", fields.key),
        ("--value-field", fields.value),
        ("--partition-field", fields.partition),
    ] + [("--header-fields", h) for h in fields.headers]
    for flag, name in wanted:
        if name and name not in names:
            raise ImportInputError(
                f"{path}: {flag} {name!r} is not a column; columns are {list(names)}"
            )


def _batch_chunk(
    batch: Any, fields: Fields, path: str, first_row: int, pos: int, lines: Any = None
) -> Any:
    """Columns of one Arrow record batch (CSV or Parquet) as a chunk; ``lines``: the
    physical line number of each row (CSV), else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._arrow import as_message_column, record_json

    def col(name: str) -> Any:
        return batch.column(batch.schema.get_field_index(name))

    bad: dict[int, str] = {}
    parts = None
    if fields.partition:
        pcol = col(fields.partition)
        if pa.types.is_string(pcol.type) or pa.types.is_large_string(pcol.type):
            pcol = pc.utf8_trim_whitespace(pcol)
            pcol = pc.if_else(pc.equal(pcol, ""), pa.scalar(None, pcol.type), pcol)
        try:
            parts = pc.cast(pcol, pa.int64()).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            parts = []
            for i, v in enumerate(pcol.to_pylist()):
                try:
                    parts.append(None if v is None else int(v))
                except (TypeError, ValueError):
                    parts.append(None)
                    bad[i] = f"partition field {fields.partition!r} is {v!r}, not an int"
        for i, p in enumerate(parts):
            if p is not None and p < 0 and i not in bad:
                bad[i] = f"partition field {fields.partition!r} is {p}, not >= 0"
    values = (
        as_message_column(col(fields.value), fields.value) if fields.value else record_json(batch)
    )
    keys = as_message_column(col(fields.key), fields.key) if fields.key else None
    headers = None
    if fields.headers:
        hcols = [(h, as_message_column(col(h), h).to_pylist()) for h in fields.headers]
        headers = [list(zip(fields.headers, vals)) for vals in zip(*(v for _, v in hcols))]
        headers = [[(k, _as_bytes(v)) for k, v in hs] for hs in headers]
    rows = None
    if bad:
        # Drop the rows that cannot be produced; keep the record numbers of the rest.
        keep = [i for i in range(batch.num_rows) if i not in bad]
        mask = pa.array([i not in bad for i in range(batch.num_rows)])
        values = values.filter(mask)
        keys = keys.filter(mask) if keys is not None else None
        parts = [parts[i] for i in keep] if parts is not None else None
        headers = [headers[i] for i in keep] if headers is not None else None
        rows = [first_row + i for i in keep]
        kept_lines = lines[keep] if lines is not None else None
    else:
        kept_lines = lines
    chunk = _Chunk(
        values,
        keys=keys,
        partitions=parts,
        headers=headers,
        first_row=first_row,
        position=pos,
        file=path,
        rows=rows,
        lines=kept_lines,
    )
    problems = [
        Problem(
            path,
            "parse",
            msg,
            line=int(lines[i]) if lines is not None else None,
            row=first_row + i,
            text=_row_json(batch, i),
        )
        for i, msg in sorted(bad.items())
    ]
    return chunk, problems


def _row_json(batch: Any, i: int) -> str:
    """Record i of a batch as JSON text (for dead-letter entries)."""
    row = {name: batch.column(j)[i].as_py() for j, name in enumerate(batch.schema.names)}
    return json.dumps(row, ensure_ascii=False, default=str)


def _as_bytes(v: Any) -> Optional[bytes]:
    if v is None or isinstance(v, bytes):
        return v
    return str(v).encode("utf-8")


def _csv_delimiter(path: str) -> str:
    return "\t" if path.lower().endswith(".tsv") else ","


def _csv_names(path: str) -> list[str]:
    """The header of a CSV file (pyarrow reads it, so quoting rules match the reader)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        with open(path, "rb") as f:
            names = pcsv.open_csv(
                f,
                read_options=pcsv.ReadOptions(use_threads=False),
                parse_options=pcsv.ParseOptions(
                    delimiter=_csv_delimiter(path),
                    newlines_in_values=True,
                    invalid_row_handler=lambda _row: "skip",  # reported by the real read
                ),
            ).schema.names
    except (pa.ArrowInvalid, StopIteration) as e:
        raise ImportInputError(f"{path}: not readable as CSV: {e}") from None
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ImportInputError(f"{path}: duplicate column names {dup} in the header")
    return list(names)


def _parquet_names(path: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except (pa.ArrowInvalid, OSError) as e:
        raise ImportInputError(f"{path}: not readable as Parquet: {e}") from None


def _precheck(path: str, fmt: str, fields: Fields) -> None:
    """Fail on a wrong field name before anything is produced."""
    if fmt == "csv":
        _check_columns(path, _csv_names(path), fields)
    elif fmt == "parquet":
        _check_columns(path, _parquet_names(path), fields)


def _read_csv(path: str, fields: Fields, report: _Report) -> Iterator[_Chunk]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    delimiter = _csv_delimiter(path)

    import numpy as np

    records = _CsvRecords(path)
    skipped: list[int] = []  # record numbers of malformed rows not yet passed

    def on_invalid(bad: Any) -> str:
        # bad.number counts records (the header is 1), not lines: a quoted field with
        # newlines, or a blank line, before it would make it point too early.
        skipped.append(bad.number)
        report(
            Problem(
                path,
                "parse",
                f"expected {bad.expected_columns} columns, got {bad.actual_columns}",
                line=records.line_of(bad.number),
                row=bad.number - 1,
                text=bad.text,
            )
        )
        return "skip"

    parse = pcsv.ParseOptions(
        delimiter=delimiter, newlines_in_values=True, invalid_row_handler=on_invalid
    )
    # use_threads=False: the reader then knows each bad row's line number.
    read = pcsv.ReadOptions(use_threads=False, block_size=4 << 20)
    names = _csv_names(path)
    _check_columns(path, names, fields)
    # Every column as text: a later block can never contradict the first one's types,
    # and the JSON of a row is exactly its CSV fields.
    convert = pcsv.ConvertOptions(
        column_types={n: pa.string() for n in names},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    row = 1  # data row (1-based, malformed rows included) of the next valid row
    with open(path, "rb") as f:
        reader = pcsv.open_csv(f, read_options=read, parse_options=parse, convert_options=convert)
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except pa.ArrowInvalid as e:
                # Unrecoverable (e.g. an unterminated quote): what was read stays imported.
                raise ImportInputError(
                    f"{path}: CSV parse error after row {row - 1}: {e}"
                ) from None
            if batch.num_rows == 0:
                continue
            # Data rows of this batch: the next num_rows row numbers that were not
            # malformed (the handler has seen every malformed row up to the batch's end).
            n = batch.num_rows
            skipped.sort()
            nums = np.arange(row, row + n + len(skipped), dtype=np.int64)
            if skipped:
                nums = nums[~np.isin(nums, np.asarray(skipped, dtype=np.int64) - 1)]
            nums = nums[:n]
            last = int(nums[-1])
            skipped[:] = [r for r in skipped if r - 1 > last]
            chunk, problems = _batch_chunk(
                batch, fields, path, row, f.tell(), _CsvLines(records, nums + 1)
            )
            if not (n and last == row + n - 1):
                chunk.rows = (
                    nums.tolist()
                    if chunk.rows is None
                    else [int(nums[r - row]) for r in chunk.rows]
                )
                for p in problems:
                    p.row = int(nums[p.row - row]) if p.row is not None else None
            for p in problems:
                report(p)
            row = last + 1
            yield chunk


class _CsvRecords:
    """Where each CSV record starts in the file: ``line_of(record)`` is the physical
    line number (what an editor shows) of record ``record`` (1-based, the header is 1,
    blank lines are not records, as pyarrow counts them).  Scans the file only as far as
    a look-up needs, block by block with NumPy (a newline ends a record unless it is
    inside quotes: an odd number of ``"`` before it, doubled quotes counting twice),
    keeping only the records where ``line - record`` changes, so memory stays small.
    The file is opened per look-up, so a look-up may come after the import has read
    the file (a delivery failure reported at the end)."""

    def __init__(self, path: str, block_bytes: int = BLOCK_BYTES) -> None:
        self._path = path
        self._block_bytes = block_bytes
        self._pos = 0  # file offset after the last whole line scanned
        self._eof = False
        self._lines = 0  # physical lines scanned
        self._records = 0  # records scanned
        self._quoted = 0  # 1 inside a quoted field at the end of the scan
        self._at: list[int] = [1]  # records from which ...
        self._extra: list[int] = [0]  # ... line = record + extra
        self._lock = threading.Lock()

    def _scan(self, f: IO[bytes]) -> bool:
        import numpy as np

        f.seek(self._pos)
        block = more = f.read(self._block_bytes)
        while more and b"\n" not in more:  # a line longer than a block
            more = f.read(self._block_bytes)
            block += more
        if not block:
            self._eof = True
            return False
        end = block.rfind(b"\n") + 1
        if end == 0:  # the last line, without a final newline
            block, end = block + b"\n", len(block) + 1
            self._pos += len(block) - 1
        else:
            self._pos += end
        a = np.frombuffer(block, np.uint8, end)
        nl = np.flatnonzero(a == 10)
        starts = np.concatenate(([0], nl[:-1] + 1))
        quotes = a == 34
        if quotes.any():
            before = np.concatenate(([0], np.cumsum(quotes, dtype=np.int64)))[starts]
            outside = (before + self._quoted) % 2 == 0
            self._quoted = (self._quoted + int(quotes.sum())) % 2
        else:
            outside = np.ones(len(starts), bool)
        length = nl - starts
        blank = (length == 0) | ((length == 1) & (a[starts] == 13))
        begins = outside & ~blank
        line_no = self._lines + 1 + np.flatnonzero(begins)
        rec_no = self._records + np.arange(1, len(line_no) + 1)
        extra = line_no - rec_no
        if len(extra):
            change = np.flatnonzero(np.diff(extra, prepend=self._extra[-1]))
            self._at.extend(rec_no[change].tolist())
            self._extra.extend(extra[change].tolist())
        self._lines += len(nl)
        self._records += len(line_no)
        return True

    def lines_of(self, records: Any) -> Any:
        """The physical lines of ``records`` (a NumPy int array, ascending)."""
        import numpy as np

        with self._lock:
            want = int(records[-1]) if len(records) else 0
            if self._records < want and not self._eof:
                with open(self._path, "rb") as f:
                    while self._records < want and self._scan(f):
                        pass
            at = np.asarray(self._at, np.int64)
            extra = np.asarray(self._extra, np.int64)
        return records + extra[np.searchsorted(at, records, side="right") - 1]

    def line_of(self, record: int) -> int:
        import numpy as np

        return int(self.lines_of(np.array([record], np.int64))[0])


class _CsvLines:
    """The physical lines of a chunk's CSV records, looked up only when one is asked
    for (a row to report): the look-up scans the file a second time, which measured
    0.13-0.24 s per million rows, ~15 % of a CSV import without problems."""

    def __init__(self, records: _CsvRecords, nums: Any) -> None:
        self._records = records
        self._nums = nums  # record numbers (1-based, header = 1), a NumPy int array

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):  # the rows a chunk keeps
            return _CsvLines(self._records, self._nums[index])
        return self._records.line_of(int(self._nums[index]))


def _read_parquet(path: str, fields: Fields, report: _Report) -> Iterator[_Chunk]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise ImportInputError(f"{path}: not readable as Parquet: {e}") from None
    _check_columns(path, pf.schema_arrow.names, fields)
    total = max(pf.metadata.num_rows, 1)
    size = os.path.getsize(path)
    columns = None
    if fields.value:  # the whole record is not needed: read only the used columns
        columns = list(
            dict.fromkeys(
                c for c in (fields.key, fields.value, fields.partition, *fields.headers) if c
            )
        )
    row = 1
    for batch in pf.iter_batches(batch_size=CHUNK_ROWS, columns=columns):
        if batch.num_rows == 0:
            continue
        pos = int(size * min(1.0, (row - 1 + batch.num_rows) / total))
        chunk, problems = _batch_chunk(batch, fields, path, row, pos)
        for p in problems:
            report(p)
        row += batch.num_rows
        yield chunk


_READERS: dict[str, Callable[[str, Fields, _Report], Iterator[_Chunk]]] = {
    "lines": _read_lines,
    "jsonl": _read_jsonl,
    "csv": _read_csv,
    "parquet": _read_parquet,
}


# --------------------------------------------------------------------------- progress


class _PlainProgress:
    """Log lines on a non-terminal: one per file and one every ``every`` seconds."""

    def __init__(self, out: TextIO, total_bytes: int, every: float = 5.0) -> None:
        self.out = out
        self.total = total_bytes
        self.every = every
        self.t0 = time.monotonic()
        self.last = self.t0

    def file(self, path: str, fmt: str) -> None:
        size = os.path.getsize(path)
        print(f"cykafka import: reading {path} ({fmt}, {size / 1e6:,.1f} MB)", file=self.out)

    def update(self, rows: int, nbytes: int, delivered: int, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.every:
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        pct = f" {100 * nbytes / self.total:.0f}%," if self.total else ""
        print(
            f"cykafka import:{pct} {rows:,} rows read, {delivered:,} delivered, "
            f"{rows / dt:,.0f} rows/s, {nbytes / 1e6 / dt:,.1f} MB/s",
            file=self.out,
            flush=True,
        )

    def close(self) -> None:
        pass


class _RichProgress:
    """A rich progress bar (rows, MB, rows/s, ETA from the file sizes); with
    ``producer`` (``--inspect``) the producer's accumulator view is drawn under it,
    in the same live display (two rich Lives cannot share a terminal)."""

    def __init__(
        self, out: TextIO, total_bytes: int, console: Any = None, producer: Any = None
    ) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        class _BarAndAccumulator(Progress):
            def get_renderables(self) -> Iterator[Any]:
                yield self.make_tasks_table(self.tasks)
                if producer is not None:
                    try:
                        yield producer.accumulator().table(30)
                    except Exception as e:  # the view must never stop the import
                        yield f"(accumulator view failed: {e})"

        self.t0 = time.monotonic()
        self.progress = _BarAndAccumulator(
            TextColumn("[bold]{task.description:.20}"),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[mb]}"),
            TextColumn("{task.fields[rows]:>11,} rows {task.fields[rate]:>9,.0f} rows/s"),
            TimeRemainingColumn(),
            console=console if console is not None else Console(file=out),
            transient=False,
            refresh_per_second=4 if producer is not None else 10,
        )
        self.total = total_bytes
        self.task = self.progress.add_task(
            "import", total=total_bytes or None, rows=0, rate=0.0, mb=self._mb(0)
        )
        self.progress.start()

    def file(self, path: str, fmt: str) -> None:
        self.progress.update(self.task, description=os.path.basename(path))

    def update(self, rows: int, nbytes: int, delivered: int, force: bool = False) -> None:
        rate = rows / max(time.monotonic() - self.t0, 1e-9)
        self.progress.update(self.task, completed=nbytes, rows=rows, rate=rate, mb=self._mb(nbytes))

    def _mb(self, nbytes: int) -> str:
        return f"{nbytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB"

    def close(self) -> None:
        self.progress.stop()


# --------------------------------------------------------------------------- engine


def plan_files(
    paths: Sequence[str], fmt: Optional[str] = None, fields: Fields = Fields()
) -> list[tuple[str, str]]:
    """Check the input before anything is produced: each file exists and is readable,
    has a known format, and has the named fields.  Returns ``[(path, format), ...]``;
    raises :class:`ImportInputError` naming the culprit."""
    if not paths:
        raise ImportInputError("no input files")
    if fmt is not None and fmt not in FORMATS:
        raise ImportInputError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    plan: list[tuple[str, str]] = []
    for p in paths:
        if not os.path.exists(p):
            raise ImportInputError(f"{p}: no such file")
        if os.path.isdir(p):
            raise ImportInputError(f"{p}: is a directory, not a file")
        if not os.access(p, os.R_OK):
            raise ImportInputError(f"{p}: permission denied")
        plan.append((p, fmt or detect_format(p)))
    for p, f in plan:
        if f == "lines" and fields.any:
            raise ImportInputError(
                f"{p}: the lines format has no fields; --key-field, --value-field, "
                f"--partition-field and --header-fields need csv, jsonl or parquet"
            )
    if fields.headers and len(set(fields.headers)) != len(fields.headers):
        raise ImportInputError(f"--header-fields lists a field twice: {list(fields.headers)}")
    for p, f in plan:
        _precheck(p, f, fields)

    return plan


def import_files(
    paths: Sequence[str],
    topic: str,
    config: Mapping[str, Any],
    *,
    preset: Any = "ordered",
    fmt: Optional[str] = None,
    fields: Fields = Fields(),
    dead_letter: Optional[str] = None,
    progress: Optional[bool] = None,
    inspect: bool = False,
    log: Optional[TextIO] = None,
    producer: Any = None,
    console: Any = None,
) -> ImportResult:
    """Import ``paths`` into ``topic``; return the :class:`ImportResult`.

    ``config`` is the producer config (must include ``bootstrap.servers``); ``preset``
    as for :class:`cykafka.Producer`.  ``fmt`` forces a format for every file (else each
    file's extension decides).  ``progress``: a bar (True), log lines (False) or a bar
    only when ``log`` is a terminal (None).  Bad input (missing file, unknown format or
    field) raises :class:`ImportInputError` before anything is produced.  ``producer``:
    an open :class:`cykafka.Producer` to use (and leave open) instead of a new one made
    from ``config`` and ``preset`` (which then only feed the summary).  ``inspect``:
    also show the producer's accumulator view (under the bar, or as log lines).
    ``console``: a rich Console for the bar (default: one on ``log``).
    """
    from . import explain

    log = log if log is not None else sys.stderr
    plan = plan_files(paths, fmt, fields)
    config = _with_import_defaults(config, preset)

    result = ImportResult(
        topic=topic,
        files=[p for p, _ in plan],
        fmt="+".join(dict.fromkeys(f for _, f in plan)),
        bootstrap_servers=str(config.get("bootstrap.servers", "?")),
        dead_letter=dead_letter,
    )
    result.guarantees = explain(dict(config), preset=preset).summary()
    total_bytes = sum(os.path.getsize(p) for p, _ in plan)

    dl: Optional[TextIO] = None
    if dead_letter:
        try:
            dl = open(dead_letter, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as e:
            raise ImportInputError(f"--dead-letter {dead_letter}: {e.strerror}") from None

    report_lock = threading.Lock()  # the reader thread (_prefetch) reports too

    def report(p: Problem) -> None:
        with report_lock:
            result.problem_count += 1
            if p.stage == "parse":
                result.malformed += 1
            if len(result.problems) < _SHOW_PROBLEMS:
                result.problems.append(p)
            if dl is not None:
                dl.write(p.to_json() + "\n")

    own = producer is None
    if own:
        producer = open_producer(config, preset)
    live_view = getattr(producer, "inspect_live", None) if inspect else None
    if inspect and live_view is None:
        print(
            "cykafka import: --inspect needs Producer.inspect_live, which this build of "
            "cykafka does not have; importing without the accumulator view",
            file=log,
        )
    use_bar = progress if progress is not None else _isatty(log)
    bar: Any
    if use_bar:
        # The bar and (with --inspect) the accumulator view in one live display.
        view = producer if live_view is not None else None
        bar = _RichProgress(log, total_bytes, console, view)
        live_view = None
    else:
        bar = _PlainProgress(log, total_bytes)
    pending: collections.deque[tuple[Any, _Chunk]] = collections.deque()

    def settle(fut: Any, chunk: _Chunk, timeout: Optional[float] = None) -> None:
        rep = fut.result(timeout)
        result.delivered += rep.delivered
        result.failed += rep.failed
        for p, lo in rep.first_offsets.items():
            if p not in result.first_offsets or lo < result.first_offsets[p]:
                result.first_offsets[p] = lo
        for p, hi in rep.last_offsets.items():
            if p not in result.last_offsets or hi > result.last_offsets[p]:
                result.last_offsets[p] = hi
        for index, exc in rep.errors:
            report(
                Problem(
                    chunk.file,
                    "delivery",
                    f"{getattr(exc, 'name', type(exc).__name__)}: "
                    f"{getattr(exc, 'message', str(exc))}",
                    line=chunk.line_of(index),
                    row=chunk.row_of(index),
                    key=chunk.item(chunk.keys, index),
                    value=chunk.item(chunk.values, index),
                )
            )

    def unconfirmed(chunk: _Chunk, reason: str) -> None:
        """Rows read whose outcome is unknown (Ctrl-C, a fatal error): each goes to the
        problems (and the dead-letter file), so none is lost silently.  Some may still
        have been delivered: their delivery report never arrived."""
        keys, values = chunk.items(chunk.keys), chunk.items(chunk.values)
        for i in range(len(chunk)):
            report(
                Problem(
                    chunk.file,
                    "delivery",
                    f"unconfirmed: {reason}",
                    line=chunk.line_of(i),
                    row=chunk.row_of(i),
                    key=keys[i],
                    value=values[i],
                )
            )

    t0 = time.monotonic()
    done_bytes = 0
    unsent: Optional[_Chunk] = None  # read, but not queued when produce_batch raised
    try:
        with contextlib.ExitStack() as stack:
            if live_view is not None:
                stack.enter_context(live_view(0.25, file=log))
            try:
                for path, f in plan:
                    bar.file(path, f)
                    for chunk in _prefetch(_READERS[f](path, fields, report)):
                        if len(chunk) == 0:
                            continue
                        result.rows_read += len(chunk)
                        try:
                            fut = producer.produce_batch(
                                topic,
                                chunk.values,
                                chunk.keys,
                                partitions=chunk.partitions,
                                headers=chunk.headers,
                            )
                        except BaseException as e:
                            # The part already queued (and the rest, failed) rides on it.
                            queued = getattr(e, "batch", None)
                            if queued is not None:
                                pending.append((queued, chunk))
                            else:
                                unsent = chunk
                            raise
                        pending.append((fut, chunk))
                        while pending and (len(pending) > _MAX_PENDING or pending[0][0].done()):
                            settle(*pending.popleft())
                        result.bytes_read = done_bytes + chunk.position
                        bar.update(result.rows_read, result.bytes_read, result.delivered)
                    done_bytes += os.path.getsize(path)
                    result.bytes_read = done_bytes
            except KeyboardInterrupt:
                result.interrupted = True
            except ImportInputError as e:
                result.fatal = str(e)
            except Exception as e:  # a fatal producer error: report what happened so far
                result.fatal = f"{type(e).__name__}: {e}"
            # Every queued row gets an outcome: delivered, or failed with its error.
            waited_out = False
            while pending:
                fut, chunk = pending[0]
                try:
                    settle(fut, chunk, _INTERRUPT_WAIT_S if result.interrupted else None)
                except TimeoutError:
                    waited_out = True
                    break
                except KeyboardInterrupt:
                    result.interrupted = True
                    break
                except Exception as e:  # the delivery reports cannot be had
                    if result.fatal is None:
                        result.fatal = f"{type(e).__name__}: {e}"
                    break
                pending.popleft()
            # ... or, when they cannot be had, is reported unconfirmed.
            if result.interrupted:
                why = "interrupted (Ctrl-C)"
                if waited_out:
                    why += f"; no delivery report within {_INTERRUPT_WAIT_S:g} s"
            else:
                why = result.fatal or "no delivery report"
            while pending:
                unconfirmed(pending.popleft()[1], why)
            if unsent is not None:  # after the queued ones: it was read last
                unconfirmed(unsent, why + "; never sent")
        result.elapsed = time.monotonic() - t0
        bar.update(result.rows_read, result.bytes_read, result.delivered, force=True)
    finally:
        bar.close()
        if own:
            producer.close(10.0 if result.interrupted else None)
        else:  # the caller's producer stays open; its queue is already drained
            producer.flush(10.0 if result.interrupted else None)
        if dl is not None:
            dl.close()
    return result


class _ReaderFailed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_END = object()


def _prefetch(chunks: Iterator[_Chunk], depth: int = 2) -> Iterator[_Chunk]:
    """Read the next chunks in a thread while the current one is being queued:
    the readers (pyarrow) and produce_batch's C loop both run mostly without the
    GIL, so reading and producing overlap instead of taking turns.  A reader's
    exception is re-raised here, in the caller's thread."""
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(_END)
        except BaseException as exc:  # handed to the consumer, raised there
            put(_ReaderFailed(exc))

    reader = threading.Thread(target=work, name="cykafka-import-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, _ReaderFailed):
                raise item.exc
            yield item
    finally:
        stop.set()
        reader.join(5.0)


def open_producer(config: Mapping[str, Any], preset: Any = "ordered") -> Any:
    """The :class:`cykafka.Producer` :func:`import_files` would make (``config`` plus
    :data:`IMPORT_DEFAULTS`), to start it early or reuse it for several imports."""
    from .producer import Producer

    return Producer(_with_import_defaults(config, preset), preset=preset)


def _with_import_defaults(config: Mapping[str, Any], preset: Any) -> dict[str, Any]:
    """``config`` plus :data:`IMPORT_DEFAULTS` for keys neither it nor a preset sets."""
    from . import presets as _presets
    from .config import canonical

    given = {canonical(k) for k in config}
    if preset:
        given |= {canonical(k) for k in _presets.apply({}, preset)}
    out = dict(config)
    for k, v in IMPORT_DEFAULTS.items():
        if canonical(k) not in given:
            out[k] = v
    return out


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# --------------------------------------------------------------------------- sample data


def write_sample_csv(rows: int, path: Optional[str] = None, *, users: int = 1000) -> str:
    """Write ``rows`` sample orders (id, user, amount, ts) as CSV; return the path.

    Deterministic (fixed seed) and generated column-wise, so even millions of rows take
    about a second.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if rows < 1:
        raise ImportInputError(f"--sample needs a positive number of rows, not {rows}")
    if path is None:
        fd, path = tempfile.mkstemp(prefix="cykafka-sample-", suffix=".csv")
        os.close(fd)
    rng = np.random.default_rng(20240601)
    ids = np.arange(1, rows + 1)
    user_ids = rng.integers(0, users, rows)
    user = pc.binary_join_element_wise(
        "user-", pc.utf8_lpad(pc.cast(pa.array(user_ids), pa.string()), 4, "0"), ""
    )
    amount = pc.cast(pa.array(rng.integers(100, 50000, rows) / 100.0), pa.string())
    # One order every 50 ms from 2024-06-01T00:00:00Z, in id order.
    base = np.datetime64("2024-06-01T00:00:00", "ms")
    ts = pc.strftime(pa.array(base + ids * 50), format="%Y-%m-%dT%H:%M:%SZ")  # %S has the ms
    table = pa.table({"id": ids, "user": user, "amount": amount, "ts": ts})
    pcsv.write_csv(table, path, pcsv.WriteOptions(quoting_style="none"))
    return path
