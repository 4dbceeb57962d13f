"""What the user named on the command line, as inputs to read.

An argument is a file, ``-`` (standard input), a glob (quoted, so the shell left it to
us), or a directory of part files (Spark and Hive write ``part-*`` files plus markers
such as ``_SUCCESS`` and ``.crc`` files, which are skipped).  Compressed files are read
through their codec, chosen by extension.  Pipes, FIFOs and standard input are read
once, front to back: nothing peeks at them before the import reads them.
"""

from __future__ import annotations

import dataclasses
import glob
import lzma
import os
import stat
import sys
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Optional, Protocol, Union

from .model import ImportInputError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["COMPRESSIONS", "ByteStream", "Source", "expand"]


class ByteStream(Protocol):
    """What the readers read: bytes front to back, ``n`` at most per call (b"" at the
    end).  A file, a decompressing stream, a transcoding one."""

    def read(self, n: int, /) -> bytes: ...


#: Extension -> codec of compressed inputs.
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".bz2": "bz2", ".xz": "xz"}
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Source:
    """One input.  ``name`` is what messages show (``<stdin>`` for ``-``)."""

    name: str
    path: Optional[str]  # None: standard input
    compression: Optional[str] = None
    #: Decompressed bytes of a compressed regular file, once :meth:`checked` read it.
    plain_size: Optional[int] = None

    @property
    def stem(self) -> str:
        """The name without its compression extension (what tells the format)."""
        lower = self.name.lower()
        for ext in COMPRESSIONS:
            if lower.endswith(ext):
                return self.name[: -len(ext)]
        return self.name

    @property
    def is_regular(self) -> bool:
        """A regular file: it can be read twice (to check its header first) and has a
        size.  Pipes, FIFOs, character devices and standard input cannot."""
        if self.path is None:
            return False
        try:
            return stat.S_ISREG(os.stat(self.path).st_mode)
        except OSError:
            return False

    @property
    def size(self) -> int:
        """Bytes the readers go through (0 when unknown), for progress: on disk, or
        decompressed once :meth:`checked` knows it (readers count decompressed bytes)."""
        if self.plain_size is not None:
            return self.plain_size
        if not self.is_regular:
            return 0
        return os.path.getsize(self.path or "")

    def checked(self) -> Source:
        """A compressed regular file read through once before anything is sent: corrupt
        or truncated data is refused up front (a clear error naming the file) instead of
        stopping the import half way, and its decompressed size is known for progress.
        Others are returned as they are (pipes and standard input are never read twice)."""
        if self.compression is None or not self.is_regular or self.plain_size is not None:
            return self
        st = os.stat(self.path or "")
        key = (self.path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        n = _CHECKED.get(key)
        if n is None:
            n = 0
            with self.open() as f:
                while True:
                    got = f.read(1 << 20)
                    if not got:
                        break
                    n += len(got)
            _CHECKED[key] = n
        return dataclasses.replace(self, plain_size=n)

    def inode(self) -> Optional[tuple[int, int]]:
        try:
            st = os.stat(self.path) if self.path is not None else os.fstat(0)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def open(self) -> Union[IO[bytes], _Both]:
        """The decompressed bytes, front to back."""
        raw: IO[bytes]
        if self.path is None:
            raw = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115
        else:
            try:
                raw = open(self.path, "rb", buffering=0)  # noqa: SIM115
            except OSError as e:
                raise ImportInputError(f"{self.name}: {e.strerror}") from None
        if self.compression is None:
            return raw
        if self.compression == "xz":
            return _Both(lzma.open(raw, "rb"), raw, self)
        import pyarrow as pa

        stream = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), self.compression)
        return _Both(stream, raw, self)


#: Decompressed sizes of the compressed files already read through, by identity (the
#: check runs before a broker starts and again in import_files: read once).
_CHECKED: dict[tuple[Optional[str], int, int, int, int], int] = {}


class _Both:
    """A decompressing stream that also closes the file under it.  Data the codec
    cannot decode (corrupt, truncated, not compressed at all) raises ImportInputError
    naming the file and where, never a codec's traceback."""

    def __init__(
        self,
        stream: Union[lzma.LZMAFile, pa.CompressedInputStream],
        raw: IO[bytes],
        source: Source,
    ) -> None:
        self._stream = stream
        self._raw = raw
        self._source = source
        self._done = 0

    def read(self, n: int = -1) -> bytes:
        try:
            got = bytes(self._stream.read(n))
        except (OSError, EOFError, ValueError, lzma.LZMAError) as e:
            raise self._error(e) from None
        self._done += len(got)
        return got

    def _error(self, e: BaseException) -> ImportInputError:
        s = self._source
        why = str(e) or type(e).__name__
        return ImportInputError(
            f"{s.name}: corrupt or truncated {s.compression} data after {self._done:,} "
            f"decompressed bytes ({why})"
        )

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._raw.close()

    def __enter__(self) -> _Both:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _compression(name: str) -> Optional[str]:
    lower = name.lower()
    for ext, codec in COMPRESSIONS.items():
        if lower.endswith(ext):
            return codec
    return None


def _part_files(directory: str) -> list[str]:
    """The data files under ``directory``, in name order (Spark's part order)."""
    out = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        for f in sorted(files):
            if f.startswith(("_", ".")) or f.endswith(".crc"):
                continue
            out.append(os.path.join(root, f))
    return out


def expand(args: list[str]) -> list[Source]:
    """The inputs the arguments name, in order; :class:`ImportInputError` naming the
    argument for one that names nothing readable."""
    if not args:
        raise ImportInputError("no input files")
    out: list[Source] = []
    for arg in args:
        if arg == "-":
            if any(s.path is None for s in out):
                raise ImportInputError("- (standard input) is given twice")
            out.append(Source("<stdin>", None))
            continue
        if not os.path.lexists(arg) and _GLOB_CHARS & set(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                raise ImportInputError(f"{arg}: no file matches this pattern")
            paths = [m for m in matches if not os.path.isdir(m)] or matches
        else:
            paths = [arg]
        for path in paths:
            if not os.path.exists(path):
                raise ImportInputError(f"{path}: no such file")
            if os.path.isdir(path):
                parts = _part_files(path)
                if not parts:
                    raise ImportInputError(f"{path}: a directory without data files")
                out.extend(Source(p, p, _compression(p)) for p in parts)
                continue
            if not os.access(path, os.R_OK):
                raise ImportInputError(f"{path}: permission denied")
            out.append(Source(path, path, _compression(path)))
    return out
