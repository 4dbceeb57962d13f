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

import pytest

from support.cli import child_env, cykafka_command, import_command, run_cykafka
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


def _count(out: str, label: str) -> int:
    line = next(x for x in out.splitlines() if x.strip().startswith(label))
    return int(line.split()[len(label.split())].replace(",", ""))


def test_unknown_rows_check_them_first_with_the_verify_printed(
    fresh_broker: Any, tmp_path: Path
) -> None:
    """The broker stalls (SIGSTOP) with rows in flight, then Ctrl-C: rows end unknown,
    and the verify printed for them, run as printed once the broker is back, reads the
    topic and says how many of the input's rows it holds: what a consumer reads."""
    import os
    import time

    from support.import_signals import wait_for

    bs = fresh_broker.bootstrap_servers
    topic = fresh_broker.create_topic("stalled", partitions=1)
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(f'{{"id": {i}}}\n' for i in range(20_000)))
    cmd = import_command(bs, str(f), "-t", topic, "--rate", "2000", "--dead-letter", "dead.jsonl")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        wait_for(proc, "reading")
        time.sleep(1.5)  # a point within the run: rows delivered, more on the way
        os.kill(fresh_broker.pid, signal.SIGSTOP)
        try:
            time.sleep(1.0)  # rows sent meanwhile stay unacknowledged
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            os.kill(fresh_broker.pid, signal.SIGCONT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert _count(out, "unknown") > 0, out
    assert "may be in the topic: check them first" in out, out
    verify = _printed_command(out, "check them first")
    assert verify[3] == "verify" and str(f) in verify and "--dead-letter" not in verify, verify
    checked = subprocess.run(
        verify, capture_output=True, text=True, timeout=120, env=child_env(), cwd=tmp_path
    )
    # A mismatch (the rest of the input is missing), said, not a usage error.
    assert checked.returncode == 1, checked.stdout + checked.stderr
    held = _count(checked.stdout, "in topic")
    assert _count(checked.stdout, "duplicated") == 0, checked.stdout
    consumed = read_back(bs, topic, expected=held)
    assert sum(len(r) for r in consumed.values()) == held, checked.stdout
    assert _count(out, "delivered") <= held <= _count(out, "rows read"), (out, checked.stdout)


def test_a_lost_progress_log_advises_a_verify_and_a_restart_that_run(
    fresh_broker: Any, tmp_path: Path
) -> None:
    """The broker restarts without its data mid-way through an exactly-once import: the
    error prints the verify to read the topic (it says the rows are gone) and the rerun
    with --restart, which, run as printed, commits every row once."""
    from support.import_signals import lose_the_log_mid_import

    bs = fresh_broker.bootstrap_servers
    name = fresh_broker.create_topic("lost", partitions=1)
    rows = [f'{{"id": {i}}}' for i in range(3000)]
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(rows) + "\n")
    args = [str(f), "-t", name, "--exactly-once", "--commit-every", "100", "--rate", "1000"]
    cmd = import_command(bs, *args)
    status, out = lose_the_log_mid_import(fresh_broker, name, cmd)
    assert status != 0, out
    assert "with --restart if its rows are gone" in out, out
    verify = _printed_command(out, "read the topic first:")
    restart = _printed_command(out, "if its rows are gone, import everything again:")
    assert verify[3] == "verify" and restart[3:] == [*cmd[3:], "--restart"], out
    checked = subprocess.run(verify, capture_output=True, text=True, timeout=120, env=child_env())
    assert checked.returncode == 1, checked.stdout + checked.stderr  # rows are gone: said
    assert _count(checked.stdout, "in topic") < len(rows), checked.stdout
    again = subprocess.run(restart, capture_output=True, text=True, timeout=300, env=child_env())
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(bs, name, len(rows)) == sorted(r.encode() for r in rows)
    after = subprocess.run(verify, capture_output=True, text=True, timeout=120, env=child_env())
    assert after.returncode == 0, after.stdout + after.stderr


