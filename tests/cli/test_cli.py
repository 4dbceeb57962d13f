"""The cykafka command's own face: its subcommands, what it imports lazily, and the
presets and explain commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cykafka.cli import SUBCOMMANDS, main


def test_registry() -> None:
    assert {"presets", "explain"} <= set(SUBCOMMANDS)


def test_heavy_optional_imports_stay_lazy() -> None:
    import subprocess

    heavy = ("pyspark", "pyarrow", "rich", "numpy")
    code = f"import sys, cykafka, cykafka.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["cykafka.cli", "cykafka.broker", "cykafka.launchers.kafka"])
def test_the_command_and_the_brokers_start_without_the_extension(module: str) -> None:
    """The package's face is lazy: what needs no producer does not load the compiled
    extension, the producer or the inspector (`cykafka --help`, the embedded broker and
    the Kafka launcher), and a name of the face loads them when first asked for."""
    import subprocess

    loaded = ("cykafka._native", "cykafka.producer", "cykafka.inspector")
    code = (
        f"import sys, {module}; print([m for m in {loaded!r} if m in sys.modules]); "
        "import cykafka; cykafka.Producer; print('cykafka._native' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"], out.stdout


def test_presets_lists_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for name in ("ordered", "strict_ordered", "exactly_once", "throughput", "at_most_once"):
        assert f"{name}:" in out
    assert "enable.idempotence=true" in out and "transactional.id=<you must supply this>" in out


def test_presets_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets", "nope"]) == 2
    assert "valid presets" in capsys.readouterr().err


def test_explain_properties_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "producer.properties"
    f.write_text("# Java config\nmax.in.flight.requests.per.connection=1\n\nacks = all\n")
    assert main(["explain", str(f)]) == 0
    out = capsys.readouterr().out
    assert "ordering:            none" in out
    assert "NOT an ordering guarantee" in " ".join(out.split())  # report is wrapped


def test_explain_json_file_x_and_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"linger.ms": 10, "sasl.password": "hunter22"}))
    rc = main(
        ["explain", str(f), "-X", "enable.idempotence=false", "--preset", "ordered", "--json"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    d = json.loads(out)
    assert d["ordering"] == "none" and any("overrides preset 'ordered'" in w for w in d["warnings"])
    assert "hunter22" not in out


def test_explain_preset_combo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--preset", "ordered+java_compatible"]) == 0
    out = capsys.readouterr().out
    assert "per-partition" in out and "java-compatible (murmur2)" in out


def test_explain_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "-X", "key.serializer=x"]) == 2
    assert "bytes or str" in capsys.readouterr().err
    assert main(["explain", "-X", "novalue"]) == 2
    assert main(["explain", str(tmp_path / "missing.properties")]) == 2
    assert main(["explain", "--preset", "at_most_once+ordered"]) == 2
    assert "incompatible" in capsys.readouterr().err


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2


def test_bad_x_property_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown or invalid -X property: exit 2 with one line naming it (no traceback,
    no secret value), before an embedded broker is started."""
    monkeypatch.delenv("CYKAFKA_BOOTSTRAP_SERVERS", raising=False)
    f = tmp_path / "a.txt"
    f.write_text("a\n")
    base = ["import", str(f), "-t", "x", "--no-progress"]
    assert main([*base, "-X", "my.app.secret=hunter22"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "cykafka import: error: config property 'my.app.secret': No such configuration "
        'property: "my.app.secret" (from -X or the config file)'
    ]
    assert "hunter22" not in err and "embedded broker" not in err
    assert main([*base, "-b", "127.0.0.1:1", "-X", "compression.type=zip"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "cykafka import: error: config property 'compression.type': Invalid value"
    )
    props = tmp_path / "p.properties"
    props.write_text("ssl.key.password=hunter22\nmy.password=hunter22\n")
    assert main([*base, "-F", str(props)]) == 2
    err = capsys.readouterr().err
    assert "'my.password'" in err and "hunter22" not in err and len(err.splitlines()) == 1
    # explain checks the same way: a config librdkafka refuses gets no guarantees.
    assert main(["explain", "-X", "my.app.secret=hunter22"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cykafka explain: error: config property 'my.app.secret'")
    assert "hunter22" not in err
    assert main(["explain", "-X", "acks=maybe"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "'acks': Invalid value" in err
    # cykafka broker takes no producer properties: argparse's usage error, exit 2.
    with pytest.raises(SystemExit) as exc:
        main(["broker", "-X", "a=b"])
    assert exc.value.code == 2
    assert "unrecognized arguments: -X a=b" in capsys.readouterr().err


def test_version_is_the_installed_distributions() -> None:
    import subprocess
    from importlib.metadata import version

    out = subprocess.run(
        [sys.executable, "-m", "cykafka.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cykafka {version('cykafka')}"


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["import", "IN.txt", "--format", "lines", "-t", "t", "--dry-run"], "1"),
        (["import", "IN.txt", "--format", "lines", "-t", "t", "--dry-run", "@user"], "4"),
        (["top", "SCRIPT.py"], None),
    ],
)
def test_openblas_threads_only_where_no_user_code_runs(
    tmp_path: Path, argv: list[str], expect: str | None
) -> None:
    """The import never multiplies matrices: NumPy's OpenBLAS gets one thread (a value
    the user set is kept).  `cykafka top` runs the user's script: left alone."""
    import os
    import subprocess

    (tmp_path / "IN.txt").write_text("a\nb\n")
    (tmp_path / "SCRIPT.py").write_text("pass\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if "@user" in argv:
        argv = [a for a in argv if a != "@user"]
        env["OPENBLAS_NUM_THREADS"] = "4"
    code = (
        "import os, sys; from cykafka.cli import main; main(sys.argv[1:]); "
        "print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
        env=env, timeout=120,
    )  # fmt: skip
    assert f"BLAS {expect}" in out.stdout.splitlines(), (out.stdout, out.stderr)
