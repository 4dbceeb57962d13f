"""The wheel ``./run wheel`` builds, installed without a compiler into a new virtualenv and
run from outside the source tree: its shape (a manylinux tag, no second librdkafka, the
rpath to confluent-kafka's), a produce, an import and a Spark executor.

The wheel is built once per session (the objects the suite's own install compiled are
reused) and installed once per module; ``CYKAFKA_WHEEL`` names a wheel built before
instead."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cykafka.launchers.kafka import KafkaCluster

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 900):
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, made by ``./run wheel`` into a directory of its own
    (``CYKAFKA_DIST``), or the one ``CYKAFKA_WHEEL`` names."""
    given = os.environ.get("CYKAFKA_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    proc = _run([str(ROOT / "run"), "wheel"], ROOT, dict(os.environ, CYKAFKA_DIST=str(out)))
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.parent == out and path.is_file(), proc.stdout
    # What it prints for people is a command that installs this very file.
    assert f"pip install --only-binary :all: {path}" in proc.stderr, proc.stderr
    return path


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel installed from binaries only (no compiler, no
    headers, no Cython), and pandas, which Spark's Arrow workers import."""
    where = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(where / "env")], where)
    py = where / "env" / "bin" / "python"
    _run(
        [str(py), "-m", "pip", "install", "-q", "--only-binary", ":all:", str(wheel)]
        + ["pandas>=2.2,<3"],
        where,
    )
    return where / "env"


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A working directory outside the source tree, and an environment that points at no
    part of it."""
    assert ROOT not in tmp_path.parents
    yield tmp_path


def _clean_env(**extra: str) -> dict[str, str]:
    # (nor Spark Connect's mode, which a Spark Connect test of this session leaves set)
    connect = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "CYKAFKA_")) and k not in connect
    }
    env.update(extra)
    return env


def test_the_wheel_is_manylinux_and_shares_confluent_kafkas_librdkafka(wheel: Path) -> None:
    m = re.fullmatch(r"cykafka-(?P<v>[^-]+)-cp311-cp311-(?P<plat>.+)\.whl", wheel.name)
    assert m, wheel.name
    assert all(t.startswith("manylinux_") for t in m["plat"].split(".")), m["plat"]
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if "librdkafka" in n], "a second librdkafka was grafted"
    assert "cykafka/py.typed" in names and "cykafka/_native.pyi" in names


def _runpath(so: Path, cwd: Path) -> list[str]:
    dyn = _run(["readelf", "-d", str(so)], cwd).stdout
    return [p for m in re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", dyn) for p in m.split(":")]


def test_the_wheels_extensions_look_for_libraries_only_where_they_should(
    wheel: Path, tmp_path: Path
) -> None:
    """_native's one rpath is confluent-kafka's libs beside it; no directory of the
    machine that built the wheel (the building Python's prefix) is left in either."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    native = next(tmp_path.glob("cykafka/_native*.so"))
    codecs = next(tmp_path.glob("cykafka/_codecs*.so"))
    assert _runpath(native, tmp_path) == ["$ORIGIN/../confluent_kafka.libs"]
    assert _runpath(codecs, tmp_path) == []


def test_an_installed_wheel_links_the_librdkafka_of_confluent_kafka(
    venv: Path, outside: Path
) -> None:
    native = next((venv / "lib").glob("python3*/site-packages/cykafka/_native*.so"))
    dyn = _run(["readelf", "-d", str(native)], outside).stdout
    assert "$ORIGIN/../confluent_kafka.libs" in dyn, dyn
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]", dyn)
    rdkafka = [n for n in needed if n.startswith("librdkafka")]
    assert len(rdkafka) == 1, needed
    assert list(native.parent.parent.glob(f"confluent_kafka.libs/{rdkafka[0]}")), rdkafka
    # The loaded library is that one (the dynamic linker's own answer), in a process
    # that never runs the by-path fallback of cykafka/_load.py.
    probe = textwrap.dedent(
        """
        import json, cykafka
        from cykafka import _native
        maps = [l.split()[-1] for l in open("/proc/self/maps") if "librdkafka" in l]
        print(json.dumps({"file": cykafka.__file__, "libs": sorted(set(maps)),
                          "version": cykafka.librdkafka_version()}))
        """
    )
    out = json.loads(_run([str(venv / "bin/python"), "-c", probe], outside, _clean_env()).stdout)
    assert out["file"].startswith(str(venv)), out
    assert len(out["libs"]) == 1 and "/confluent_kafka.libs/" in out["libs"][0], out
    assert out["version"].startswith("2.16"), out


