"""`./run demo` on a fresh clone: it installs the runtime dependencies alone (the main job
needs neither PySpark nor the test tool-chain), reaches the demo's summary, and a later
`./run tests` still gains the test extra in the same .venv (and a demo after that
installs nothing again).  Minutes of pip and a compile: a soak."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.broker]  # the demo starts the embedded broker

ROOT = Path(__file__).resolve().parents[2]


def _installed(venv: Path, module: str) -> bool:
    code = f"import importlib, sys; sys.exit(importlib.import_module({module!r}) is None)"
    run = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True)
    return run.returncode == 0


def _size_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
    )


def test_a_fresh_clones_demo_installs_only_what_the_main_job_needs(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs the git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CYKAFKA_VENV", "VIRTUAL_ENV")}
    t = time.monotonic()
    demo = subprocess.run(
        ["./run", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=1800
    )
    took = time.monotonic() - t
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "OK: every row was delivered" in demo.stdout
    venv = clone / ".venv"
    print(f"fresh clone: ./run demo took {took:.0f} s, .venv {_size_mb(venv):.0f} MB")
    for module in ("pyarrow", "numpy", "rich", "confluent_kafka"):
        assert _installed(venv, module), module
    for module in ("pyspark", "pytest", "fastavro", "google.protobuf"):
        assert not _installed(venv, module), f"the demo installed {module}"
    # The same .venv then gains the test extra when tests run ...
    tests = subprocess.run(
        ["./run", "tests", "cli/test_cli.py", "-q", "-k", "registry"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert _installed(venv, "pytest") and _installed(venv, "pyspark")
    # ... and a demo after that installs nothing more.
    again = subprocess.run(
        ["./run", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "installing Python dependencies" not in again.stderr, again.stderr
