"""``jsonl``: one message per non-blank line; the line itself is the value unless
fields are picked out of it.  A line that is not JSON (or nested too deeply for the
parser, or not UTF-8) is reported with its line number; the others go on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Optional

from ..encode import FieldColumns, json_record_fields, records_chunk
from ..model import Chunk, Fields, ImportInputError, Problem, Report, SourcePosition
from ..sources import Source
from .base import ReadOptions, skip_to
from .blocks import Block, blocks
from .encoding import check_encoding

__all__ = ["READER"]


def _problem(source: Source, msg: str, line: int, row: int, offset: int, text: bytes) -> Problem:
    try:
        return Problem(
            source.name, "parse", msg, line=line, row=row, offset=offset, text=text.decode("utf-8")
        )
    except UnicodeDecodeError:
        return Problem(source.name, "parse", msg, line=line, row=row, offset=offset, raw=text)


def _one_document(source: Source) -> str:
    return (
        f"{source.name}: this is one JSON document (an array), not JSON Lines (one record "
        f"per line); convert it first, e.g. jq -c '.[]' {source.name} > "
        f"{source.stem.rsplit('.', 1)[0]}.jsonl"
    )


def _first_block_fields(source: Source, b: Block) -> Optional[list[str]]:
    names: dict[str, None] = {}
    objects = 0
    data = b.data[: b.end]
    head = data.lstrip()
    if head.startswith(b"["):
        first = head.split(b"\n", 1)[0].strip()
        try:
            whole_line = isinstance(json.loads(first), list)
        except ValueError:
            whole_line = False
        lines = sum(1 for line in data.split(b"\n") if line.strip())
        if not whole_line or (lines == 1 and source.stem.lower().endswith(".json")):
            # A line that is a JSON array is a record; "[" alone, or a .json file that is
            # a single array, is one JSON document.
            raise ImportInputError(_one_document(source))
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # reported as the import reads it
        if isinstance(rec, dict):
            objects += 1
            names.update(dict.fromkeys(rec))
    return list(names) if objects else None


class JsonlReader:
    name = "jsonl"
    extensions: tuple[str, ...] = (".jsonl", ".ndjson", ".json")
    has_fields = True

    #: Records need not share fields, so a field is only refused up front when no
    #: record of the first block has it (a misspelled --key-field: every key NULL).
    missing_field = "is in no record of the first block; the fields there are"

    def uses_arrow(self, options: ReadOptions) -> bool:
        return True

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        """The fields of the records of the first block (regular files only).  A
        ``.json`` file holding one JSON array (not one record per line) is refused."""
        if not source.is_regular:
            return None
        with source.open() as f:
            for b in blocks(f, options.block_bytes, options.max_record_bytes, start=0):
                if isinstance(b, Block):
                    # JSON is UTF-8 (RFC 8259): text in another encoding is refused with
                    # the conversion, not reported as invalid JSON on every line.
                    check_encoding(
                        source.name,
                        b.data[: b.end],
                        at_eof=False,
                        fix="JSON Lines must be UTF-8: convert it first, e.g. "
                        "iconv -f {guess} -t utf-8 {name}",
                    )
                    return _first_block_fields(source, b)
                if b.head.lstrip().startswith(b"["):  # one huge line: a JSON array?
                    raise ImportInputError(_one_document(source))
                return None
        return None

    def read(
        self,
        source: Source,
        fields: Fields,
        options: ReadOptions,
        report: Report,
        start: Optional[SourcePosition] = None,
    ) -> Iterator[Chunk]:
        line_no = (start.line or 1) - 1 if start is not None else 0
        row = start.row - 1 if start is not None else 0
        at = (start.offset or 0) if start is not None else 0
        with source.open() as f:
            skip_to(f, at)
            for b in blocks(f, options.block_bytes, options.max_record_bytes, start=at):
                if not isinstance(b, Block):
                    line_no += 1
                    row += 1
                    report(
                        _problem(
                            source,
                            f"line of {b.size:,} bytes is longer than message.max.bytes "
                            f"({options.max_record_bytes:,}); skipped",
                            line_no,
                            row,
                            b.start,
                            b.head,
                        )
                    )
                    continue
                chunk, row = self._block(source, b, fields, report, line_no, row)
                line_no += b.data.count(b"\n", 0, b.end)
                if chunk is not None and options.encoders is not None:
                    chunk, problems = records_chunk(chunk, options.encoders, fields.key)
                    for p in problems:
                        report(p)
                if chunk is not None and len(chunk):
                    yield chunk
                if b.torn:
                    report(
                        Problem(
                            source.name,
                            "note",
                            "the last line has no final newline (was the file still being "
                            "written?); it was read as it is",
                            line=line_no,
                        )
                    )

    def _block(
        self, source: Source, b: Block, fields: Fields, report: Report, line_no: int, row: int
    ) -> tuple[Optional[Chunk], int]:
        """The chunk of one block (None if no row in it is usable), and the last row
        number read."""
        values: list[Optional[bytes]] = []
        out: FieldColumns = {"keys": [], "partitions": [], "headers": [], "timestamps": []}
        rows: list[int] = []
        line_nos: list[int] = []
        offsets: list[int] = []
        pos = b.start
        for raw in b.data[: b.end].split(b"\n")[:-1]:
            line_no += 1
            here = pos
            pos += len(raw) + 1
            text = raw.rstrip(b"\r")
            if not text.strip():
                continue  # blank lines are not records
            row += 1
            try:
                rec = json.loads(text)
            except RecursionError:
                report(_problem(source, "JSON nested too deeply to read", line_no, row, here, text))
                continue
            except ValueError as e:
                report(_problem(source, f"invalid JSON: {e}", line_no, row, here, text))
                continue
            if fields.any:
                if not isinstance(rec, dict):
                    msg = f"a JSON {type(rec).__name__}, not an object, cannot have fields"
                    report(_problem(source, msg, line_no, row, here, text))
                    continue
                try:
                    value = json_record_fields(rec, fields, text, out)
                except ValueError as e:
                    report(_problem(source, str(e), line_no, row, here, text))
                    continue
            else:
                value = text
            values.append(value)
            rows.append(row)
            line_nos.append(line_no)
            offsets.append(here)
        if not values:
            return None, row
        import numpy as np

        chunk = Chunk(
            values,
            keys=out["keys"] if fields.key else None,
            partitions=out["partitions"] if fields.partition else None,
            headers=out["headers"] if fields.headers else None,
            timestamps=out["timestamps"] if fields.timestamp else None,
            file=source.name,
            first_row=rows[0],
            rows=rows,
            lines=line_nos,
            offsets=np.asarray(offsets, np.int64),
            end=SourcePosition(source.name, row + 1, b.start + b.end, line_no + 1),
            bytes_done=b.start + b.end,
        )
        return chunk, row


READER = JsonlReader()
