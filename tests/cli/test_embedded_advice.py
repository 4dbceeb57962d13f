"""What an import into the embedded broker advises, run as printed: the broker is started
for the import and stopped with it, its topics in memory, so a stopped import is
finished only by importing everything again (never by ``--skip-rows`` or an
exactly-once resume, which would start a new, empty broker and leave the first rows
nowhere)."""

from __future__ import annotations

import shlex
import signal
import subprocess

import pytest

from support.cli import child_env, cykafka_command, run_cykafka
from support.import_signals import stop_after

pytestmark = pytest.mark.broker  # each run starts its own embedded broker

ROWS = 100_000


def _count(out: str, label: str) -> int:
    line = next(x for x in out.splitlines() if x.strip().startswith(label))
    return int(line.split()[len(label.split())].replace(",", ""))


def _advice(out: str) -> list[str]:
    """The printed command that finishes the import, as a runnable argv of this
    interpreter's cykafka."""
    line = next(x for x in out.splitlines() if x.strip().startswith("cykafka import"))
    argv = shlex.split(line)
    assert argv[0] == "cykafka"
    return cykafka_command(*argv[1:])


@pytest.mark.parametrize("mode", [[], ["--exactly-once", "--commit-every", "1000"]], ids=["plain", "exactly-once"])  # fmt: skip
def test_a_stopped_embedded_import_advises_a_full_rerun_that_finishes(mode: list[str]) -> None:
    cmd = cykafka_command(
        "import", "--sample", str(ROWS), "-t", "orders", "--no-progress",
        "--rate", "40000", *mode,
    )  # fmt: skip
    status, out, err = stop_after(cmd, signal.SIGINT, "reading", 0.5)
    assert status == 130, (status, out, err)
    read, delivered = _count(out, "rows read"), _count(out, "delivered")
    assert 0 < read < ROWS, out
    assert "--skip-rows" not in out and "resumes after the last commit" not in out, out
    assert "its data was in memory" in out and "import everything again" in out, out
    rerun = _advice(out)
    assert "--skip-rows" not in rerun
    again = subprocess.run(rerun, capture_output=True, text=True, timeout=300, env=child_env())
    assert again.returncode == 0, again.stdout + again.stderr
    # The rerun imports every row, not the rest: nothing exists only in the stopped
    # broker's memory.
    assert _count(again.stdout, "rows read") == ROWS, again.stdout
    assert _count(again.stdout, "delivered") == ROWS, again.stdout
    assert "OK: every row was delivered" in again.stdout
    assert delivered <= read


def test_skip_rows_into_the_embedded_broker_is_refused(tmp_path) -> None:
    f = tmp_path / "rows.csv"
    f.write_text("id\n1\n2\n3\n")
    out = run_cykafka("import", "-t", "t", "--skip-rows", "2", str(f))
    assert out.returncode == 2
    assert "--skip-rows goes on from an import into a cluster that holds the rows" in out.stderr
    assert "embedded broker starts empty" in out.stderr


def test_the_embedded_brokers_closing_advice_runs_as_printed(tmp_path) -> None:
    """After a complete import: `--keep-broker` keeps the topic readable (its advice),
    and that run's own advice, Ctrl-C, stops it."""
    f = tmp_path / "rows.csv"
    f.write_text("id,user\n1,a\n2,b\n")
    first = run_cykafka("import", "-t", "t", "--no-progress", str(f))
    assert first.returncode == 0, first.stderr
    assert "use --keep-broker to read the topic afterwards" in first.stdout
    cmd = [*cykafka_command("import", "-t", "t", "--no-progress", str(f)), "--keep-broker"]
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = []
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("Embedded broker still running"):
                    break
            said = lines[-1]
            assert "Press Ctrl-C to stop it." in said, lines
            bootstrap = said.split("bootstrap.servers=", 1)[1].split()[0]
            from cykafka.cluster.reach import probe_topic

            assert probe_topic(bootstrap, {}, "t", 30) == (3, None)  # readable, as said
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
            assert proc.returncode in (0, 130)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_advice_to_run_a_broker_of_ones_own_runs_as_printed(tmp_path) -> None:
    """ "or run `cykafka broker ...` and pass --bootstrap-servers ADDR": that broker, run as
    printed, takes the same import with that flag, and holds its rows afterwards."""
    from support.consume import read_back

    rows = [f"{i},user-{i % 5}" for i in range(500)]
    f = tmp_path / "rows.csv"
    f.write_text("id,user\n" + "\n".join(rows) + "\n")
    argv = ["import", str(f), "-t", "kept", "--no-progress"]
    first = run_cykafka(*argv, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    said = next(ln for ln in first.stdout.splitlines() if ln.startswith("Embedded broker on"))
    broker_cmd = said.split("or run `", 1)[1].split("`", 1)[0]
    flag, address = said.rsplit("pass ", 1)[1].rstrip(".").split()
    assert flag == "--bootstrap-servers", said
    assert shlex.split(broker_cmd)[:2] == ["cykafka", "broker"], said
    port = int(address.rsplit(":", 1)[1])
    if not _port_free(port):
        pytest.skip(f"port {port}, the one `cykafka broker` takes by default, is in use here")
    with subprocess.Popen(
        cykafka_command(*shlex.split(broker_cmd)[1:]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    ) as broker:
        try:
            assert broker.stdout is not None
            for line in broker.stdout:
                if line.startswith("Press Ctrl-C to stop."):
                    break
            else:
                raise AssertionError(broker.stderr.read() if broker.stderr else "")
            again = run_cykafka(*argv, flag, address, timeout=300)
            assert again.returncode == 0, again.stdout + again.stderr
            assert "OK: every row was delivered" in again.stdout, again.stdout
            # The rows are still there once the import has ended: each once.
            got = read_back(address, "kept", expected=len(rows))
            values = sorted(r.value for recs in got.values() for r in recs)
            assert len(values) == len(rows) and len(set(values)) == len(rows), len(values)
            assert len(got) == 3, sorted(got)  # the partitions the embedded broker had
        finally:
            broker.send_signal(signal.SIGINT)
            try:
                broker.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                broker.kill()
                broker.communicate()