def test_a_produce_from_the_wheel(venv: Path, outside: Path, kafka: KafkaCluster) -> None:
    from support.consume import committed_records

    topic = kafka.create_topic("wheel-produce", partitions=2)
    script = textwrap.dedent(
        f"""
        import cykafka
        assert cykafka.__file__.startswith({str(venv)!r}), cykafka.__file__
        with cykafka.Producer({{"bootstrap.servers": {kafka.bootstrap_servers!r}}},
                              preset="ordered") as p:
            report = p.produce_batch({topic!r}, [f"row {{i}}" for i in range(1000)],
                                     keys=[f"k{{i % 7}}" for i in range(1000)]).result()
        print(report.delivered)
        """
    )
    out = _run([str(venv / "bin/python"), "-c", script], outside, _clean_env()).stdout
    assert out.split() == ["1000"], out
    got = committed_records(kafka.bootstrap_servers, topic)
    assert sorted(r.value for r in got) == sorted(f"row {i}".encode() for i in range(1000))


def test_an_import_from_the_wheel(venv: Path, outside: Path, kafka: KafkaCluster) -> None:
    from support.consume import committed_records

    topic = kafka.create_topic("wheel-import", partitions=3)
    rows = [{"id": i, "name": f"n{i}"} for i in range(500)]
    (outside / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = _run(
        [str(venv / "bin/cykafka"), "import", "rows.jsonl", "--topic", topic]
        + ["--bootstrap-servers", kafka.bootstrap_servers, "--no-progress"],
        outside,
        _clean_env(),
    )
    assert "500" in proc.stdout + proc.stderr
    got = committed_records(kafka.bootstrap_servers, topic)
    assert sorted(json.loads(r.value)["id"] for r in got) == list(range(500))


SPARK_DRIVER = """
import json, sys
from pyspark.sql import SparkSession
from cykafka.spark import write_kafka

servers, topic, executor_python = sys.argv[1:]
spark = (SparkSession.builder.master("local[2]").appName("wheel")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.pyspark.python", executor_python).getOrCreate())
df = spark.range(2000, numPartitions=4).selectExpr(
    "cast(id % 10 as string) as key", "cast(id as string) as value")
report = write_kafka(df, topic, bootstrap_servers=servers, preset="ordered")

def where(batches):
    import pyarrow as pa, cykafka, sys
    for _ in batches:
        pass
    yield pa.record_batch({"python": [sys.executable], "cykafka": [cykafka.__file__]})

seen = spark.range(4, numPartitions=2).mapInArrow(where, "python string, cykafka string")
print(json.dumps({"delivered": report.delivered,
                  "executors": [r.asDict() for r in seen.collect()]}))
spark.stop()
"""


@pytest.mark.spark
def test_a_spark_executor_runs_the_wheel(venv: Path, outside: Path, kafka: KafkaCluster) -> None:
    """The driver is this suite's Python (it has PySpark); the executors run the
    virtualenv's, which has the wheel, pandas and nothing else (Spark ships PySpark)."""
    from support.consume import committed_records

    topic = kafka.create_topic("wheel-spark", partitions=2)
    (outside / "driver.py").write_text(SPARK_DRIVER)
    py = str(venv / "bin/python")
    env = _clean_env(PYSPARK_PYTHON=py, SPARK_LOCAL_IP="127.0.0.1")
    proc = _run([sys.executable, "driver.py", kafka.bootstrap_servers, topic, py], outside, env)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["delivered"] == 2000, out
    for ex in out["executors"]:
        assert ex["python"] == py and ex["cykafka"].startswith(str(venv)), out
    got = committed_records(kafka.bootstrap_servers, topic)
    assert sorted(int(r.value) for r in got) == list(range(2000))


#: The documentation's examples that need nothing beyond the wheel's own dependencies
#: (the embedded broker included): the others need an extra, Java or pytest.
BASE_EXAMPLES = ["quickstart.py", "aproduce.py", "require.py", "committed_view.py",
                 "inspector.py", "ordering.py"]  # fmt: skip


@pytest.mark.parametrize("example", BASE_EXAMPLES)
def test_the_docs_examples_run_from_the_wheel(venv: Path, outside: Path, example: str) -> None:
    """What a reader of the docs runs after ``pip install`` of the wheel: the example,
    copied out of the tree, with the virtualenv's Python and nothing of the checkout."""
    (outside / example).write_text((ROOT / "docs" / "examples" / example).read_text())
    proc = _run([str(venv / "bin/python"), example], outside, _clean_env(), timeout=300)
    assert proc.stdout.strip(), proc.stderr
