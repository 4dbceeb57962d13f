"""The commands an import prints after a stop, provoked for real and run as printed
(shlex-split), against the session's Apache Kafka node: each does what it says, the rows
read back once with a ``read_committed`` consumer.  (The embedded broker's advice is in
test_embedded_advice.py.)"""

from __future__ import annotations

import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

from support.cli import child_env, cykafka_command, import_command
from support.consume import read_back
from support.import_signals import stop_after


def _printed_command(out: str, after: str) -> list[str]:
    """The command printed on the line after the one holding ``after``, as a runnable
    argv of this interpreter's cykafka."""
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if after in ln)
    argv = shlex.split(lines[at + 1])
    assert argv[0] == "cykafka", lines[at : at + 2]
    return cykafka_command(*argv[1:])


def _values(bootstrap: str, topic: str, n: int) -> list[bytes]:
    got = read_back(bootstrap, topic, expected=n)
    return sorted(r.value or b"" for recs in got.values() for r in recs)


def test_nothing_handed_over_run_the_same_command_again(kafka: Any, tmp_path: Path) -> None:
    """Ctrl-C before the first row was handed over (--rate paces the first one a second
    in): the advice prints the same command, which imports every row, once."""
    rows = [f'{{"id": {i}}}' for i in range(4)]
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(rows) + "\n")
    topic = kafka.create_topic(f"advice-same-{tmp_path.name[-12:]}", partitions=1)
    cmd = import_command(kafka.bootstrap_servers, str(f), "-t", topic, "--rate", "1")
    status, out, err = stop_after(cmd, signal.SIGINT, "reading", 0.2)
    assert status == 130, (status, out, err)
    assert "nothing was handed over: run the same command again" in out, out
    again = subprocess.run(
        _printed_command(out, "nothing was handed over"),
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, topic, len(rows)) == sorted(r.encode() for r in rows)
