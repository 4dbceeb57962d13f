"""``parquet``: record batches row group by row group (so every row's position is its
row group and its row in it); only the used columns are read when the value is one
field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Optional

from ..encode import batch_chunk
from ..model import Chunk, Fields, ImportInputError, Report, SourcePosition
from ..sources import Source
from .base import ReadOptions, check_columns

__all__ = ["READER"]


class ParquetReader:
    name = "parquet"
    extensions: tuple[str, ...] = (".parquet", ".pq")
    has_fields = True

    def _open(self, source: Source) -> object:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not source.is_regular or source.compression is not None:
            raise ImportInputError(
                f"{source.name}: Parquet needs a regular file (its footer is read first), "
                "not a pipe, standard input or a compressed file"
            )
        try:
            return pq.ParquetFile(source.path or "")
        except (pa.ArrowInvalid, OSError) as e:
            raise ImportInputError(f"{source.name}: not readable as Parquet: {e}") from None

    def uses_arrow(self, options: ReadOptions) -> bool:
        return True

    def columns(self, source: Source, options: ReadOptions) -> Optional[list[str]]:
        return list(self._open(source).schema_arrow.names)  # type: ignore[attr-defined]

    def read(
        self,
        source: Source,
        fields: Fields,
        options: ReadOptions,
        report: Report,
        start: Optional[SourcePosition] = None,
    ) -> Iterator[Chunk]:
        pf = self._open(source)
        check_columns(source.name, pf.schema_arrow.names, fields)  # type: ignore[attr-defined]
        meta = pf.metadata  # type: ignore[attr-defined]
        total = max(meta.num_rows, 1)
        size = source.size
        columns = fields.used() if fields.value else None
        row = start.row if start is not None else 1
        first_group = (start.row_group or 0) if start is not None else 0
        for group in range(first_group, meta.num_row_groups):
            group_row = 0
            drop = (start.group_row or 0) if start is not None and group == first_group else 0
            for batch in pf.iter_batches(  # type: ignore[attr-defined]
                batch_size=options.batch_rows, row_groups=[group], columns=columns
            ):
                if drop:  # rows before the start position
                    cut = min(drop, batch.num_rows)
                    batch, drop, group_row = batch.slice(cut), drop - cut, group_row + cut
                if batch.num_rows == 0:
                    continue
                n = batch.num_rows
                last = group_row + n == meta.row_group(group).num_rows
                end = SourcePosition(
                    source.name,
                    row + n,
                    row_group=group + 1 if last else group,
                    group_row=0 if last else group_row + n,
                )
                chunk = Chunk(
                    None,
                    file=source.name,
                    first_row=row,
                    row_group=group,
                    group_first=group_row,
                    end=end,
                    bytes_done=int(size * min(1.0, (row - 1 + n) / total)),
                )
                chunk, problems = batch_chunk(
                    batch, fields, chunk, encoders=options.encoders, nonfinite=options.nonfinite
                )
                for p in problems:
                    report(p)
                row += n
                group_row += n
                yield chunk


READER = ParquetReader()
