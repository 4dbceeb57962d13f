"""docs/spark.md's deployments, run as a reader runs them: each deployment's shell block
through bash with PySpark's ``bin/`` on PATH, then its Python block in a fresh
interpreter with only the imports a reader writes, against the session's Apache Kafka;
what the block wrote is read back.  The Structured Streaming fragment runs on the
standalone cluster, over a real ``in/`` directory, into ``chk/``.

The blocks are parsed from the page, never copied here: an edit to the page is what runs.
What the test changes in them, and why: ``127.0.0.1:PORT`` becomes the broker's address,
``/path/to/venv/bin/python`` this interpreter, and each fixed Spark port a free one (below).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cykafka.launchers.process import dies_with_this_process, free_port
from support.consume import committed_records

# Each runs Spark's launchers and drivers of its own.
pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent
PAGE = HERE.parents[1] / "docs" / "spark.md"

#: What a reader puts above a fragment of the page (the page's first example shows them).
READER_IMPORTS = (
    "from pyspark.sql import SparkSession\n"
    "from pyspark.sql import functions as F\n"
    "from cykafka.spark import write_kafka, kafka_batch_writer\n"
)
#: The page's placeholders: the reader's broker, and the virtualenv that has cykafka.
BROKER, VENV_PYTHON = "127.0.0.1:PORT", "/path/to/venv/bin/python"
#: What PySpark leaves in os.environ once this process was a Spark Connect client.
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")

#: Appended to a deployment's block: the checks on its ``report``, and the rows its ``df``
#: holds, in the DataFrame's order, for the read-back.
CHECK_REPORT = """
import json as _json
_rows = [[r["key"], r["value"]] for r in df.select("key", "value").collect()]
assert report.ok, str(report)
assert report.delivered == report.rows == len(_rows), (str(report), len(_rows))
with open("rows.json", "w") as _f:
    _json.dump(_rows, _f)
"""


def _section(heading: str) -> str:
    text = PAGE.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def _fenced(section: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block of ``section``, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", section, flags=re.S | re.M)


@dataclass(frozen=True)
class Deployment:
    shell: str
    python: str
    port: int  # the Spark port the Python block connects to, as printed


def _deployments() -> dict[str, Deployment]:
    """The page's deployments: each a shell block followed by the Python block that
    connects to what it started, by the kind of URL that block connects to."""
    blocks = _fenced(_section("Deployments"))
    out = {}
    for (lang, shell), (next_lang, python) in zip(blocks, blocks[1:]):
        if lang not in ("sh", "bash") or next_lang != "python":
            continue
        m = re.search(r'\.(master|remote)\("(?:spark|sc)://127\.0\.0\.1:(\d+)"\)', python)
        assert m, f"a Python block that connects to no Spark:\n{python}"
        kind = {"master": "standalone", "remote": "connect"}[m[1]]
        out[kind] = Deployment(shell, python, int(m[2]))
    assert set(out) == {"standalone", "connect"}, sorted(out)
    return out


def _streaming_fragment() -> str:
    (python,) = [
        body for lang, body in _fenced(_section("Structured Streaming")) if lang == "python"
    ]
    return python


def _cykafka_call(code: str) -> tuple[str, dict[str, Any]]:
    """The topic and the constant keyword arguments of the block's cykafka call."""
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("write_kafka", "kafka_batch_writer")
        ):
            topic = [a.value for a in node.args if isinstance(a, ast.Constant)][0]
            kwargs = {
                k.arg: k.value.value
                for k in node.keywords
                if k.arg and isinstance(k.value, ast.Constant)
            }
            return topic, kwargs
    raise AssertionError(f"no cykafka call in\n{code}")


def _substituted(text: str, fixed: int, port: int, broker: str = BROKER) -> str:
    return (
        re.sub(rf"\b{fixed}\b", str(port), text)
        .replace(BROKER, broker)
        .replace(VENV_PYTHON, sys.executable)
    )


def _fresh_topic(kafka: Any, name: str, partitions: int) -> None:
    """The topic the block writes to, new; and no progress an earlier run recorded
    (exactly_once keeps it in ``<topic>.cykafka-progress``)."""
    have = kafka.list_topics()
    for t in (name, f"{name}.cykafka-progress"):
        if t in have:
            kafka.delete_topic(t)
    kafka.create_topic(name, partitions=partitions)


def _spark_conftest(config: pytest.Config) -> Any:
    # By name, ``conftest`` may be tests/conftest.py: the plugin manager knows them apart.
    return config.pluginmanager.get_plugin(str(HERE / "conftest.py"))


