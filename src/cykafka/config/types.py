"""Names for the values whose shape is only known at run time, where they enter.

Everything else in the package has a type that says what it holds; these are the
boundaries, each checked field by field where it is read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JSONValue"]

#: A value decoded by ``json.loads`` (a progress record, a plan sent to Spark's
#: executors): its fields are checked with ``int()``/``str()`` where they are read.
JSONValue = Any  # type: ignore[explicit-any]
