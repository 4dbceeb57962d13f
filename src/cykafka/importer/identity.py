"""Which input file an import read, so that a rerun can tell it is the same one.

A file is named by its absolute path and recognised by its size, modification time and
a fingerprint: a SHA-256 over its size and its first and last blocks.  Reading two
blocks costs the same for a 1 KB and a 50 GB file, and catches the usual accidents (a
file regenerated, appended to, truncated, or another file put in its place).  A resume
also checks the block just before the position it resumes from (:func:`block_digest`),
so an edit in the part already imported is caught where it matters.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Any, Optional

__all__ = ["FileIdentity", "block_digest", "file_identity", "same_file_problem"]

#: Bytes hashed at each end of the file, and before a resume position.
BLOCK = 64 << 10


@dataclass(frozen=True)
class FileIdentity:
    path: str  # absolute
    size: int
    mtime_ns: int
    fingerprint: str  # hex SHA-256 of size + first block + last block

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileIdentity:
        return cls(str(d["path"]), int(d["size"]), int(d["mtime_ns"]), str(d["fingerprint"]))


def file_identity(path: str) -> FileIdentity:
    """The identity of the file at ``path`` now (OSError if it cannot be read)."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        h = hashlib.sha256(str(st.st_size).encode() + b"\0")
        h.update(f.read(BLOCK))
        if st.st_size > BLOCK:
            f.seek(max(BLOCK, st.st_size - BLOCK))
            h.update(f.read(BLOCK))
    return FileIdentity(os.path.abspath(path), st.st_size, st.st_mtime_ns, h.hexdigest())


def block_digest(path: str, offset: Optional[int]) -> Optional[str]:
    """SHA-256 of the (up to) :data:`BLOCK` bytes before ``offset``: None when there is
    no byte offset (Parquet) or nothing before it."""
    if not offset:
        return None
    start = max(0, offset - BLOCK)
    with open(path, "rb") as f:
        f.seek(start)
        return hashlib.sha256(f.read(offset - start)).hexdigest()


def same_file_problem(saved: FileIdentity, now: FileIdentity) -> Optional[str]:
    """Why ``now`` is not the file ``saved`` describes, or None when it is.  A new
    modification time alone (a copy, a touch) does not count: size and content decide."""
    if saved.size != now.size:
        return f"its size changed from {saved.size:,} to {now.size:,} bytes"
    if saved.fingerprint != now.fingerprint:
        return "its content changed (the first or last 64 KiB differ)"
    return None
