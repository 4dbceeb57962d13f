"""The reliability table's rows: tests that try a fault class record what they tried, lost
and reported (tests/soak/table.py collects them into the table of docs/reliability.md)."""

from __future__ import annotations

import json
import os
from typing import Any


def record(item: str, tried: int, lost: int, failed_reported: int = 0, **extra: Any) -> None:
    """One row of the reliability table (see tests/soak/table.py)."""
    row = {"item": item, "tried": tried, "lost": lost, "failed_reported": failed_reported, **extra}
    print("RELIABILITY", json.dumps(row))
    path = os.environ.get("CYKAFKA_RELIABILITY_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
