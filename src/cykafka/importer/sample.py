"""Generated sample orders for ``cykafka import --sample`` and the demo."""

from __future__ import annotations

import os
import tempfile
from typing import Optional

from ..inputs.model import ImportInputError

__all__ = ["write_sample_csv"]


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
