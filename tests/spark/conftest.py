"""Real Spark deployments for the PySpark tests, one at a time (session-scoped and
parametrized, so pytest groups the tests by deployment and stops each before the next):

* ``local``: a classic ``local[2]`` session in this process;
* ``standalone``: Spark's own ``Master`` and ``Worker`` processes (``spark-class``) on
  127.0.0.1, and a classic session whose executors run in the worker;
* ``connect``: a Spark Connect server (``spark-submit ... SparkConnectServer``) and a
  thin ``SparkSession.builder.remote()`` client: no ``sparkContext``, no RDDs.

Executors run this interpreter (``spark.pyspark.python`` / ``PYSPARK_PYTHON``), which
has the cykafka under test installed.  Every port is a free one chosen at start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka.launchers.process import dies_with_this_process, free_port, tcp_open
from support import streaming

DEPLOYMENTS = ("local", "standalone", "connect")
#: What PySpark sets in os.environ once a process has been a Spark Connect client.
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(_spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


class _Proc:
    """A JVM started in its own process group, stopped with it, and killed by the
    kernel if this process dies first (a test run stopped with SIGKILL or a timeout
    leaves no Spark master, worker or Connect server behind)."""

    def __init__(
        self, args: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
    ) -> None:
        self.log = log
        self._out = open(log, "wb")  # partner: closed in stop()
        self.proc = subprocess.Popen(
            dies_with_this_process(args),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )

    def wait_port(self, port: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not tcp_open("127.0.0.1", port):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.log.name} exited: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.log.name}: port {port} not open in {timeout} s")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self._out.close()


def _classic(builder: Any) -> Any:
    # PySpark takes the executors' Python from the environment (spark.pyspark.python
    # is read by spark-submit, which a session built in this process does not run).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        builder.appName("cykafka-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _local() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = _classic(SparkSession.builder.master("local[2]"))
    try:
        yield session
    finally:
        session.stop()


def _standalone(tmp: Path) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    url, procs = start_cluster(tmp, ["127.0.0.1"], cores=2)
    session = None
    try:
        session = _classic(
            SparkSession.builder.master(url)
            .config("spark.executor.memory", "512m")
            .config("spark.cores.max", "2")
        )
        # The app is registered; wait until its executor (in the worker) has joined.
        deadline = time.monotonic() + 120
        while session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no executor joined: {(tmp / 'worker0.log').read_text()}")
            time.sleep(0.5)
        yield session
    finally:
        if session is not None:
            session.stop()
        stop_cluster(procs)


def _connect(tmp: Path) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    port = free_port()
    server = _Proc(
        [
            str(_spark_home() / "bin" / "spark-submit"),
            "--master", "local[2]",
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.sql.shuffle.partitions=4",
            "--conf", f"spark.pyspark.python={sys.executable}",
            "--driver-memory", "1g",
            "spark-internal",
        ],
        tmp / "connect.log",
        _env(),
    )  # fmt: skip
    session = None
    saved = {k: os.environ.get(k) for k in CONNECT_ENV}
    try:
        server.wait_port(port)
        session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
        streaming.connect_server_log = server.log
        yield session
    finally:
        streaming.connect_server_log = None
        if session is not None:
            session.stop()
        server.stop()
        # PySpark's remote builder marks the whole process as a Connect client
        # (SPARK_CONNECT_MODE_ENABLED=1 in os.environ): a classic session built later, or
        # a Spark driver started as a subprocess, would then refuse to start.
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_cluster(tmp: Path, hosts: list[str], cores: int = 1) -> tuple[str, list[_Proc]]:
    """A standalone Master on 127.0.0.1 and one Worker per entry of ``hosts`` (distinct
    loopback addresses look like distinct machines to Spark's scheduler, which never
    runs a speculative copy on the host of the attempt it copies).  Returns the master
    URL and the processes, master first, for :func:`stop_cluster`."""
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    env = _env()
    master = _Proc(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        tmp / "master.log",
        env,
    )  # fmt: skip
    procs = [master]
    try:
        master.wait_port(port)
        url = f"spark://127.0.0.1:{port}"
        for i, host in enumerate(hosts):
            procs.append(
                _Proc(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", host,
                     "--webui-port", str(free_port()), "--cores", str(cores), "--memory", "1g",
                     "--work-dir", str(tmp / f"work{i}")],
                    tmp / f"worker{i}.log",
                    {**env, "SPARK_LOCAL_IP": host},
                )
            )  # fmt: skip
    except BaseException:
        stop_cluster(procs)
        raise
    return url, procs


def stop_cluster(procs: list[_Proc]) -> None:
    for p in reversed(procs):
        p.stop()


@pytest.fixture(scope="session", params=DEPLOYMENTS)
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A SparkSession on one real deployment (see the module docs)."""
    with tempfile.TemporaryDirectory(prefix=f"cykafka-spark-{request.param}-") as tmp:
        if request.param == "local":
            yield from _local()
        elif request.param == "standalone":
            yield from _standalone(Path(tmp))
        else:
            yield from _connect(Path(tmp))


@pytest.fixture
def deployment(spark: Any, request: pytest.FixtureRequest) -> str:
    """The name of the deployment ``spark`` runs on (one of DEPLOYMENTS)."""
    name = str(request.node.callspec.params["spark"])
    assert name in DEPLOYMENTS
    return name


@pytest.fixture(scope="module")
def two_host_cluster() -> Iterator[str]:
    """A standalone cluster of two one-core workers on two loopback addresses
    (127.0.0.1 and 127.0.0.2): its master URL, for drivers run in their own process."""
    with tempfile.TemporaryDirectory(prefix="cykafka-spark-2hosts-") as tmp:
        url, procs = start_cluster(Path(tmp), ["127.0.0.1", "127.0.0.2"], cores=1)
        try:
            yield url
        finally:
            stop_cluster(procs)