def _cykafka_path() -> dict[str, str]:
    """No PYTHONPATH, as a reader has none (this process's would hand any Python the
    virtualenv's packages): cykafka comes from where it was installed, or from a
    checkout's ``src`` alone when the tests run from one."""
    import site

    import cykafka

    where = Path(cykafka.__file__).resolve().parents[1]
    installed = {Path(p).resolve() for p in site.getsitepackages()}
    return {} if where in installed else {"PYTHONPATH": str(where)}


def _reader_env(launch: Any, tmp: Path, venv_active: bool) -> dict[str, str]:
    """A reader's shell, with PySpark's launchers on PATH, and the virtualenv that has
    cykafka active or not (``python3`` is the one Spark runs for Python workers unless
    PYSPARK_PYTHON names another: what the page sets is then what counts).  Spark's
    launchers are reached through shims that make each die with the bash that runs the
    block, which dies with this process: a test run killed leaves no JVM behind."""
    shims = tmp / "bin"
    shims.mkdir(exist_ok=True)
    for name in ("spark-class", "spark-submit"):
        real = [str(launch._spark_home() / "bin" / name)]
        (shims / name).write_text(
            f'#!/bin/sh\nexec {shlex.join(dies_with_this_process(real))} "$@"\n'
        )
        (shims / name).chmod(0o755)
    drop = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", *CONNECT_ENV)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(_cykafka_path(), PYTHONUNBUFFERED="1")
    # SPARK_HOME, and SPARK_LOCAL_IP=127.0.0.1: the blocks bind to 127.0.0.1, and a
    # test machine's hostname need not resolve to an address executors can reach.
    env.update({k: v for k, v in launch._env().items() if k in ("SPARK_HOME", "SPARK_LOCAL_IP")})
    venv = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv]
    first = [str(shims), str(launch._spark_home() / "bin"), *([venv] if venv_active else [])]
    env["PATH"] = os.pathsep.join(first + path)
    # The web UIs' fixed ports (the master's 8080, the worker's 8081) are not in the
    # blocks; free ones keep a parallel test worker's Spark from taking them (a driver's
    # 4040 moves to the next free port by itself).
    env["SPARK_MASTER_WEBUI_PORT"] = str(free_port())
    env["SPARK_WORKER_WEBUI_PORT"] = str(free_port())
    (tmp / "work").mkdir(exist_ok=True)
    env["SPARK_WORKER_DIR"] = str(tmp / "work")  # not inside the venv's pyspark
    return env


def _run_shell(launch: Any, block: str, tmp: Path, env: dict[str, str]) -> Any:
    """The block through bash, in ``tmp``: a ``_Proc``, stopped with its process group."""
    # ``wait``: the reader's terminal stays open while what it started runs.
    return launch._Proc(["bash", "-c", block + "\nwait\n"], tmp / "shell.log", env, cwd=tmp)


def _run_python(code: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """``code`` in a fresh interpreter in ``cwd``: its output; fails on a non-zero exit.
    Its process group (the driver's JVM too) is killed whatever happens."""
    script, log = cwd / "block.py", cwd / "block.log"
    script.write_text(code)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            dies_with_this_process([sys.executable, str(script)]),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    text = log.read_text(errors="replace")
    assert rc == 0, f"the block exited {rc}:\n{code}\n---\n{text[-6000:]}"
    return text


def _started(proc: Any, port: int, line: str = "", timeout: float = 180) -> None:
    """Until ``port`` is open and the shell's output has ``line``; else what it printed."""
    deadline = time.monotonic() + timeout
    try:
        proc.wait_port(port, timeout)
        while line not in proc.log.read_text(errors="replace"):
            if proc.proc.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"no {line!r} in {timeout} s")
            time.sleep(0.5)
    except (TimeoutError, RuntimeError) as e:
        raise AssertionError(f"{e}\n{proc.log.read_text(errors='replace')[-4000:]}") from None


def _check_read_back(kafka: Any, cwd: Path, topic: str, partitions: int, ordered: bool) -> int:
    """Every row the block's DataFrame held is in the topic once; with ``ordered``, each
    key's rows in the DataFrame's order.  The number of rows."""
    rows = [tuple(r) for r in json.loads((cwd / "rows.json").read_text())]
    view = committed_records(kafka.bootstrap_servers, topic, partitions)
    got = [(r.key.decode(), r.value.decode()) for r in view]
    assert sorted(got) == sorted(rows)
    if ordered:
        for key in {k for k, _ in rows}:
            assert [v for k, v in got if k == key] == [v for k, v in rows if k == key], key
    return len(rows)