#: Inputs an import refuses with a "pass --FLAG" advice: (file name, its bytes, the
#: advice as printed, the flags the advice says to pass, the values the topic then holds).
REFUSED_INPUTS = {
    "empty": ("rows.csv", b"", "pass --allow-empty", ["--allow-empty"], []),
    "format": (
        "rows.data",
        b'{"id":1}\n{"id":2}\n',
        "pass --format csv|jsonl|parquet|lines",
        ["--format", "jsonl"],  # one of the choices printed
        [b'{"id":1}', b'{"id":2}'],
    ),
    "header": (
        "rows.csv",
        b"1,2\n3,4\n",
        "pass --no-header (and --column-names a,b,...)",
        ["--no-header", "--column-names", "a,b"],
        [b'{"a":1,"b":2}', b'{"a":3,"b":4}'],
    ),
    "encoding": (
        "rows.csv",
        "id,name\n1,café\n2,naïve\n".encode("cp1252"),
        "pass --encoding cp1252",
        ["--encoding", "cp1252"],
        ['{"id":1,"name":"café"}'.encode(), '{"id":2,"name":"naïve"}'.encode()],
    ),
}


@pytest.mark.parametrize("case", list(REFUSED_INPUTS))
def test_a_refused_inputs_advice_applied_as_printed_imports_it(
    case: str, kafka: Any, tmp_path: Path
) -> None:
    name, body, advice, flags, values = REFUSED_INPUTS[case]
    f = tmp_path / name
    f.write_bytes(body)
    topic = kafka.create_topic(f"advice-{case}-{tmp_path.name[-12:]}", partitions=1)
    argv = ["import", "-b", kafka.bootstrap_servers, "--no-progress", str(f), "-t", topic]
    first = run_cykafka(*argv)
    assert first.returncode == 2, first.stdout + first.stderr
    assert advice in first.stderr, first.stderr
    again = run_cykafka(*argv, *flags)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, topic, len(values)) == sorted(values)


def test_a_missing_topics_advice_applied_as_printed_creates_it(kafka: Any, tmp_path: Path) -> None:
    """ "create it, or pass --partitions N to create it with N partitions"."""
    f = tmp_path / "rows.jsonl"
    f.write_text('{"id":1}\n{"id":2}\n{"id":3}\n')
    topic = f"advice-missing-{tmp_path.name[-12:]}"
    argv = ["import", "-b", kafka.bootstrap_servers, "--no-progress", str(f), "-t", topic]
    first = run_cykafka(*argv)
    assert first.returncode != 0, first.stdout + first.stderr
    assert "or pass --partitions N to create it with N partitions" in first.stderr, first.stderr
    again = run_cykafka(*argv, "--partitions", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    got = read_back(kafka.bootstrap_servers, topic, expected=3)
    assert len(got) <= 2 and sum(len(r) for r in got.values()) == 3, got


def test_ctrl_c_that_also_ends_a_piped_input_is_a_stop(kafka: Any, tmp_path: Path) -> None:
    """Ctrl-C at a terminal signals the whole pipeline (``gen | cykafka import -``): the
    writer's end closes the pipe as the import's handler runs.  The import says it was
    stopped (exit 130), not "OK: the input holds no rows" (exit 0)."""
    import time

    topic = kafka.create_topic(f"advice-pipe-{tmp_path.name[-12:]}", partitions=1)
    cmd = import_command(kafka.bootstrap_servers, "-", "-t", topic, "--format", "jsonl")
    # The with-block closes the pipes and reaps the child.
    with subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    ) as proc:
        try:
            from support.import_signals import wait_for

            wait_for(proc, "reading")
            time.sleep(0.5)  # waiting on the pipe
            proc.send_signal(signal.SIGINT)
            assert proc.stdin is not None
            proc.stdin.close()  # the writer ended by the same Ctrl-C
            proc.wait(timeout=60)  # (its output is a summary: the pipes hold it)
            assert proc.stdout is not None and proc.stderr is not None
            out, err = proc.stdout.read(), proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert "interrupted (Ctrl-C) before the end of the input" in out, out
    assert "nothing was handed over: run the same command again" in out, out


