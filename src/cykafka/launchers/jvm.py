"""A JVM launcher's two needs: the ``java`` executable, and a classpath of jars Maven
fetches once from Maven Central into a cache.  Nothing is vendored and no tarball is
downloaded.

Only the standard library is imported.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import LauncherError

__all__ = ["cache_dir", "install_hint", "java_executable", "maven_classpath"]


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
    if (root / ".complete").exists():
        return f"{lib}/*"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # partner: released when `lock` closes
        if (root / ".complete").exists():
            return f"{lib}/*"
        mvn = shutil.which("mvn")
        if mvn is None:
            raise error(f"no `mvn` on PATH to fetch {what}'s jars. {hint}")
        if log is not None:
            log(f"fetching {what} jars with Maven into {root} (once)")
        with tempfile.TemporaryDirectory(prefix="cykafka-mvn-") as tmp:
            Path(tmp, "pom.xml").write_text(_pom(coordinates))
            out = Path(tmp, "lib")
            proc = subprocess.run(
                [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={out}"],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tail = "\n    ".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                raise error(f"Maven could not fetch {what} (exit {proc.returncode}):\n    {tail}")
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            shutil.move(str(out), lib)
        (root / ".complete").write_text(what + "\n")
    return f"{lib}/*"
