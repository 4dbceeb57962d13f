"""The small types every part of an import shares: what to pick out of a record
(:class:`Fields`), where a row came from (:class:`SourcePosition`), one batch on its way
to ``produce_batch`` (:class:`Chunk`) and a row that was not delivered (:class:`Problem`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Union

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from .._arrow import Lines

__all__ = [
    "Chunk",
    "Column",
    "Fields",
    "Headers",
    "ImportInputError",
    "Positions",
    "Problem",
    "SourcePosition",
]

#: A column of message keys or values, one element per row, as ``produce_batch`` takes
#: it: a pyarrow array (read from its buffers), the lines of a text block (native, no
#: Python object per line), or one bytes (None: null) per row.
Column = Union["pa.Array", "Lines", list[Optional[bytes]]]
#: Each row's headers (``--header-fields``), in field order.
Headers = Sequence[Sequence[tuple[str, Optional[bytes]]]]
#: Each row's partition (None: the partitioner's).
PartitionColumn = list[Optional[int]]
#: A number per row (record number, physical line, byte offset): NumPy int64 or a list.
Positions = Union["npt.NDArray[np.int64]", list[int]]
#: ... or a function making them when first asked: most chunks never need them.
LazyPositions = Union[Positions, Callable[[], Positions]]


class ImportInputError(ValueError):
    """Bad input named by the message: a missing file, an unknown format or field."""


@dataclass(frozen=True)
class Fields:
    """Which fields of a record become the key, value, partition, timestamp and headers."""

    key: Optional[str] = None
    value: Optional[str] = None  # None: the whole record as JSON
    partition: Optional[str] = None
    headers: tuple[str, ...] = ()
    timestamp: Optional[str] = None
    #: The zone of --timestamp-field values that name none (``--timezone``): without
    #: it they are refused, as ``produce()`` refuses a naive datetime.
    timezone: Optional[str] = None

    @property
    def any(self) -> bool:
        return bool(self.key or self.value or self.partition or self.headers or self.timestamp)

    def named(self) -> list[tuple[str, str]]:
        """``(flag, field)`` for every field that is set, as the user spelled it."""
        out = [
            ("--key-field", self.key),
            ("--value-field", self.value),
            ("--partition-field", self.partition),
            ("--timestamp-field", self.timestamp),
        ] + [("--header-fields", h) for h in self.headers]
        return [(flag, name) for flag, name in out if name]

    def used(self) -> list[str]:
        """The columns an import reads when the value is one field (not the record)."""
        return list(dict.fromkeys(name for _, name in self.named()))


@dataclass(frozen=True)
class SourcePosition:
    """Where a row is in its input: enough to name it to a person and to start reading
    again there.  ``offset`` is the byte offset of the row's first byte in the
    (decompressed) stream, for text formats; Parquet rows are ``row_group`` +
    ``group_row`` (0-based) instead."""

    file: str
    row: int  # 1-based record number in the file (malformed rows counted)
    offset: Optional[int] = None
    line: Optional[int] = None  # physical line (what an editor shows), when known
    row_group: Optional[int] = None
    group_row: Optional[int] = None


@dataclass
class Chunk:
    """One batch for produce_batch, plus where each of its rows came from.

    Element ``i`` is record :meth:`row_of` ``(i)`` of ``file``; :meth:`position` gives
    its full :class:`SourcePosition`.  ``end`` is where the row after the chunk starts
    (every row before it has been read into this or an earlier chunk): the point to
    resume from once the chunk is delivered."""

    values: Column
    keys: Optional[Column] = None
    #: each row's partition (None: the partitioner's choice)
    partitions: Optional[PartitionColumn] = None
    headers: Optional[Headers] = None
    #: each row's timestamp in ms since the epoch (None: now)
    timestamps: Optional[list[Optional[int]]] = None
    file: str = ""
    first_row: int = 1  # record number (1-based, in its file) of element 0
    rows: Optional[Positions] = None  # record numbers when rows were dropped in between (ascending)
    #: physical line number of each element, when known (None for Parquet); like
    #: ``offsets`` it may be a function making the array when first asked
    lines: Optional[LazyPositions] = None
    #: the lines format: element i is on line ``first_row + i``
    line_is_row: bool = False
    #: byte offset of each element's row start (a NumPy int array, or a function
    #: making one when asked: most chunks never need it)
    offsets: Optional[LazyPositions] = None
    row_group: Optional[int] = None  # Parquet: every element is in this row group ...
    group_first: int = 0  # ... and element 0 is its row number group_first (0-based)
    end: Optional[SourcePosition] = None
    bytes_done: int = 0  # input bytes consumed once this chunk was read

    def __len__(self) -> int:
        return len(self.values)

    def slice(self, lo: int, hi: int) -> Chunk:
        """Elements ``lo:hi`` as a chunk of their own (same positions)."""
        import numpy as np

        offsets, lines = self.offset_array(), self.line_array()
        rows = (
            self.rows
            if self.rows is not None
            else np.arange(len(self), dtype=np.int64) + self.first_row
        )
        return Chunk(
            self.values[lo:hi],
            keys=None if self.keys is None else self.keys[lo:hi],
            partitions=None if self.partitions is None else self.partitions[lo:hi],
            headers=None if self.headers is None else self.headers[lo:hi],
            timestamps=None if self.timestamps is None else self.timestamps[lo:hi],
            file=self.file,
            first_row=int(rows[lo]),
            rows=rows[lo:hi],
            lines=lines[lo:hi]
            if lines is not None
            else (rows[lo:hi] if self.line_is_row else None),
            offsets=None if offsets is None else offsets[lo:hi],
            row_group=self.row_group,
            group_first=self.group_first + int(rows[lo]) - self.first_row,
            end=self.end if hi >= len(self) else self.position(hi),
            bytes_done=self.bytes_done,
        )

    def row_of(self, index: int) -> int:
        return int(self.rows[index]) if self.rows is not None else self.first_row + index

    def line_array(self) -> Optional[Positions]:
        """``lines``, made now if it is still a function."""
        if callable(self.lines):
            self.lines = self.lines()
        return self.lines

    def offset_array(self) -> Optional[Positions]:
        """``offsets``, made now if it is still a function."""
        if callable(self.offsets):
            self.offsets = self.offsets()
        return self.offsets

    def line_of(self, index: int) -> Optional[int]:
        lines = self.line_array()
        if lines is not None:
            return int(lines[index])
        return self.row_of(index) if self.line_is_row else None

    def offset_of(self, index: int) -> Optional[int]:
        offsets = self.offset_array()
        return None if offsets is None else int(offsets[index])

    def position(self, index: int) -> SourcePosition:
        group_row = None
        if self.row_group is not None:
            group_row = self.group_first + self.row_of(index) - self.first_row
        return SourcePosition(
            self.file,
            self.row_of(index),
            offset=self.offset_of(index),
            line=self.line_of(index),
            row_group=self.row_group,
            group_row=group_row,
        )

    def problem(
        self,
        index: int,
        stage: str,
        error: str,
        *,
        text: Optional[str] = None,
        key: Optional[bytes] = None,
        value: Optional[bytes] = None,
        raw: Optional[bytes] = None,
        fate: Optional[str] = None,
    ) -> Problem:
        """A :class:`Problem` of row ``index``, at its place in the input."""
        return Problem(
            self.file,
            stage,
            error,
            line=self.line_of(index),
            row=self.row_of(index),
            offset=self.offset_of(index),
            text=text,
            key=key,
            value=value,
            raw=raw,
            fate=fate,
        )

    def items(self, col: Optional[Column]) -> list[Optional[bytes]]:
        """Every element of ``col`` as bytes (or None): ``item`` for a whole chunk."""
        if col is None:
            return [None] * len(self)
        vals = col.to_pylist() if hasattr(col, "to_pylist") else list(col)
        return [v.encode("utf-8") if isinstance(v, str) else v for v in vals]

    def item(self, col: Optional[Column], index: int) -> Optional[bytes]:
        if col is None:
            return None
        v = col[index]
        if v is not None and hasattr(v, "as_py"):
            v = v.as_py()
        if isinstance(v, str):
            return v.encode("utf-8")
        return v


@dataclass
class Problem:
    """A row that was not delivered: malformed input or a delivery failure."""

    file: str
    stage: str  # "parse" (malformed) | "refused" (a value no message holds) | "delivery"
    error: str
    line: Optional[int] = None  # physical line number in the file, when known
    row: Optional[int] = None  # 1-based record number in the file
    text: Optional[str] = None  # the raw row (parse problems)
    key: Optional[bytes] = None
    value: Optional[bytes] = None
    raw: Optional[bytes] = None  # the raw row when it is not valid text
    offset: Optional[int] = None  # byte offset of the row's start
    #: A delivery problem's fate (see :mod:`cykafka.importer.fates`): "not sent" or
    #: "unknown" (may be in the topic).  Parse problems are "not sent" in the file.
    fate: Optional[str] = None

    def to_json(self) -> str:
        d: dict[str, object] = {"file": self.file, "stage": self.stage, "error": self.error}
        # A row that could not be read was never produced: not sent (see fates.py).
        fate = self.fate or ("not sent" if self.stage in ("parse", "refused") else None)
        if fate is not None:
            d["fate"] = fate
        for name in ("line", "row", "offset", "text"):
            v = getattr(self, name)
            if v is not None:
                d[name] = v
        for name in ("key", "value", "raw"):
            v = getattr(self, name)
            if v is None:
                continue
            try:
                d[name] = v.decode("utf-8")
            except UnicodeDecodeError:
                d[name + "_base64"] = base64.b64encode(v).decode("ascii")
        return json.dumps(d, ensure_ascii=False)

    def describe(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        elif self.row is not None:
            where += f" row {self.row}"
        return f"{where}: {self.error}" + (f" [{self.fate}]" if self.fate else "")


#: How a reader hands a malformed row to the import (counted, listed, dead-lettered).
Report = Callable[[Problem], None]