def _import(kafka: Any, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        import_command(kafka.bootstrap_servers, *args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env=child_env(),
    )


def _rows(tmp_path: Path, n: int = 50, name: str = "rows.jsonl") -> tuple[Path, list[bytes]]:
    rows = [f'{{"id": {i}, "user": "u{i % 3}"}}' for i in range(n)]
    f = tmp_path / name
    f.write_text("\n".join(rows) + "\n")
    return f, sorted(r.encode() for r in rows)


def test_stdin_exactly_once_advice_pass_restart_runs(kafka: Any, tmp_path: Path) -> None:
    """ "... cannot be read from a position; pass --restart to import it in transactions
    from the first row": with it, every row committed once."""
    f, want = _rows(tmp_path)
    topic = kafka.create_topic(f"advice-stdin-eo-{tmp_path.name[-12:]}", partitions=1)
    args = ["-", "-t", topic, "--format", "jsonl", "--exactly-once"]
    first = _import(kafka, *args, stdin=f.read_text())
    assert first.returncode == 2, first.stdout + first.stderr
    assert "pass --restart to import it in transactions from the first row" in first.stderr
    again = _import(kafka, *args, "--restart", stdin=f.read_text())
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, topic, len(want)) == want


def test_a_transactional_id_of_another_topic_advice_runs(kafka: Any, tmp_path: Path) -> None:
    """ "the saved progress of this transactional.id is an import into topic A, not B; use
    another --transactional-id": with another, B gets every row once, A keeps its own."""
    f, want = _rows(tmp_path)
    a = kafka.create_topic(f"advice-tid-a-{tmp_path.name[-12:]}", partitions=1)
    b = kafka.create_topic(f"advice-tid-b-{tmp_path.name[-12:]}", partitions=1)
    tid = f"advice-{tmp_path.name[-12:]}"
    done = _import(kafka, str(f), "-t", a, "--exactly-once", "--transactional-id", tid)
    assert done.returncode == 0, done.stdout + done.stderr
    refused = _import(kafka, str(f), "-t", b, "--exactly-once", "--transactional-id", tid)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "use another --transactional-id" in refused.stderr, refused.stderr
    again = _import(kafka, str(f), "-t", b, "--exactly-once", "--transactional-id", tid + "-2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, b, len(want)) == want
    assert _values(kafka.bootstrap_servers, a, len(want)) == want


def test_changed_settings_advice_pass_restart_does_what_it_says(kafka: Any, tmp_path: Path) -> None:
    """ "... pass --restart to import everything again from the first row (the rows committed
    so far stay in the topic)": the topic then holds both runs' rows, as said."""
    f, want = _rows(tmp_path)
    topic = kafka.create_topic(f"advice-changed-{tmp_path.name[-12:]}", partitions=1)
    done = _import(kafka, str(f), "-t", topic, "--exactly-once")
    assert done.returncode == 0, done.stdout + done.stderr
    changed = [str(f), "-t", topic, "--exactly-once", "--key-field", "user"]
    refused = _import(kafka, *changed)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = "pass --restart to import everything again from the first row (the rows committed so far stay in the topic)"  # noqa: E501
    assert said in refused.stderr, refused.stderr
    again = _import(kafka, *changed, "--restart")
    assert again.returncode == 0, again.stdout + again.stderr
    got = read_back(kafka.bootstrap_servers, topic, expected=2 * len(want))
    records = [r for recs in got.values() for r in recs]
    assert sorted(r.value or b"" for r in records) == sorted(want + want)
    assert sorted(r.key or b"" for r in records if r.key) == sorted(
        f"u{i % 3}".encode() for i in range(len(want))
    )  # the second run's rows, keyed as it was told


def test_a_naive_timestamps_advice_applied_as_printed_reads_them_in_that_zone(
    kafka: Any, tmp_path: Path
) -> None:
    """ "pass --timezone with the zone it was written in (--timezone UTC if it is UTC)":
    each row whose timestamp names no zone is refused alone, and the same import with
    ``--timezone UTC`` as printed delivers every row with its time read in UTC."""
    f = tmp_path / "rows.csv"
    f.write_text("id,at\n1,2026-01-02T03:04:05\n2,2026-01-02T03:04:06.5\n")
    topic = kafka.create_topic(f"advice-tz-{tmp_path.name[-12:]}", partitions=1)
    argv = ["import", "-b", kafka.bootstrap_servers, "--no-progress", str(f), "-t", topic]
    argv += ["--timestamp-field", "at"]
    first = run_cykafka(*argv)
    assert first.returncode == 1, first.stdout + first.stderr
    said = "pass --timezone with the zone it was written in (--timezone UTC if it is UTC)"
    assert said in first.stdout + first.stderr, first.stdout + first.stderr
    assert _count(first.stdout, "delivered") == 0, first.stdout
    again = run_cykafka(*argv, "--timezone", "UTC")
    assert again.returncode == 0, again.stdout + again.stderr
    got = [
        r for recs in read_back(kafka.bootstrap_servers, topic, expected=2).values() for r in recs
    ]
    assert [r.timestamp for r in got] == [1767323045000, 1767323046500], got


def test_a_one_column_headers_delimiter_advice_applied_as_printed_splits_it(
    kafka: Any, tmp_path: Path
) -> None:
    """A header of one column holding another delimiter is imported as told, with the note
    "if that is the delimiter, pass --delimiter '|'"; passed as printed (shlex-split, as a
    shell reads it), the rows arrive split into their columns."""
    f = tmp_path / "rows.csv"
    f.write_text("id|name\n1|ann\n2|bob\n")
    told = kafka.create_topic(f"advice-delim-{tmp_path.name[-12:]}", partitions=1)
    argv = ["import", "-b", kafka.bootstrap_servers, "--no-progress", str(f), "--delimiter", ","]
    first = run_cykafka(*argv, "-t", told)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout + first.stderr
    advice = next(line for line in out.splitlines() if "if that is the delimiter" in line)
    flags = shlex.split(advice.split("if that is the delimiter, pass ", 1)[1])
    assert flags == ["--delimiter", "|"], advice
    split = kafka.create_topic(f"advice-delim2-{tmp_path.name[-12:]}", partitions=1)
    again = run_cykafka(*argv[:-2], *flags, "-t", split)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, split, 2) == [
        b'{"id":1,"name":"ann"}',
        b'{"id":2,"name":"bob"}',
    ]


