"""The ``cykafka`` command as the tests run it: in this process through ``main``, or as a
child process that imports the same installed package as the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any


def import_in_process(broker: Any, *args: str) -> int:
    """``cykafka import`` to ``broker`` in this process, without the progress bar: its
    exit status (the output is left to ``capsys``)."""
    from cykafka.cli import main

    return main(["import", "-b", broker.bootstrap_servers, "--no-progress", *args])


def cykafka_command(*args: str) -> list[str]:
    """The argv of ``cykafka ARGS`` as a child of this interpreter."""
    return [sys.executable, "-m", "cykafka.cli", *args]


def import_command(bootstrap: str, *args: str) -> list[str]:
    """The argv of ``cykafka import -b BOOTSTRAP --no-progress ARGS`` as a child."""
    return cykafka_command("import", "-b", bootstrap, "--no-progress", *args)


def child_env(extra: Mapping[str, str] = {}, drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment for a child Python: our ``sys.path`` as its
    ``PYTHONPATH`` (the package under test and ``tests/`` for ``support``), output
    unbuffered so that a test can read it line by line; ``extra`` added, ``drop`` removed."""
    env = {k: v for k, v in os.environ.items() if k not in set(drop)}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run_cykafka(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cykafka ARGS`` as a child to its end: status and output as text."""
    kw.setdefault("env", child_env())
    return subprocess.run(
        cykafka_command(*args), capture_output=True, text=True, timeout=timeout, **kw
    )


def run_import_command(
    bootstrap: str, *args: str, timeout: float = 120, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """Run ``cykafka import -b BOOTSTRAP --no-progress ARGS`` as a child to its end."""
    return run_cykafka("import", "-b", bootstrap, "--no-progress", *args, timeout=timeout, **kw)
