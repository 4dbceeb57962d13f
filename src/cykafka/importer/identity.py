"""Which input file an import read, so that a rerun can tell it is the same one.

A file is named by its absolute path and recognised by its size, modification time, a
fingerprint (a SHA-256 over its size and its first and last 64 KiB) and a content digest
(a SHA-256 of every byte of the file, :func:`content_digest`).  The fingerprint costs
the same for a 1 KB and a 50 GB file and catches the usual accidents (a file
regenerated, appended to, truncated, or another file put in its place); a resume also
checks the 64 KiB just before the position it resumes from (:func:`block_digest`).  The
content digest is computed once, while the first run imports the file; a rerun hashes
the file again only when its modification time differs from the one recorded, so a
same-size edit anywhere in the file (one row changed in the middle) is caught, while an
untouched file costs a rerun two blocks.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Optional

from ..config.types import JSONValue

__all__ = [
    "FileIdentity",
    "block_digest",
    "content_digest",
    "file_identity",
    "same_file_problem",
]

#: Bytes hashed at each end of the file, and before a resume position.
BLOCK = 64 << 10


@dataclass(frozen=True)
class FileIdentity:
    path: str  # absolute
    size: int
    mtime_ns: int
    fingerprint: str  # hex SHA-256 of size + first block + last block
    content: Optional[str] = None  # hex SHA-256 of the whole file (None: not known yet)

    def to_dict(self) -> dict[str, JSONValue]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, JSONValue]) -> FileIdentity:
        content = d.get("content")
        return cls(
            str(d["path"]),
            int(d["size"]),
            int(d["mtime_ns"]),
            str(d["fingerprint"]),
            None if content is None else str(content),
        )


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


def content_digest(path: str) -> str:
    """Hex SHA-256 of every byte of the file at ``path`` (hashlib releases the GIL, so
    this runs beside the import in a thread)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def same_file_problem(saved: FileIdentity, now: FileIdentity) -> Optional[str]:
    """Why ``now`` is not the file ``saved`` describes, or None when it is.  A new
    modification time alone (a copy, a touch) does not count: size and content decide;
    it makes the whole file be hashed and compared with the recorded content digest."""
    if saved.size != now.size:
        return f"its size changed from {saved.size:,} to {now.size:,} bytes"
    if saved.fingerprint != now.fingerprint:
        return "its content changed (the first or last 64 KiB differ)"
    if saved.mtime_ns != now.mtime_ns:
        if saved.content is None:
            return (
                "its modification time changed, and the earlier run stopped before it "
                "recorded the digest of its content, so an edit cannot be ruled out"
            )
        if content_digest(now.path) != saved.content:
            return (
                "its content changed (same size, new modification time, and the SHA-256 "
                "of the whole file differs)"
            )
    return None
