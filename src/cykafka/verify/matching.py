"""Compare what the input would produce with what the topic holds, in bounded memory.

Each record is reduced to a 16-byte digest of its key, value, headers (and partition,
when the input names one) and a 64-bit hash of its key, computed in C on both sides
(:mod:`cykafka._codecs`).  Both sides are spilled to disk in buckets by digest, so that
each bucket fits in memory whatever the input's size; each bucket is sorted and matched
with NumPy.

Matching is by digest with multiplicity: the n-th copy of a digest in the input (file
order) pairs with its n-th copy in the topic (the order it was read: partition by
partition, offsets ascending).  Then:

* missing: input records with no copy in the topic;
* extra: topic records whose content is nowhere in the input;
* duplicated: topic copies beyond the number of copies in the input;
* split keys: a key found in more than one partition (unless the input names each
  record's partition): its order is lost, as its records can be read in any order;
* reordered: within one key in a partition (keyless records: within one partition), a
  record that sits after another although the input has it before; one per inversion.

The matched pairs are spilled again in buckets by key (keyless records: by partition
and offset range) for the order checks.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from dataclasses import dataclass, field
from typing import BinaryIO, Optional

import numpy as np

__all__ = ["EXAMPLES", "Counts", "Matcher", "VerifyReport"]

#: Examples listed per kind of problem.
EXAMPLES = 5
_BUCKETS = 64
_KEYLESS_SPAN = 1 << 16  # offsets per keyless order unit (bounds a bucket's size)

# Every field is 8 bytes (rows are gathered as rows of uint64 words, see _take).  A
# topic record's place is one number, partition << 48 | offset ("po"): a partition's
# offsets stay below 2**48.
EXP = np.dtype([("d0", "<u8"), ("d1", "<u8"), ("k", "<u8"), ("i", "<i8")])
ACT = np.dtype([("d0", "<u8"), ("d1", "<u8"), ("k", "<u8"), ("po", "<i8")])
ORD = np.dtype([("k", "<u8"), ("po", "<i8"), ("i", "<i8")])
MISS = np.dtype([("i", "<i8"), ("k", "<u8")])
_PO_SHIFT = 48
_O_MASK = (1 << _PO_SHIFT) - 1


@dataclass(kw_only=True)
class Counts:
    """The counts of a comparison."""

    expected: int = 0
    actual: int = 0
    missing: int = 0
    extra: int = 0
    duplicated: int = 0
    split_keys: int = 0
    reordered: int = 0


@dataclass
class VerifyReport(Counts):
    """What the comparison found; :attr:`ok` only when the topic matches exactly."""

    topic: str
    files: list[str]
    malformed: int = 0  # input rows the import skips (so not expected either)
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: When nearly everything is missing and extra: which other options match (hints.py).
    hints: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.expected == self.actual and not (
            self.missing or self.extra or self.duplicated or self.split_keys or self.reordered
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
        for kind in ("missing", "extra", "duplicated", "split keys", "reordered"):
            n = getattr(self, kind.replace(" ", "_"))
            out.append(f"  {kind:<11} {n:,}")
            for ex in self.examples.get(kind.replace(" ", "_"), []):
                out.append(f"      {ex}")
        for hint in self.hints:
            out.append(
                textwrap.fill(
                    hint, 100, initial_indent="  hint        ", subsequent_indent="              "
                )
            )
        out.append(
            "  result      OK: the topic holds every record exactly once, in order"
            if self.ok
            else "  result      MISMATCH (exit status 1)"
        )
        return out


def _ranks(d0: np.ndarray, d1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted digests: each one's copy number, and the index of its first copy."""
    n = len(d0)
    idx = np.arange(n)
    new = np.ones(n, bool)
    new[1:] = (d0[1:] != d0[:-1]) | (d1[1:] != d1[:-1])
    starts = np.maximum.accumulate(np.where(new, idx, 0))
    return idx - starts, starts


