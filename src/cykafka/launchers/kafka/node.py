"""One node of a :class:`~cykafka.launchers.kafka.KafkaCluster`: a combined
broker+controller JVM, its ``server.properties``, its storage formatted once, and the
faults a test inflicts on it (SIGKILL, SIGSTOP/SIGCONT, a restart with its data)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

from ..errors import KafkaStartError
from ..process import log_tail, poll_until, reap, start_process, stop_at_exit, stop_process
from .jars import java_executable
from .security import Listener, Security

__all__ = ["KafkaNode"]


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is in state T (stopped by a signal), from
    /proc/PID/task/*/stat; True where /proc is not there to ask."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return True
    for stat in tasks.glob("*/stat"):
        try:
            # "pid (comm) state ...": comm may hold spaces and parentheses.
            state = stat.read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # the thread exited meanwhile
        if state not in ("T", "t"):
            return False
    return True


class _Cluster(Protocol):
    """What a node needs of the cluster it belongs to (a :class:`KafkaCluster`): named as a
    protocol so that the node does not import the cluster that imports it."""

    @property
    def host(self) -> str: ...
    @property
    def heap(self) -> str: ...
    @property
    def cluster_id(self) -> str: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def listeners(self) -> tuple[Listener, ...]: ...
    @property
    def nodes(self) -> Sequence[KafkaNode]: ...
    @property
    def security(self) -> Security | None: ...
    @property
    def broker_config(self) -> Mapping[str, object]: ...

    def default_config(self) -> dict[str, str]: ...
    def classpath(self) -> str: ...
    def wait_ready(self, timeout: float | None = None) -> None: ...
    def stop(self, timeout: float = 30.0) -> None: ...


def _property(value: str) -> str:
    # java.util.Properties: a backslash escapes, and a value is one line.
    return value.replace("\\", "\\\\").replace("\n", "\\n")


_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


class KafkaNode:
    """One combined broker+controller JVM of a :class:`KafkaCluster`."""

    def __init__(self, cluster: _Cluster, node_id: int, ports: dict[str, int]) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.ports = ports  # listener name -> port, CONTROLLER included
        self.dir = cluster.data_dir / f"node-{node_id}"
        self.log_dirs = self.dir / "data"
        self.log_path = self.dir / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None
        self.paused = False

    # -- state
    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def address(self, listener: str = "PLAINTEXT") -> str:
        return f"{self.cluster.host}:{self.ports[listener]}"

    # -- lifecycle
    def _write_config(self) -> Path:
        c = self.cluster
        listeners = [*c.listeners, Listener("CONTROLLER")]
        props: dict[str, str] = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": ",".join(
                f"{n.node_id}@{c.host}:{n.ports['CONTROLLER']}" for n in c.nodes
            ),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": c.listeners[0].name,
            "listeners": ",".join(
                f"{ln.name}://{c.host}:{self.ports[ln.name]}" for ln in listeners
            ),
            "advertised.listeners": ",".join(
                f"{ln.name}://{c.host}:{self.ports[ln.name]}" for ln in c.listeners
            ),
            "listener.security.protocol.map": ",".join(
                f"{ln.name}:{'PLAINTEXT' if ln.name == 'CONTROLLER' else ln.protocol}"
                for ln in listeners
            ),
            "log.dirs": str(self.log_dirs),
            **c.default_config(),
            **(c.security.server_config(c.listeners) if c.security is not None else {}),
            **{k: str(v) for k, v in c.broker_config.items()},
        }
        path = self.dir / "server.properties"
        path.write_text("".join(f"{k}={_property(v)}\n" for k, v in props.items()))
        (self.dir / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_path))
        return path

    def _format(self, java: str, classpath: str, config: Path) -> None:
        proc = subprocess.run(
            [
                java,
                "-cp",
                classpath,
                "kafka.tools.StorageTool",
                "format",
                "-t",
                self.cluster.cluster_id,
                "-c",
                str(config),
                "--ignore-formatted",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise KafkaStartError(
                f"formatting node {self.node_id}'s storage failed (exit {proc.returncode}):\n"
                + (proc.stdout + proc.stderr)[-2000:]
            )

    def start(self) -> None:
        """Start the JVM (with the data it has: a restart keeps the log).  Does not wait;
        :meth:`KafkaCluster.wait_ready` does."""
        if self.is_running():
            return
        c = self.cluster
        java = java_executable()
        classpath = c.classpath()
        config = self.dir / "server.properties"
        if not (self.log_dirs / "meta.properties").exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            config = self._write_config()
            self._format(java, classpath, config)
        cmd = [
            java,
            f"-Xmx{c.heap}",
            f"-Xms{c.heap}",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(config),
        ]
        self._out = open(self.dir / "stdout.log", "ab")  # partner: closed in _reap()
        self._proc = start_process(cmd, self._out)  # dies with us: no orphan keeps the ports
        self.paused = False
        stop_at_exit(c, _stop_quickly)

    def _reap(self, timeout: float | None) -> None:
        if self._proc is not None:
            reap(self._proc, timeout)
        self._proc = None
        self.paused = False
        if self._out is not None:
            self._out.close()
            self._out = None

    def stop(self, timeout: float = 30.0) -> None:
        """A clean shutdown (SIGTERM: controlled shutdown, leadership moved away), then
        SIGKILL after ``timeout``.  The data stays for :meth:`start`."""
        proc = self._proc
        if proc is None:
            return
        if self.paused:
            self.resume()
        stop_process(proc, timeout)
        self._reap(timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill: no controlled shutdown."""
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        self._reap(None)

    def pause(self) -> None:
        """SIGSTOP: the node stays connected but answers nothing (a GC pause, a stalled VM).
        Returns once every thread of the JVM is stopped: the signal is delivered to each
        thread when it next runs, so on a busy machine a thread may still answer a
        request after ``kill()`` has returned."""
        if self._proc is not None and not self.paused:
            os.kill(self._proc.pid, signal.SIGSTOP)
            self.paused = True
            poll_until(
                lambda: _all_threads_stopped(self._proc.pid) if self._proc else True,
                10.0,
                f"node {self.node_id} to stop on SIGSTOP",
                interval=0.005,
            )

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self._proc is not None and self.paused:
            os.kill(self._proc.pid, signal.SIGCONT)
            self.paused = False

    def restart(self, *, kill: bool = False, downtime: float = 0.0, wait: bool = True) -> None:
        """Stop (or SIGKILL) and start again on the same ports with the same data."""
        self.kill() if kill else self.stop()
        if downtime > 0:
            time.sleep(downtime)
        self.start()
        if wait:
            self.cluster.wait_ready()

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the JVM's output, then of Kafka's ``server.log``."""
        return log_tail([self.dir / "stdout.log", self.log_path], lines)

    def __repr__(self) -> str:
        state = "paused" if self.paused else (f"pid={self.pid}" if self.is_running() else "stopped")
        return f"KafkaNode({self.node_id}, {self.address()}, {state})"


def _stop_quickly(cluster: _Cluster) -> None:
    # At interpreter exit: no time for a slow controlled shutdown.
    cluster.stop(timeout=5.0)
