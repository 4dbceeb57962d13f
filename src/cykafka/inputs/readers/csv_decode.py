"""CSV rows parsed as bytes (a block with a row that is not UTF-8) back to text, with
the rows that are not reported and dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..model import Problem, Report
from ..sources import Source
from .base import ReadOptions

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

__all__ = ["decode"]


def decode(
    batch: pa.RecordBatch,
    keep: npt.NDArray[np.int64],
    row: int,
    positions: Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    record: Callable[[int], bytes],
    source: Source,
    options: ReadOptions,
    report: Report,
) -> tuple[pa.RecordBatch, npt.NDArray[np.int64]]:
    """Every column as text; a row with bytes that are not UTF-8 is reported and
    dropped.  ``keep``: the record index (in the block) of each row of ``batch``."""
    import numpy as np
    import pyarrow as pa

    if all(pa.types.is_string(t) for t in batch.schema.types):
        return batch, keep
    cols = []
    bad = np.zeros(batch.num_rows, bool)
    for col in batch.columns:
        try:
            cols.append(col.cast(pa.string()))
        except pa.ArrowInvalid:
            for i, v in enumerate(col.to_pylist()):
                if v is not None:
                    try:
                        v.decode("utf-8")
                    except UnicodeDecodeError:
                        bad[i] = True
            cols.append(None)
    if bad.any():
        offsets, lines = positions()
        for i in np.flatnonzero(bad).tolist():
            k = int(keep[i])
            report(
                Problem(
                    source.name,
                    "parse",
                    f"not valid {options.encoding} text",
                    line=int(lines[k]),
                    row=row + k,
                    offset=int(offsets[k]),
                    raw=record(k),
                )
            )
        batch = batch.filter(pa.array(~bad))
        keep = keep[~bad]
        cols = [c.cast(pa.string()) for c in batch.columns]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names), keep
