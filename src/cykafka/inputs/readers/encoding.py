"""Text input in any encoding, read as UTF-8 bytes (what pyarrow parses), without a
byte-order mark."""

from __future__ import annotations

import codecs

from ..model import ImportInputError
from ..sources import ByteStream

__all__ = ["check_encoding", "is_utf8", "prefixed", "utf8_stream"]

_BOM = codecs.BOM_UTF8


class _Transcoded:
    """A stream in another encoding, read as UTF-8 (positions are then offsets in the
    UTF-8 text)."""

    def __init__(self, raw: ByteStream, encoding: str, name: str) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)()
        self._name = name
        self._encoding = encoding
        self._done = 0

    def read(self, n: int) -> bytes:
        data = self._raw.read(n)
        try:
            text = self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise ImportInputError(
                f"{self._name}: not valid {self._encoding} near byte {self._done + e.start:,}"
            ) from None
        self._done += len(data)
        return text.encode("utf-8")


class _Prefixed:
    def __init__(self, head: bytes, rest: ByteStream) -> None:
        self._head = head
        self._rest = rest

    def read(self, n: int) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            return head + self._rest.read(max(n - len(head), 1))
        return self._rest.read(n)


def prefixed(head: bytes, rest: ByteStream) -> ByteStream:
    """``rest`` with ``head`` (already read from it) put back in front."""
    return _Prefixed(head, rest)


def is_utf8(encoding: str) -> bool:
    """Whether text in ``encoding`` is read as it is (byte offsets are file offsets)."""
    return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")


def utf8_stream(f: ByteStream, name: str, encoding: str) -> tuple[ByteStream, int]:
    """The input as UTF-8 without a byte-order mark; returns it and the BOM's length."""
    if not is_utf8(encoding):
        return _Transcoded(f, encoding, name), 0
    head = f.read(len(_BOM))
    if head == _BOM:
        return f, len(_BOM)
    return _Prefixed(head, f), 0


def check_encoding(name: str, sample: bytes, at_eof: bool, fix: str = "") -> None:
    """Refuse text that is mostly not UTF-8 (a cp1252 or Latin-1 export read as UTF-8:
    every row would fail on its own), naming an encoding that reads it.  A few bad
    lines among good ones are left to the import, which reports each."""
    lines = sample.split(b"\n")
    if not at_eof and len(lines) > 1:
        lines.pop()  # may be cut inside a character
    bad: list[tuple[int, bytes]] = []
    non_ascii = 0
    for i, line in enumerate(lines, 1):
        if line.isascii():
            continue
        non_ascii += 1
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad.append((i, line))
    if len(bad) < 2 or len(bad) * 2 < non_ascii:
        return
    guess = "latin-1"
    try:
        for _, line in bad:
            line.decode("cp1252")
        guess = "cp1252"
    except UnicodeDecodeError:
        pass
    line_no, text = bad[0]
    n = sum(1 for line in lines if line.strip())
    fix = (fix or "pass --encoding {guess} (or the file's own encoding)").format(
        guess=guess, name=name
    )
    raise ImportInputError(
        f"{name}: not UTF-8 text: {len(bad):,} of the first {n:,} lines are not valid "
        f"UTF-8 (line {line_no}: {text[:60]!r}); it reads as {guess}: {fix}"
    )
