"""The dead-letter file: one JSON line per row that was not delivered.

It is refused when it is one of the inputs (opening it would empty that input), and a
write that fails (a full disk) never goes unnoticed: the rows it should have held are
kept in :attr:`DeadLetter.lost` and the import stops and says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Optional, TextIO

from .model import ImportInputError, Problem
from .sources import Source

__all__ = ["DeadLetter"]

#: Rows whose dead-letter write failed that are named in the summary (all are counted).
_KEEP_LOST = 20


class DeadLetter:
    def __init__(self, path: str, sources: Sequence[Source]) -> None:
        self.path = path
        self.error: Optional[str] = None
        self.lost: list[Problem] = []
        self.lost_count = 0
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None:
            for s in sources:
                if s.inode() == (st.st_dev, st.st_ino):
                    raise ImportInputError(
                        f"--dead-letter {path} is the input {s.name}: writing it would "
                        "destroy that input"
                    )
        try:
            self._f: Optional[TextIO] = open(path, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as e:
            raise ImportInputError(f"--dead-letter {path}: {e.strerror}") from None

    def write(self, p: Problem) -> bool:
        """Write one row; False (and the row is kept in :attr:`lost`) when it cannot be."""
        if self._f is not None and self.error is None:
            try:
                self._f.write(p.to_json() + "\n")
                self._f.flush()  # a full disk is noticed at this row, not at close
                return True
            except OSError as e:
                self.error = f"cannot write the dead-letter file {self.path}: {e.strerror}"
        self.lost_count += 1
        if len(self.lost) < _KEEP_LOST:
            self.lost.append(p)
        return False

    def close(self) -> None:
        if self._f is None:
            return
        f, self._f = self._f, None
        try:
            f.close()
        except OSError as e:
            if self.error is None:
                self.error = f"cannot write the dead-letter file {self.path}: {e.strerror}"
