"""``jsonl``: one message per non-blank line; the line itself is the value unless
fields are picked out of it.  A line that is not JSON (or nested too deeply for the
parser, or not UTF-8) is reported with its line number; the others go on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Optional

from ..encode import json_record_fields, records_chunk
from ..model import Chunk, Fields, Problem, Report, SourcePosition
from ..sources import Source
from .base import ReadOptions, skip_to
from .blocks import Block, blocks

__all__ = ["READER"]


def _problem(source: Source, msg: str, line: int, row: int, offset: int, text: bytes) -> Problem:
    try:
        return Problem(
            source.name, "parse", msg, line=line, row=row, offset=offset, text=text.decode("utf-8")
        )
    except UnicodeDecodeError:
        return Problem(source.name, "parse", msg, line=line, row=row, offset=offset, raw=text)


class JsonlReader:
    name = "jsonl"
    extensions: tuple[str, ...] = (".jsonl", ".ndjson", ".json")
    has_fields = True

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        return None  # every record has its own fields

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
        out: dict[str, list[Any]] = {"keys": [], "partitions": [], "headers": [], "timestamps": []}
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