def test_a_resume_with_other_settings_refused_then_rerun_with_the_earlier_ones_finishes(
    kafka: Any, tmp_path: Path
) -> None:
    """ "rerun with the earlier settings": an exactly-once import stopped part-way, run
    again with another --key-field, is refused; run with the earlier settings, as the
    refusal says, it goes on from its last commit and every row is in the topic once."""
    f, want = _rows(tmp_path, n=3000)
    topic = kafka.create_topic(f"advice-earlier-{tmp_path.name[-12:]}", partitions=1)
    args = [str(f), "-t", topic, "--exactly-once", "--commit-every", "100", "--rate", "1000"]
    status, out, err = stop_after(
        import_command(kafka.bootstrap_servers, *args), signal.SIGINT, "reading", 1.0
    )
    assert status == 130, (status, out, err)
    refused = _import(kafka, *args, "--key-field", "user")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "rerun with the earlier settings" in refused.stderr, refused.stderr
    earlier = [a for a in args if a not in ("--rate", "1000")]  # the pace is no setting
    again = _import(kafka, *earlier)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, topic, len(want)) == want


def test_a_transactional_id_given_with_x_is_refused_for_the_flag_that_runs(
    kafka: Any, tmp_path: Path
) -> None:
    """ "--exactly-once sets transactional.id; use --transactional-id": the flag, given as
    told, imports every row once, in transactions of that id."""
    f, want = _rows(tmp_path)
    topic = kafka.create_topic(f"advice-txid-{tmp_path.name[-12:]}", partitions=1)
    tid = f"advice-{tmp_path.name[-12:]}"
    refused = _import(kafka, str(f), "-t", topic, "--exactly-once", "-X", f"transactional.id={tid}")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "use --transactional-id" in refused.stderr, refused.stderr
    again = _import(kafka, str(f), "-t", topic, "--exactly-once", "--transactional-id", tid)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _values(kafka.bootstrap_servers, topic, len(want)) == want
