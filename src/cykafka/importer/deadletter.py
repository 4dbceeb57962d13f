"""The dead-letter file: one JSON line per row that was not delivered.

An exactly-once import opens it to append and cuts it back to the size its last commit
recorded (:meth:`size`, :meth:`truncate`), so a resumed run neither loses nor repeats rows.
It is refused when it is one of the inputs (opening it would empty that input) or when
it already holds rows (an earlier run's list of what it did not deliver), and a
write that fails (a full disk) never goes unnoticed: the rows it should have held are
kept in :attr:`DeadLetter.lost` and the import stops and says so.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Optional, TextIO

from ..inputs.model import ImportInputError, Problem
from ..inputs.sources import Source

__all__ = ["DeadLetter"]

#: Rows whose dead-letter write failed that are named in the summary (all are counted).
_KEEP_LOST = 20


class DeadLetter:
    def __init__(self, path: str, sources: Sequence[Source], append: bool = False) -> None:
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
        if st is not None and not append and stat.S_ISREG(st.st_mode) and st.st_size > 0:
            # An earlier run's rows (the only list of what it did not deliver): never
            # overwritten without a word.
            raise ImportInputError(
                f"--dead-letter {path} already exists ({st.st_size:,} bytes, from an earlier "
                "run?) and is never overwritten: move it away or name another file"
            )
        try:
            self._f: Optional[TextIO] = open(path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115
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

    def size(self) -> int:
        """Bytes written so far (an exactly-once import records it with each commit)."""
        if self._f is None:
            return 0
        self._f.flush()
        return os.fstat(self._f.fileno()).st_size

    def truncate(self, size: int) -> None:
        """Drop what was written after ``size`` bytes (rows of transactions that did not
        commit; a resumed import reports them again)."""
        if self._f is not None:
            self._f.flush()
            self._f.truncate(size)

    def close(self) -> None:
        if self._f is None:
            return
        f, self._f = self._f, None
        try:
            f.close()
        except OSError as e:
            if self.error is None:
                self.error = f"cannot write the dead-letter file {self.path}: {e.strerror}"