# First: the module's standalone cluster is not up yet while it runs.
def test_the_spark_connect_deployment_runs_as_printed(pytestconfig, kafka, tmp_path) -> None:
    launch = _spark_conftest(pytestconfig)
    d = _deployments()["connect"]
    topic, kwargs = _cykafka_call(d.python)
    _fresh_topic(kafka, topic, partitions=3)
    assert BROKER in d.python
    # The server's shell has no virtualenv active: the page says to give the server the
    # Python that has cykafka, and its PYSPARK_PYTHON is what does.
    env = _reader_env(launch, tmp_path, venv_active=False)
    # The page's 15002 could be a parallel test worker's Connect server: a free port
    # instead, the same in the shell block and the Python block.
    port = free_port()
    assert str(d.port) in d.shell, f"the shell block starts no server on {d.port}"
    server = _run_shell(launch, _substituted(d.shell, d.port, port), tmp_path, env)
    try:
        _started(server, port)
        code = _substituted(d.python, d.port, port, kafka.bootstrap_servers)
        out = _run_python(READER_IMPORTS + code + CHECK_REPORT, tmp_path, env)
    finally:
        server.stop()
    assert "|task" in out, out[-3000:]  # the block's report.to_df(spark)...show()
    n = _check_read_back(kafka, tmp_path, topic, 3, ordered=kwargs.get("preset") == "ordered")
    assert n > 0


@dataclass
class Standalone:
    deployment: Deployment
    port: int
    env: dict[str, str]


@pytest.fixture(scope="module")
def standalone(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Standalone]:
    """The page's standalone cluster, started by its shell block."""
    launch = _spark_conftest(pytestconfig)
    d = _deployments()["standalone"]
    tmp = tmp_path_factory.mktemp("standalone")
    # The virtualenv active, as where cykafka[spark] was installed: the page sets no
    # PYSPARK_PYTHON here, so the executors run the ``python3`` on the worker's PATH.
    env = _reader_env(launch, tmp, venv_active=True)
    # The page's 7077 could be a parallel test worker's master: a free port instead,
    # the same in the shell block and the Python block.
    port = free_port()
    assert str(d.port) in d.shell, f"the shell block starts no master on {d.port}"
    shell = _run_shell(launch, _substituted(d.shell, d.port, port), tmp, env)
    try:
        _started(shell, port, "Successfully registered with master")  # the worker's line
        yield Standalone(d, port, env)
    finally:
        shell.stop()


def test_the_standalone_deployment_runs_as_printed(standalone, kafka, tmp_path) -> None:
    d = standalone.deployment
    topic, kwargs = _cykafka_call(d.python)
    _fresh_topic(kafka, topic, partitions=4)
    assert BROKER in d.python
    code = _substituted(d.python, d.port, standalone.port, kafka.bootstrap_servers)
    _run_python(READER_IMPORTS + code + CHECK_REPORT, tmp_path, standalone.env)
    n = _check_read_back(kafka, tmp_path, topic, 4, ordered=kwargs.get("preset") == "ordered")
    assert n > 0


def test_the_streaming_fragment_runs_on_the_standalone_cluster(standalone, kafka, tmp_path) -> None:
    """The fragment over two CSV files in ``in/``; then, as the page says, Spark's commit
    of batch 0 removed (a crash before it) and the query run again: nothing new is
    written, and the report says the rows were committed already."""
    fragment = _streaming_fragment()
    topic, _ = _cykafka_call(fragment)
    _fresh_topic(kafka, topic, partitions=2)
    d = standalone.deployment
    session = ast.get_source_segment(d.python, ast.parse(d.python).body[0])
    assert session is not None and "SparkSession.builder" in session, session
    (tmp_path / "in").mkdir()
    rows = [(f"user-{i % 5}", f"event-{i}") for i in range(80)]
    for part in range(2):
        (tmp_path / "in" / f"part-{part}.csv").write_text(
            "".join(f"{k},{v}\n" for k, v in rows[part * 40 : (part + 1) * 40])
        )
    code = READER_IMPORTS + "\n".join([session, fragment])
    code = _substituted(code, d.port, standalone.port, kafka.bootstrap_servers)

    def printed() -> list[str]:
        out = _run_python(code, tmp_path, standalone.env)
        return [ln for ln in out.splitlines() if ln.startswith("write_kafka: ")]

    first = printed()  # one micro-batch, batch 0: on_batch=print printed its report
    assert len(first) == 1 and first[0].startswith(
        f"write_kafka: {len(rows)} rows, {len(rows)} delivered, 0 failed"
    ), first
    view = committed_records(kafka.bootstrap_servers, topic, 2)
    assert sorted((r.key.decode(), r.value.decode()) for r in view) == sorted(rows)

    for f in [tmp_path / "chk" / "commits" / "0", tmp_path / "chk" / "commits" / ".0.crc"]:
        f.unlink(missing_ok=True)
    again = printed()  # batch 0 again
    assert (
        len(again) == 1 and f"{len(rows)} rows already committed by an earlier attempt" in again[0]
    ), again
    view = committed_records(kafka.bootstrap_servers, topic, 2)
    assert sorted((r.key.decode(), r.value.decode()) for r in view) == sorted(rows)
