"""Compare what the input would produce with what the topic holds, in bounded memory.

Each record is reduced to a 16-byte digest of its key, value, headers (and partition,
when the input names one).  Both sides go into an SQLite database in a temporary file
(page cache capped), so memory stays flat however big the input; SQLite sorts on disk.

Matching is by digest with multiplicity: the n-th copy of a digest in the input (file
order) pairs with its n-th copy in the topic (partition, offset order).  Then:

* missing: input records with no copy in the topic;
* extra: topic records whose content is nowhere in the input;
* duplicated: topic copies beyond the number of copies in the input;
* reordered: within one key in a partition (keyless records: within one partition), a
  record that sits after another although the input has it before; one per inversion.

The topic side must come partition by partition, each in offset order (as
:func:`~cykafka.importer.committed.committed_messages` yields it): its insertion order is
then its order.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Optional

from ..importer.committed import Message

__all__ = ["Expected", "VerifyReport", "compare"]

#: Examples listed per kind of problem.
EXAMPLES = 5
_INSERT_EVERY = 50_000
_PREVIEW = 60


@dataclass(frozen=True)
class Expected:
    """One record the input would produce; ``file``/``row`` name it in reports."""

    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple[tuple[str, Optional[bytes]], ...] = ()
    partition: Optional[int] = None  # only when the input names the partition
    file: int = 0  # index into the file list
    row: int = 0


def _put(h: object, b: Optional[bytes]) -> None:
    if b is None:
        h.update(b"\xff\xff\xff\xff")  # type: ignore[attr-defined]
    else:
        h.update(struct.pack(">I", len(b)))  # type: ignore[attr-defined]
        h.update(b)  # type: ignore[attr-defined]


def digest(
    key: Optional[bytes],
    value: Optional[bytes],
    headers: Iterable[tuple[str, Optional[bytes]]],
    partition: Optional[int],
) -> bytes:
    """The content digest of one record (partition included only when given)."""
    h = hashlib.blake2b(digest_size=16)
    _put(h, key)
    _put(h, value)
    for name, v in headers:
        _put(h, name.encode())
        _put(h, v)
    if partition is not None:
        h.update(struct.pack(">q", partition))
    return h.digest()


def _group(key: Optional[bytes], partition: int) -> bytes:
    """Order is checked per key within its partition (the order Kafka keeps); keyless
    records per partition."""
    where = struct.pack(">i", partition)
    if key is None:
        return b"p" + where
    return b"k" + where + hashlib.blake2b(key, digest_size=12).digest()


def _preview(b: Optional[bytes]) -> str:
    if b is None:
        return "null"
    text = repr(b[:_PREVIEW])
    return text + ("..." if len(b) > _PREVIEW else "")


@dataclass
class VerifyReport:
    """What :func:`compare` found; :attr:`ok` only when the topic matches exactly."""

    topic: str
    files: list[str]
    expected: int = 0
    actual: int = 0
    missing: int = 0
    extra: int = 0
    duplicated: int = 0
    reordered: int = 0
    malformed: int = 0  # input rows the import skips (so not expected either)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.expected == self.actual and not (
            self.missing or self.extra or self.duplicated or self.reordered
        )

    def lines(self) -> list[str]:
        names = ", ".join(os.path.basename(f) for f in self.files)
        out = [
            f"Verified topic {self.topic!r} (committed records) against {names}",
            f"  expected    {self.expected:,} records"
            + (
                f" ({self.malformed:,} malformed input rows skipped, as the import does)"
                if self.malformed
                else ""
            ),
            f"  in topic    {self.actual:,} records",
        ]
        for kind in ("missing", "extra", "duplicated", "reordered"):
            n = getattr(self, kind)
            out.append(f"  {kind:<11} {n:,}")
            for ex in self.examples.get(kind, []):
                out.append(f"      {ex}")
        out.append(
            "  result      OK: the topic holds every record exactly once, in order"
            if self.ok
            else "  result      MISMATCH (exit status 1)"
        )
        return out


def _open_db(directory: Optional[str]) -> tuple[sqlite3.Connection, str]:
    fd, path = tempfile.mkstemp(prefix="cykafka-verify-", suffix=".sqlite", dir=directory)
    os.close(fd)
    db = sqlite3.connect(path)
    for pragma in (
        "journal_mode=OFF",
        "synchronous=OFF",
        "temp_store=FILE",
        "cache_size=-32768",  # KiB: a 32 MB page cache, whatever the input size
    ):
        db.execute(f"PRAGMA {pragma}")
    db.execute("CREATE TABLE exp (i INTEGER PRIMARY KEY, d BLOB, f INTEGER, r INTEGER)")
    db.execute("CREATE TABLE act (d BLOB, g BLOB, p INTEGER, o INTEGER, k TEXT, v TEXT)")
    return db, path


def _fill(db: sqlite3.Connection, sql: str, rows: Iterator[tuple]) -> int:
    n, batch = 0, []
    for row in rows:
        batch.append(row)
        if len(batch) >= _INSERT_EVERY:
            db.executemany(sql, batch)
            n += len(batch)
            batch.clear()
    db.executemany(sql, batch)
    return n + len(batch)


def compare(
    expected: Iterable[Expected],
    actual: Iterable[Message],
    *,
    with_partition: bool = False,
    topic: str,
    files: list[str],
    tmp_dir: Optional[str] = None,
) -> VerifyReport:
    """Compare ``expected`` (input order) with ``actual`` (committed messages with
    ``partition``, ``offset``, ``key``, ``value``, ``headers``, partition by partition in
    offset order).  ``with_partition``: the input names each record's partition, which
    is then part of its content."""
    report = VerifyReport(topic, list(files))
    db, path = _open_db(tmp_dir)
    try:
        report.expected = _fill(
            db,
            "INSERT INTO exp VALUES (?, ?, ?, ?)",
            (
                (i, digest(e.key, e.value, e.headers, e.partition), e.file, e.row)
                for i, e in enumerate(expected)
            ),
        )
        report.actual = _fill(
            db,
            "INSERT INTO act VALUES (?, ?, ?, ?, ?, ?)",
            (
                (
                    digest(m.key, m.value, m.headers, m.partition if with_partition else None),
                    _group(m.key, m.partition),
                    m.partition,
                    m.offset,
                    _preview(m.key),
                    _preview(m.value),
                )
                for m in actual
            ),
        )
        _analyse(db, report, files)
    finally:
        db.close()
        os.unlink(path)
    return report


def _analyse(db: sqlite3.Connection, report: VerifyReport, files: list[str]) -> None:
    def where(f: int, r: int) -> str:
        return f"{os.path.basename(files[f])} row {r}"

    # Copies per digest on each side, in one sort of both tables; for a digest with one
    # copy on each side (nearly all), that same pass pairs the two.
    db.executescript(
        """
        CREATE TABLE c (d BLOB PRIMARY KEY, ne INTEGER, na INTEGER,
            i INTEGER, ar INTEGER, g BLOB, o INTEGER) WITHOUT ROWID;
        INSERT INTO c SELECT d, SUM(x), SUM(y), MIN(i), MIN(ar), MAX(g), MAX(o) FROM
            (SELECT d, 1 AS x, 0 AS y, i, NULL AS ar, NULL AS g, NULL AS o FROM exp
             UNION ALL SELECT d, 0, 1, NULL, rowid, g, o FROM act)
            GROUP BY d;
        """
    )
    report.missing, report.extra, report.duplicated = db.execute(
        "SELECT TOTAL(MAX(ne - na, 0)), TOTAL(CASE WHEN ne = 0 THEN na END), "
        "TOTAL(CASE WHEN ne > 0 AND na > ne THEN na - ne END) FROM c"
    ).fetchone()
    report.missing, report.extra, report.duplicated = (
        int(report.missing),
        int(report.extra),
        int(report.duplicated),
    )
    # Digests with several copies on either side are paired by copy number (the n-th in
    # the input with the n-th in the topic); they are rare, so only they are ranked.
    db.executescript(
        """
        CREATE TABLE em AS SELECT i, d, f, r, ROW_NUMBER() OVER (PARTITION BY d ORDER BY i) AS n
            FROM exp WHERE d IN (SELECT d FROM c WHERE ne > 1 OR na > 1);
        CREATE TABLE am AS SELECT rowid AS ar, d, g, p, o,
            ROW_NUMBER() OVER (PARTITION BY d ORDER BY rowid) AS n
            FROM act WHERE d IN (SELECT d FROM c WHERE ne > 1 OR na > 1);
        CREATE TABLE m AS
            SELECT ar, g, o, i FROM c WHERE ne = 1 AND na = 1
            UNION ALL
            SELECT am.ar, am.g, am.o, em.i FROM am JOIN em ON am.d = em.d AND am.n = em.n;
        """
    )
    ex = report.examples
    ex["missing"] = [
        where(f, r)
        for f, r in db.execute(
            "SELECT f, r FROM (SELECT i, f, r FROM exp WHERE d IN (SELECT d FROM c WHERE na = 0) "
            "UNION ALL SELECT em.i, em.f, em.r FROM em JOIN c USING (d) "
            "WHERE em.n > c.na AND c.na > 0) "
            "ORDER BY i LIMIT ?",
            (EXAMPLES,),
        )
    ]
    ex["extra"] = [
        f"partition {p} offset {o}: key {k}, value {v}"
        for p, o, k, v in db.execute(
            "SELECT p, o, k, v FROM act WHERE d IN (SELECT d FROM c WHERE ne = 0) "
            "ORDER BY rowid LIMIT ?",
            (EXAMPLES,),
        )
    ]
    ex["duplicated"] = []
    for p, o, d in db.execute(
        "SELECT am.p, am.o, am.d FROM am JOIN c USING (d) WHERE c.ne > 0 AND am.n > c.ne "
        "ORDER BY am.ar LIMIT ?",
        (EXAMPLES,),
    ):
        first = db.execute("SELECT f, r FROM em WHERE d = ? AND n = 1", (d,)).fetchone()
        copy = db.execute("SELECT p, o FROM am WHERE d = ? AND n = 1", (d,)).fetchone()
        ex["duplicated"].append(
            f"partition {p} offset {o}: again {where(*first)} "
            f"(first at partition {copy[0]} offset {copy[1]})"
        )
    # Order: within a key (keyless: a partition), topic order must be input order.
    inv_sql = (
        "FROM (SELECT i, o, ar, LAG(i) OVER w AS pi, LAG(o) OVER w AS po FROM m "
        "WINDOW w AS (PARTITION BY g ORDER BY ar)) WHERE pi > i"
    )
    report.reordered = db.execute(f"SELECT COUNT(*) {inv_sql}").fetchone()[0]
    ex["reordered"] = []
    if report.reordered:
        for i, o, ar, pi, po in db.execute(
            f"SELECT i, o, ar, pi, po {inv_sql} ORDER BY ar LIMIT ?", (EXAMPLES,)
        ):
            (p,) = db.execute("SELECT p FROM act WHERE rowid = ?", (ar,)).fetchone()
            this = db.execute("SELECT f, r FROM exp WHERE i = ?", (i,)).fetchone()
            prev = db.execute("SELECT f, r FROM exp WHERE i = ?", (pi,)).fetchone()
            ex["reordered"].append(
                f"partition {p} offset {o} holds {where(*this)} but comes after offset {po} "
                f"holding {where(*prev)}, which the input has later"
            )
