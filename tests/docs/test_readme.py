"""The README's `./run demo` output is what the demo prints: the same lines, in the same
order, up to the numbers, ports and temporary paths that change from run to run."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# `./run demo` imports into the embedded broker.
pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]


def _shape(line: str) -> str:
    line = re.sub(r"/tmp/\S+", "PATH", line)
    return re.sub(r"\d[\d,.]*", "N", line).rstrip()


def test_the_readme_shows_what_the_demo_prints() -> None:
    readme = (ROOT / "README.md").read_text()
    after = readme[readme.index("`./run demo` prints") :]
    shown = re.search(r"```\n(.*?)```", after, flags=re.S)
    assert shown is not None
    cli = shutil.which("cykafka", path=str(Path(sys.executable).parent)) or "cykafka"
    # What ./run demo runs, output captured (not a terminal), as the README says.
    done = subprocess.run(
        [cli, "import", "--sample", "200000", "--topic", "demo"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stderr.splitlines() + done.stdout.splitlines()
    assert [_shape(x) for x in shown.group(1).splitlines()] == [_shape(x) for x in printed]
