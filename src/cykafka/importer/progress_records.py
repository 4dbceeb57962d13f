"""Where an exactly-once import records how far it got: a compacted progress topic.

Every transaction of ``cykafka import --exactly-once`` carries, besides its rows, one
progress record: key = the import's ``transactional.id``, value = JSON naming every input
file (its :class:`~cykafka.importer.identity.FileIdentity`) and the position of the first
row not yet committed.  The record commits or aborts with the rows, so the last
committed one is exactly where a rerun must resume.  Compaction keeps one record per
import.  Example value::

    {"version": 1, "topic": "orders", "format": "csv", "fields": {...},
     "rows": 1200000, "done": false,
     "files": [{"path": "/data/a.csv", "size": 52428800, "mtime_ns": ..., "fingerprint": "9f2c...",
                "row": 1200001, "offset": 49283311, "line": 1200002, "row_group": null, "group_row": null,
                "before": "77ab...", "done": false}]}

``row`` is the 1-based number of the next row to read, ``offset`` and ``line`` its byte
offset and physical line (text formats), ``row_group``/``group_row`` its place in a Parquet file, ``before`` the digest
of the bytes before ``offset`` (:func:`~cykafka.importer.identity.block_digest`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..config.types import JSONValue
from .identity import FileIdentity

if TYPE_CHECKING:
    from ..cluster.committed import CommittedReader

__all__ = [
    "DEFAULT_PROGRESS_TOPIC",
    "FileProgress",
    "Progress",
    "committed_progress",
    "last_progress",
]

#: The progress topic unless ``--progress-topic`` names another.
DEFAULT_PROGRESS_TOPIC = "cykafka-import-progress"
_VERSION = 1


@dataclass
class FileProgress:
    """How far one input file is committed."""

    identity: FileIdentity
    row: int = 1  # next row to read (1-based)
    offset: Optional[int] = None  # its byte offset (text formats)
    line: Optional[int] = None  # its physical line (text formats)
    row_group: Optional[int] = None  # Parquet: its row group ...
    group_row: Optional[int] = None  # ... and row in it (0-based)
    before: Optional[str] = None  # digest of the block before offset
    done: bool = False

    @property
    def started(self) -> bool:
        return self.done or self.row > 1

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            **self.identity.to_dict(),
            "row": self.row,
            "offset": self.offset,
            "line": self.line,
            "row_group": self.row_group,
            "group_row": self.group_row,
            "before": self.before,
            "done": self.done,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, JSONValue]) -> FileProgress:
        return cls(
            FileIdentity.from_dict(dict(d)),
            row=int(d.get("row", 1)),
            offset=d.get("offset"),
            line=d.get("line"),
            row_group=d.get("row_group"),
            group_row=d.get("group_row"),
            before=d.get("before"),
            done=bool(d.get("done", False)),
        )


@dataclass
class Progress:
    """One import's committed state: what it reads, and how far it is."""

    topic: str
    fmt: str
    fields: dict[str, JSONValue]
    files: list[FileProgress] = field(default_factory=list)
    rows: int = 0  # rows committed so far, over every run
    done: bool = False
    dead_letter: Optional[str] = None  # its absolute path, and ...
    dead_letter_bytes: int = 0  # ... its size after the rows committed so far

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": _VERSION,
                "topic": self.topic,
                "format": self.fmt,
                "fields": self.fields,
                "rows": self.rows,
                "done": self.done,
                "dead_letter": self.dead_letter,
                "dead_letter_bytes": self.dead_letter_bytes,
                "files": [f.to_dict() for f in self.files],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Progress:
        d = json.loads(raw)
        if d.get("version") != _VERSION:
            raise ValueError(f"progress record version {d.get('version')!r}, not {_VERSION}")
        return cls(
            topic=d["topic"],
            fmt=d["format"],
            fields=d.get("fields", {}),
            files=[FileProgress.from_dict(f) for f in d["files"]],
            rows=int(d.get("rows", 0)),
            done=bool(d.get("done", False)),
            dead_letter=d.get("dead_letter"),
            dead_letter_bytes=int(d.get("dead_letter_bytes", 0)),
        )


def committed_progress(
    client: Mapping[str, object],
    name: str,
    key: str,
    timeout: float = 60.0,
    reader: Optional[CommittedReader] = None,
) -> list[Optional[bytes]]:
    """Every committed progress record of ``key``, in log order (None: a tombstone),
    as a read_committed consumer on Kafka sees them (:mod:`.committed`).  ``reader``:
    the :class:`~.committed.CommittedReader` of topic ``name`` to read with (a run reads
    its progress again after every commit), else a reader of its own."""
    from ..cluster.committed import committed_messages

    want = key.encode()
    msgs = (
        reader.messages()
        if reader is not None
        else committed_messages(client, name, timeout=timeout)
    )
    return [m.value for m in msgs if m.key == want]


def last_progress(seen: Sequence[Optional[bytes]]) -> Optional[Progress]:
    """The last of ``seen`` (:func:`committed_progress`), or None when there is none or it
    is a tombstone."""
    if not seen or seen[-1] is None:
        return None
    return Progress.from_json(seen[-1])