def _take(x: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``x[order]`` for records whose fields are all 8 bytes: gathered as rows of
    words, several times faster than NumPy's field-by-field copy of records."""
    words = x.view("<u8").reshape(len(x), x.dtype.itemsize // 8)
    return np.take(words, order, axis=0).view(x.dtype).reshape(-1)


def _by_digest(x: np.ndarray) -> np.ndarray:
    """The order of ``x`` by digest, copies of one digest in their order in ``x``: by
    the first 8 bytes when they differ everywhere (the common case, and the fastest
    sort), else by all 16 then position.  (The pairing below looks for a record's
    copies from the first digest with its 8 bytes: two different records sharing 8
    bytes in one bucket, about n * n / 2**64 for n records, would show as a mismatch
    rather than pass.)"""
    order = np.argsort(x["d0"])
    d0 = x["d0"][order]
    if np.any(d0[1:] == d0[:-1]):  # copies (or shared first bytes): keep their order
        return np.lexsort((np.arange(len(x)), x["d1"], x["d0"]))
    return order


class _Spill:
    """Records of one dtype, appended to per-bucket files."""

    def __init__(self, directory: str, name: str, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.paths = [os.path.join(directory, f"{name}-{b}") for b in range(_BUCKETS)]
        self.files: list[Optional[BinaryIO]] = [None] * _BUCKETS

    def add(self, rows: np.ndarray, bucket: np.ndarray) -> None:
        bucket = bucket.astype(np.uint8)  # a stable sort of bytes is a radix sort
        order = np.argsort(bucket, kind="stable")
        rows, bucket = _take(rows, order), bucket[order]
        bounds = np.searchsorted(bucket, np.arange(_BUCKETS + 1, dtype=np.uint8))
        for b in range(_BUCKETS):
            lo, hi = bounds[b], bounds[b + 1]
            if lo < hi:
                f = self.files[b]
                if f is None:
                    f = self.files[b] = open(self.paths[b], "ab")  # noqa: SIM115
                f.write(rows[lo:hi].tobytes())

    def close(self) -> None:
        for f in self.files:
            if f is not None:
                f.close()
        self.files = [None] * _BUCKETS

    def mark(self) -> list[int]:
        """Where each bucket ends now (for :meth:`rollback`)."""
        return [0 if f is None else f.tell() for f in self.files]

    def rollback(self, marks: list[int]) -> None:
        """Drop what was added since :meth:`mark` gave ``marks``."""
        for f, at in zip(self.files, marks):
            if f is not None:
                f.truncate(at)
                f.seek(at)

    def load(self, b: int) -> np.ndarray:
        if not os.path.exists(self.paths[b]):
            return np.empty(0, self.dtype)
        out = np.fromfile(self.paths[b], self.dtype)
        os.unlink(self.paths[b])
        return out


@dataclass
class Found(Counts):
    """What :meth:`Matcher.finish` found, with the raw facts its examples need."""

    #: input indices of the first missing records
    missing_first: list[int] = field(default_factory=list)
    #: (partition, offset, key hash) of the first extra records
    extra_first: list[tuple[int, int, int]] = field(default_factory=list)
    #: (partition, offset, input index, partition, offset of its first copy)
    dup_first: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: (key hash, partitions, (partition, offset) of one of its records, count)
    split_first: list[tuple[int, list[int], tuple[int, int], int]] = field(default_factory=list)
    #: (partition, offset, input index, previous offset, previous input index)
    reorder_first: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    missing_path: str = ""


class Matcher:
    """Takes both sides' digests in any number of pieces (:meth:`add_expected` in input
    order, :meth:`add_actual` in topic order), then :meth:`finish` compares them.
    Memory: one bucket (about 1/64 of a side) at a time, plus the pieces given."""

    def __init__(self, tmp_dir: Optional[str] = None, *, splits_are_errors: bool = True) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="cykafka-verify-", dir=tmp_dir)
        d = self._tmp.name
        self._exp = _Spill(d, "exp", EXP)
        self._act = _Spill(d, "act", ACT)
        self._ord = _Spill(d, "ord", ORD)
        self._missing_path = os.path.join(d, "missing")
        self._next = 0
        self._actual = 0
        self._splits = splits_are_errors

    @property
    def directory(self) -> str:
        """Its temporary directory (removed by :meth:`close`)."""
        return self._tmp.name

    def close(self) -> None:
        for s in (self._exp, self._act, self._ord):
            s.close()
        self._tmp.cleanup()

    def __enter__(self) -> Matcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_expected(self, digests: np.ndarray, keys: np.ndarray) -> None:
        n = len(keys)
        rows = np.empty(n, EXP)
        dv = digests.view("<u8").reshape(n, 2)
        rows["d0"], rows["d1"], rows["k"] = dv[:, 0], dv[:, 1], keys
        rows["i"] = np.arange(self._next, self._next + n)
        self._next += n
        self._exp.add(rows, (rows["d0"] % _BUCKETS).astype(np.int64))

    def add_actual(
        self, partition: int, digests: np.ndarray, keys: np.ndarray, offsets: np.ndarray
    ) -> None:
        n = len(keys)
        rows = np.empty(n, ACT)
        dv = digests.view("<u8").reshape(n, 2)
        rows["d0"], rows["d1"], rows["k"] = dv[:, 0], dv[:, 1], keys
        rows["po"] = (partition << _PO_SHIFT) | offsets
        self._actual += n
        self._act.add(rows, (rows["d0"] % _BUCKETS).astype(np.int64))

    def mark_actual(self) -> tuple[int, list[int]]:
        return self._actual, self._act.mark()

    def rollback_actual(self, mark: tuple[int, list[int]]) -> None:
        """Forget the topic records added since :meth:`mark_actual` (to read them again
        another way)."""
        self._actual = mark[0]
        self._act.rollback(mark[1])

    def finish(self) -> Found:
        found = Found(expected=self._next, actual=self._actual, missing_path=self._missing_path)
        self._exp.close()
        self._act.close()
        extra_c: list[tuple[int, int, int]] = []
        dup_c: list[tuple[int, int, int, int, int]] = []
        with open(self._missing_path, "wb") as missing:
            for b in range(_BUCKETS):
                self._match(self._exp.load(b), self._act.load(b), found, missing, extra_c, dup_c)
        self._ord.close()
        found.extra_first = sorted(extra_c)[:EXAMPLES]
        found.dup_first = sorted(dup_c)[:EXAMPLES]
        miss = np.fromfile(self._missing_path, MISS, count=-1)["i"] if found.missing else None
        if miss is not None:
            found.missing_first = sorted(int(i) for i in np.sort(miss)[:EXAMPLES])
            del miss
        bounds: list[tuple[int, int, int, int, int, int]] = []
        rev: list[tuple[int, int, int, int, int]] = []
        for b in range(_BUCKETS):
            self._order(self._ord.load(b), found, rev, bounds)
        # Keyless records were checked per range of offsets: and across the ranges.
        bounds.sort()
        for prev, nxt in zip(bounds, bounds[1:]):
            if prev[0] == nxt[0] and prev[5] > nxt[3]:
                found.reordered += 1
                rev.append((nxt[0], nxt[2], nxt[3], prev[4], prev[5]))
        found.reorder_first = sorted(rev)[:EXAMPLES]
        found.split_first.sort(key=lambda s: s[2])
        del found.split_first[EXAMPLES:]
        return found

    def _match(
        self,
        e: np.ndarray,
        a: np.ndarray,
        found: Found,
        missing: BinaryIO,
        extra_c: list[tuple[int, int, int]],
        dup_c: list[tuple[int, int, int, int, int]],
    ) -> None:
        ne, na = len(e), len(a)
        if not ne and not na:
            return
        # Each side is in its own order already (input order; topic order): a stable
        # sort by digest keeps it among the copies of one digest.
        e = _take(e, _by_digest(e))
        a = _take(a, _by_digest(a))
        er, _ = _ranks(e["d0"], e["d1"])
        ar, astart = _ranks(a["d0"], a["d1"])
        # The input copy a topic record pairs with: the same digest, the same copy number.
        first = np.searchsorted(e["d0"], a["d0"])
        at = np.minimum(first + ar, max(ne - 1, 0))
        if ne:
            a_ok = (
                (first + ar < ne)
                & (e["d0"][at] == a["d0"])
                & (e["d1"][at] == a["d1"])
                & (er[at] == ar)
            )
        else:
            a_ok = np.zeros(na, bool)
        ai = np.nonzero(a_ok)[0]
        ei = at[ai]
        e_ok = np.zeros(ne, bool)
        e_ok[ei] = True
        # matched: to the order buckets
        m = np.empty(len(ei), ORD)
        m["k"], m["po"], m["i"] = a["k"][ai], a["po"][ai], e["i"][ei]
        keyless = m["k"] == 0
        unit = (m["po"] >> _PO_SHIFT) * 7919 + (m["po"] & _O_MASK) // _KEYLESS_SPAN
        bucket = np.where(keyless, unit % _BUCKETS, m["k"] % _BUCKETS)
        self._ord.add(m, bucket.astype(np.int64))
        # missing
        lost = e[~e_ok]
        found.missing += len(lost)
        if len(lost):
            mr = np.empty(len(lost), MISS)
            mr["i"], mr["k"] = lost["i"], lost["k"]
            missing.write(mr.tobytes())
        # extra or duplicated: does the input have the digest at all?
        if na - len(ai):
            fc = np.minimum(first, max(ne - 1, 0))
            a_has = (
                (first < ne) & (e["d0"][fc] == a["d0"]) & (e["d1"][fc] == a["d1"])
                if ne
                else np.zeros(na, bool)
            )
            ext = np.nonzero(~a_ok & ~a_has)[0]
            dup = np.nonzero(~a_ok & a_has)[0]
            found.extra += len(ext)
            found.duplicated += len(dup)
            po = a["po"]
            for j in ext[np.argsort(po[ext], kind="stable")][:EXAMPLES]:
                extra_c.append((*_place(po[j]), int(a["k"][j])))
            for j in dup[np.argsort(po[dup], kind="stable")][:EXAMPLES]:
                dup_c.append((*_place(po[j]), int(e["i"][first[j]]), *_place(po[astart[j]])))

    def _order(
        self,
        x: np.ndarray,
        found: Found,
        rev: list[tuple[int, int, int, int, int]],
        bounds: list[tuple[int, int, int, int, int, int]],
    ) -> None:
        if not len(x):
            return
        # By key, partition, offset (a keyless unit's range follows from its offsets).
        # A topic record's place is unique: by place first (the fastest sort), then
        # a stable sort by key, unless the bucket holds one key (keyless units: 0).
        k = x["k"]
        x = _take(x, np.argsort(x["po"]))
        if k.min() != k.max():
            x = _take(x, np.argsort(x["k"], kind="stable"))
        k, i = x["k"], x["i"]
        p, o = x["po"] >> _PO_SHIFT, x["po"] & _O_MASK
        c = np.where(k == 0, o // _KEYLESS_SPAN, 0)
        same = (k[1:] == k[:-1]) & (p[1:] == p[:-1]) & (c[1:] == c[:-1])
        inv = np.nonzero(same & (i[1:] < i[:-1]))[0]
        found.reordered += len(inv)
        for j in inv[:EXAMPLES]:
            rev.append((int(p[j + 1]), int(o[j + 1]), int(i[j + 1]), int(o[j]), int(i[j])))
        # keyless units: their first and last records, for the checks across units
        starts = np.nonzero(np.r_[True, ~same])[0]
        ends = np.r_[starts[1:] - 1, len(x) - 1]
        units = k[starts] == 0
        for s, t in zip(starts[units].tolist(), ends[units].tolist()):
            bounds.append((int(p[s]), int(c[s]), int(o[s]), int(i[s]), int(o[t]), int(i[t])))
        if not self._splits:
            return
        # keys in more than one partition
        keyed = k != 0
        kk, pp, oo = k[keyed], p[keyed], o[keyed]
        if not len(kk):
            return
        newk = np.r_[True, kk[1:] != kk[:-1]]
        newkp = newk | np.r_[True, pp[1:] != pp[:-1]]
        kstart = np.nonzero(newk)[0]
        nparts = np.add.reduceat(newkp.astype(np.int64), kstart)
        split = np.nonzero(nparts > 1)[0]
        found.split_keys += len(split)
        counts = np.diff(np.r_[kstart, len(kk)])
        for s in split[:EXAMPLES]:
            lo, hi = kstart[s], kstart[s] + counts[s]
            parts = sorted({int(q) for q in pp[lo:hi]})
            found.split_first.append(
                (int(kk[lo]), parts, (int(pp[lo]), int(oo[lo])), int(counts[s]))
            )


def _place(po: np.integer) -> tuple[int, int]:
    """(partition, offset) of a place number."""
    return int(po) >> _PO_SHIFT, int(po) & _O_MASK


def first_difference(
    want: tuple[Optional[bytes], Optional[bytes], tuple[tuple[str, Optional[bytes]], ...]],
    got: tuple[Optional[bytes], Optional[bytes], tuple[tuple[str, Optional[bytes]], ...]],
) -> str:
    """Where two records first differ: the key, a field of a JSON value, a byte of the
    value, or a header, with the text around it on both sides."""
    names = ("key", "value")
    for name, w, g in zip(names, want[:2], got[:2]):
        if w == g:
            continue
        if w is None or g is None:
            return f"{name}: expected {show(w)}, found {show(g)}"
        if name == "value":
            fld = _json_field(w, g)
            if fld is not None:
                return fld
        return f"{name} byte {_first_byte(w, g)}: {_around(w, g)}"
    if want[2] != got[2]:
        for j, (wh, gh) in enumerate(zip(want[2], got[2])):
            if wh != gh:
                if wh[0] != gh[0]:
                    return f"header {j}: expected name {wh[0]!r}, found {gh[0]!r}"
                return f"header {j} ({wh[0]!r}): expected {show(wh[1])}, found {show(gh[1])}"
        return f"headers: expected {len(want[2])}, found {len(got[2])}"
    return "no difference in key, value or headers"


def show(b: Optional[bytes]) -> str:
    """A short, readable form of a field: null, its text in double quotes (JSON's
    escapes) when it is UTF-8 text, else its bytes; the first 60 of either."""
    if b is None:
        return "null"
    return _text(b[:60]) + ("..." if len(b) > 60 else "")


def _first_byte(w: bytes, g: bytes) -> int:
    n = min(len(w), len(g))
    a, b = np.frombuffer(w[:n], np.uint8), np.frombuffer(g[:n], np.uint8)
    diff = np.nonzero(a != b)[0]
    return int(diff[0]) if len(diff) else n


def _around(w: bytes, g: bytes) -> str:
    at = _first_byte(w, g)
    lo = max(0, at - 20)
    pre = "..." if lo else ""
    return (
        f"expected {pre}{_text(w[lo : at + 20])}{'...' if len(w) > at + 20 else ''}, "
        f"found {pre}{_text(g[lo : at + 20])}{'...' if len(g) > at + 20 else ''}"
    )


def _text(b: bytes) -> str:
    """Bytes as text in double quotes when they are UTF-8, else as bytes."""
    import json

    try:
        return json.dumps(b.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return repr(b)


def _json_field(w: bytes, g: bytes) -> Optional[str]:
    import json

    try:
        jw, jg = json.loads(w), json.loads(g)
    except ValueError:
        return None
    if not isinstance(jw, dict) or not isinstance(jg, dict):
        return None
    for name, v in jw.items():
        if name not in jg:
            return f"value field {name!r}: expected {json.dumps(v)[:60]}, missing in the topic"
        if jg[name] != v:
            return (
                f"value field {name!r}: expected {json.dumps(v)[:60]}, "
                f"found {json.dumps(jg[name])[:60]}"
            )
    for name in jg:
        if name not in jw:
            return f"value field {name!r}: not in the input, found {json.dumps(jg[name])[:60]}"
    return None
