"""`cykafka import` against the cluster and the user: unreachable brokers, missing and
invalid topics, Ctrl-C, dead-letter hazards, and the flags kcat and
kafka-console-producer users already know.  Real broker, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cykafka.cli import main
from support.cli import import_in_process as _import
from support.cli import run_cykafka as _cli


def test_unreachable_broker_fails_fast_with_one_message(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    t = time.monotonic()
    p = _cli(
        "import", "-b", "127.0.0.1:1", "-t", "t", "--no-progress", "--connect-timeout", "2", str(f)
    )
    took = time.monotonic() - t
    assert took < 10, took
    assert p.returncode == 2  # as every command says an unreachable cluster
    assert "cannot reach the Kafka cluster at 127.0.0.1:1" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "100%" not in p.stdout + p.stderr


def test_a_plain_lines_import_starts_without_pyarrow_or_numpy(broker, topic, read_back, tmp_path):
    """Loading them took a tenth of a second of every lines import's start-up (the
    benchmark's process comparison with kcat): the lines reach produce_batch as
    cykafka._codecs.Lines.  (confluent-kafka's AdminClient is loaded: the topic check
    reads the topic's max.message.bytes, to size the batches.)  A key delimiter still
    splits the lines with pyarrow."""
    name = topic(partitions=1)
    f = tmp_path / "a.txt"
    f.write_bytes(b"".join(b"k%d:v%d\n" % (i, i) for i in range(1000)))
    code = (
        "import sys; from cykafka.cli import main; "
        "rc = main(sys.argv[1:]); "
        "print(sorted(m for m in ('pyarrow', 'numpy') if m in sys.modules)); "
        "sys.exit(rc)"
    )
    base = ["import", str(f), "-b", broker.bootstrap_servers, "-t", name, "--no-progress"]
    plain = subprocess.run(
        [sys.executable, "-c", code, *base], capture_output=True, text=True, timeout=60
    )
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip().splitlines()[-1] == "[]"
    keyed = subprocess.run(
        [sys.executable, "-c", code, *base, "-K", ":"], capture_output=True, text=True, timeout=60
    )
    assert keyed.returncode == 0, keyed.stderr
    assert "'pyarrow'" in keyed.stdout.strip().splitlines()[-1]
    recs = read_back(broker.bootstrap_servers, name, expected=2000)[0]
    assert [r.value for r in recs[:2]] == [b"k0:v0", b"k1:v1"]
    assert [(r.key, r.value) for r in recs[1000:1002]] == [(b"k0", b"v0"), (b"k1", b"v1")]


def test_missing_topic_is_an_error_unless_partitions(broker, read_back, tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_text("x\ny\n")
    name = f"missing-{os.getpid()}-{time.monotonic_ns()}"
    assert _import(broker, str(f), "-t", name) == 2
    err = capsys.readouterr().err
    assert f"topic {name!r} does not exist" in err and "--partitions N" in err
    assert _import(broker, str(f), "-t", name, "--partitions", "2") == 0
    assert f"created topic {name!r} with 2 partitions" in capsys.readouterr().err
    recs = read_back(broker.bootstrap_servers, name, expected=2)
    assert sorted(r.value for rs in recs.values() for r in rs) == [b"x", b"y"]


def test_invalid_topic_name_is_a_usage_error(broker, tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_text("x\n" * 1000)
    assert _import(broker, str(f), "-t", "bad topic!") == 2
    err = capsys.readouterr().err
    assert "invalid topic name 'bad topic!'" in err
    assert len(err.strip().splitlines()) == 1


def test_ctrl_c_with_stalled_broker_stops_fast_with_status_130(fresh_broker, tmp_path):
    """SIGSTOP the broker mid-import, then Ctrl-C: out within 5 s, exit status 130
    said in the summary, every row read and not confirmed in the dead-letter file."""
    name = fresh_broker.create_topic("stall", partitions=1)
    f = tmp_path / "rows.txt"
    f.write_bytes(b"".join(b"row-%06d\n" % i for i in range(200_000)))
    dead = tmp_path / "dead.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", fresh_broker.bootstrap_servers,
           "-t", name, "--no-progress", "--rate", "20000", "--dead-letter", str(dead), str(f)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(3)
        os.kill(fresh_broker.pid, signal.SIGSTOP)
        time.sleep(1.5)
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - t
    finally:
        os.kill(fresh_broker.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < 5, took
    assert proc.returncode == 130, (out, err)
    assert "interrupted (Ctrl-C)" in out and "exit status 130" in out
    read = int(out.split("rows read")[1].split()[0].replace(",", ""))
    delivered = int(out.split("delivered")[1].split()[0].replace(",", ""))
    assert 0 < read < 200_000 and delivered < read
    entries = [json.loads(line) for line in dead.read_text().splitlines()]
    assert len(entries) == read - delivered
    # The broker is stopped: what librdkafka still queued is "not sent" (_PURGE_QUEUE),
    # what was in flight "unknown" (_PURGE_INFLIGHT: the broker may still append it).
    fates = {e["fate"] for e in entries}
    assert fates <= {"not sent", "unknown"} and fates, entries[:3]
    for e in entries:
        want = "_PURGE_QUEUE" if e["fate"] == "not sent" else "_PURGE_INFLIGHT"
        assert e["error"].startswith(want), e


def test_dead_letter_that_is_an_input_is_refused(broker, topic, tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_text("keep me\n")
    link = tmp_path / "same.jsonl"
    os.link(f, link)
    assert _import(broker, str(f), "-t", topic(), "--dead-letter", str(link)) == 2
    assert "is the input" in capsys.readouterr().err
    assert f.read_text() == "keep me\n"


def test_dead_letter_write_error_stops_with_summary(broker, topic, read_back, tmp_path, capsys):
    f = tmp_path / "rows.csv"
    f.write_text("id,n\n1,a\n2,b,EXTRA\n3,c\n4\n5,e\n")
    rc = _import(broker, str(f), "-t", topic(), "--dead-letter", "/dev/full")
    assert rc == 1
    out = capsys.readouterr().out
    assert "cannot write the dead-letter file /dev/full: No space left on device" in out
    assert "unaccounted 2 rows not delivered and not in the dead-letter file:" in out
    assert f"{f}:3: expected 2 columns, got 3" in out and f"{f}:5: expected 2 columns" in out
    assert "NOT OK" in out


def test_key_delimiter_headers_partition_timestamp(broker, topic, read_back, tmp_path):
    name = topic(partitions=3)
    f = tmp_path / "kv.txt"
    f.write_text("k1:v1\nk2:v:2\nnokey\n")
    dead = tmp_path / "dead.jsonl"
    rc = _import(
        broker, str(f), "-t", name, "-K", ":", "-H", "src=kcat", "-H", "env=test",
        "-p", "2", "--dead-letter", str(dead),
    )  # fmt: skip
    assert rc == 1
    recs = read_back(broker.bootstrap_servers, name, expected=2)
    assert [(r.key, r.value, r.headers) for r in recs[2]] == [
        (b"k1", b"v1", [("src", b"kcat"), ("env", b"test")]),
        (b"k2", b"v:2", [("src", b"kcat"), ("env", b"test")]),
    ]
    (entry,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert entry["line"] == 3 and "no key delimiter" in entry["error"]

    name = topic()
    f = tmp_path / "ts.jsonl"
    f.write_text('{"id":1,"at":"2024-05-01T12:00:00+02:00"}\n{"id":2,"at":1700000000123}\n')
    assert _import(broker, str(f), "-t", name, "--timestamp-field", "at") == 0
    recs = read_back(broker.bootstrap_servers, name, expected=2)[0]
    assert [r.timestamp for r in recs] == [1714557600000, 1700000000123]


def test_dry_run_shows_records_and_sends_nothing(broker, topic, read_back, tmp_path, capsys):
    name = topic()
    f = tmp_path / "o.csv"
    f.write_text("id,user\n1,a\n2,b\n3\n")
    assert _import(broker, str(f), "-t", name, "--key-field", "user", "--dry-run") == 1
    out = capsys.readouterr().out
    assert f'{f}:2: key=a value={{"id":1,"user":"a"}}' in out
    assert "Dry run: 2 rows would be sent, 1 row cannot be" in out
    assert _import(broker, str(f), "-t", name, "-p", "0", "-H", "a=b", "--dry-run") == 1
    assert "every message: partition=0, header a=b" in capsys.readouterr().out
    assert "guarantees  Per-partition order" in out and "nothing was sent" in out
    assert read_back(broker.bootstrap_servers, name) == {0: []}


def test_rate_limits_rows_per_second(broker, topic, tmp_path, capsys):
    f = tmp_path / "r.txt"
    f.write_bytes(b"x\n" * 3000)
    assert _import(broker, str(f), "-t", topic(), "--rate", "1000") == 0
    out = capsys.readouterr().out
    elapsed = float(out.split("elapsed")[1].split()[0])
    assert elapsed >= 2.0  # the first rows go at once, then 1,000 a second


def test_x_bad_secret_value_is_not_echoed(tmp_path, capsys):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    rc = main(["import", "-b", "127.0.0.1:1", "-t", "t", "-X", "ssl.key.password", str(f)])
    assert rc == 2
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="hunter2secret";'
    )
    rc = main(["import", "-b", "127.0.0.1:1", "-t", "t", "-X", f"sasl.jaas.config={jaas}", str(f)])
    assert rc in (1, 2)
    captured = capsys.readouterr()
    assert "hunter2secret" not in captured.err + captured.out


def test_partition_that_does_not_exist_is_refused_before_reading(broker, topic, tmp_path, capsys):
    """-p 7 on a 3-partition topic: one clear error, exit status 2, nothing sent (not
    one _UNKNOWN_PARTITION per row after reading the whole input)."""
    name = topic(partitions=3)
    f = tmp_path / "a.txt"
    f.write_text("x\n" * 1000)
    assert _import(broker, str(f), "-t", name, "-p", "7") == 2
    err = capsys.readouterr().err
    assert f"-p 7: topic {name!r} has 3 partitions (0..2); nothing was sent" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert _import(broker, str(f), "-t", name, "-p", "2") == 0


def test_partition_beyond_the_embedded_topic_is_refused(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    p = _cli("import", "-t", "t", "--no-progress", "-p", "3", str(f))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "-p 3: topic 't' has 3 partitions (0..2)" in p.stderr
    assert "embedded broker" not in p.stderr  # refused before it started


def test_existing_dead_letter_file_is_never_overwritten(broker, topic, tmp_path, capsys):
    name = topic()
    f = tmp_path / "rows.csv"
    f.write_text("id,n\n1,a\n2,b,EXTRA\n")
    dead = tmp_path / "dead.jsonl"
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 1
    before = dead.read_text()
    assert "EXTRA" in before
    capsys.readouterr()
    assert _import(broker, str(f), "-t", name, "--dead-letter", str(dead)) == 2
    err = capsys.readouterr().err
    assert f"--dead-letter {dead} already exists" in err and "never overwritten" in err
    assert dead.read_text() == before


def test_plain_rerun_into_a_topic_with_records_says_it_duplicates(broker, topic, tmp_path, capsys):
    name = topic(partitions=2)
    f = tmp_path / "a.txt"
    f.write_text("x\ny\nz\n")
    assert _import(broker, str(f), "-t", name) == 0
    assert "already holds" not in capsys.readouterr().err
    assert _import(broker, str(f), "-t", name) == 0
    err = capsys.readouterr().err
    assert f"topic {name!r} already holds records" in err and "sends them again" in err


def _timings(out: str) -> dict[str, float]:
    from cykafka.importer.summary import PHASES

    names = {label: key for key, label in PHASES.items()}
    lines = out.split("  timings")[1].splitlines()[1:]
    got = {}
    for line in lines:
        for name, key in names.items():
            if line.strip().startswith(name):
                got[key] = float(line.strip()[len(name) :].split()[0])
    return got


def test_timings_say_where_the_wall_time_went(broker, topic, read_back):
    """--timings splits the run into phases that add up to no more than the process's
    own wall time, and puts a slow input under "waiting for input", not elsewhere."""
    t = topic()
    # The input comes through a pipe with two 0.5 s pauses, after the import began
    # reading: the first write is more than a pipe holds (64 KiB), so it returns only
    # once the import reads, however long its start-up took on a busy machine.
    writer = (
        "import sys, time\n"
        "sys.stdout.write('line\\n' * 20000); sys.stdout.flush()\n"
        "for i in range(2):\n"
        "    time.sleep(0.5); sys.stdout.write('line\\n' * 1000); sys.stdout.flush()\n"
    )
    feed = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
    started = time.monotonic()
    proc = _cli(
        "import", "-", "--format", "lines", "-b", broker.bootstrap_servers, "-t", t,
        "--no-progress", "--timings", stdin=feed.stdout,
    )  # fmt: skip
    wall = time.monotonic() - started
    feed.wait(10)
    feed.stdout.close()
    assert proc.returncode == 0, proc.stderr
    phases = _timings(proc.stdout)
    assert set(phases) == {
        "startup", "cluster", "producer", "input_wait", "hand_over", "final_flush"
    }, proc.stdout  # fmt: skip
    assert all(v >= 0 for v in phases.values())
    assert phases["startup"] > 0  # the interpreter and imports take some time
    assert sum(phases.values()) <= wall
    assert phases["input_wait"] >= 0.9, proc.stdout  # two 0.5 s pauses of the writer
    assert phases["hand_over"] < phases["input_wait"]
    assert len(read_back(broker.bootstrap_servers, t, expected=22_000)[0]) == 22_000


def test_the_end_of_an_import_waits_for_no_statistics_emit(
    broker, topic, read_back, tmp_path, monkeypatch, capsys
):
    """The summary's broker throttle comes from the statistics already received: an
    import shorter than ``statistics.interval.ms`` does not wait for the next emit at
    its end (it did, in short sleeps of the inspector: a whole interval, one second at
    the default, for ten rows).  The inspector's sleeps are counted, in this process."""
    from cykafka.inspector import stats

    slept: list[float] = []
    real_sleep = stats.time.sleep

    class _Time:
        def __getattr__(self, name: str) -> object:
            return getattr(time, name)

        @staticmethod
        def sleep(s: float) -> None:
            slept.append(s)
            real_sleep(s)

    monkeypatch.setattr(stats, "time", _Time())
    t = topic()
    rows = tmp_path / "rows.txt"
    rows.write_text("".join(f"row-{i}\n" for i in range(10)))
    assert _import(broker, str(rows), "--format", "lines", "-t", t) == 0
    assert "every row was delivered" in capsys.readouterr().out
    assert slept == [], f"the import's end waited {sum(slept):.2f} s for a statistics emit"
    assert len(read_back(broker.bootstrap_servers, t, expected=10)[0]) == 10


def _guarantees_line(out: str) -> str:
    return next(x.strip() for x in out.splitlines() if x.strip().startswith("guarantees"))


def test_dry_run_states_what_the_import_does(broker, topic, tmp_path):
    """The dry run resolves the configuration as the import does (its own defaults and
    --exactly-once's transactions included): the same guarantees and warnings, and no
    "0 rows cannot be"."""
    f = tmp_path / "a.txt"
    f.write_text("x\ny\n")
    for extra in (["-X", "message.timeout.ms=30010"], ["--exactly-once"]):
        args = ["import", "-b", broker.bootstrap_servers, "-t", topic(), "--no-progress",
                *extra, str(f)]  # fmt: skip
        dry = _cli(*args, "--dry-run")
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert "Dry run: 2 rows would be sent\n" in dry.stdout, dry.stdout
        real = _cli(*args)
        assert real.returncode == 0, real.stdout + real.stderr
        assert _guarantees_line(dry.stdout) == _guarantees_line(real.stdout), (
            dry.stdout,
            real.stdout,
        )
    assert _guarantees_line(real.stdout).startswith("guarantees  Transactional"), real.stdout


@pytest.mark.parametrize("exactly_once", [False, True], ids=["plain", "exactly-once"])
def test_one_import_decides_each_thing_once(broker, topic, tmp_path, monkeypatch, exactly_once):
    """From the command line to the producer, one import plans its inputs once,
    resolves its configuration once, explains it once and makes one producer from that
    resolution: the dry run, the summary and the producer cannot disagree.  The spies
    count calls and run the real functions."""
    import importlib

    import cykafka.config
    import cykafka.producer

    for name in ("cli.import_cmd", "cli.import_run", "importer.job", "importer.exactly_once"):
        importlib.import_module(f"cykafka.{name}")
    calls: dict[str, int] = {}

    def spy(real, name: str) -> None:
        """Count calls of ``real`` through every cykafka module that holds it."""

        def counted(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("cykafka") and (
                getattr(mod, name, None) is real
            ):
                monkeypatch.setattr(mod, name, counted)

    from cykafka.explain import explain
    from cykafka.inputs import plan_files

    spy(cykafka.config.resolve, "resolve")
    spy(explain, "explain")
    spy(plan_files, "plan_files")
    resolved_seen: list[object] = []
    real_init = cykafka.producer.Producer.__init__

    def producer_init(self, config=None, **kwargs):
        resolved_seen.append(config)
        real_init(self, config, **kwargs)

    monkeypatch.setattr(cykafka.producer.Producer, "__init__", producer_init)
    f = tmp_path / "a.csv"
    f.write_text("id,user\n1,a\n2,b\n")
    extra = ["--exactly-once", "--commit-every", "1"] if exactly_once else []
    assert _import(broker, "-t", topic(), "--key-field", "user", *extra, str(f)) == 0
    assert calls == {"resolve": 1, "explain": 1, "plan_files": 1}, calls
    # The producer the command made (one plain, one per exactly-once attempt) ran that
    # one resolution.
    assert len(resolved_seen) == 1, resolved_seen
    assert all(isinstance(c, cykafka.config.ResolvedConfig) for c in resolved_seen)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["plain", "exactly-once"])
def test_librdkafka_judges_the_configuration_once_and_one_place_makes_producers(
    broker, topic, tmp_path, monkeypatch, exactly_once
):
    """One import asks librdkafka for its verdict on the configuration once, before a
    broker starts (the explanation and a bad -X's refusal read that verdict), and then
    makes its producer from the same resolution, in one place: the runner.  (The
    explanation, the command and the producer each asked librdkafka, from three
    modules.)  The spies count calls and run the real functions."""
    import traceback

    import cykafka._native
    import cykafka.producer

    verdicts: list[tuple[str, str]] = []
    made: list[tuple[str, str]] = []

    def caller() -> tuple[str, str]:
        frame = traceback.extract_stack(limit=3)[0]  # (the spy's caller)
        return frame.filename, frame.name

    real_refusal = cykafka._native.config_refusal

    def config_refusal(*args, **kwargs):
        verdicts.append(caller())
        return real_refusal(*args, **kwargs)

    real_init = cykafka.producer.Producer.__init__

    def producer_init(self, *args, **kwargs):
        made.append(caller())
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(cykafka._native, "config_refusal", config_refusal)
    monkeypatch.setattr(cykafka.producer.Producer, "__init__", producer_init)
    f = tmp_path / "a.csv"
    f.write_text("id,user\n1,a\n2,b\n")
    extra = ["--exactly-once", "--commit-every", "1"] if exactly_once else []
    assert _import(broker, "-t", topic(), "--key-field", "user", *extra, str(f)) == 0
    assert len(verdicts) == 1, verdicts
    assert len(made) == 1, made
    (where,) = set(made)
    assert where[0].endswith("cykafka/importer/run.py"), made


@pytest.mark.broker  # the embedded broker
def test_counts_of_one_are_singular(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("x\n")
    p = _cli("import", "-t", "one", "--partitions", "1", "--no-progress", str(f))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "created with 1 partition\n" in p.stderr.replace(";", "\n"), p.stderr


def test_unreachable_schema_registry_is_named_before_reading(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("id,user\n1,a\n")
    schema = tmp_path / "s.json"
    schema.write_text('{"type":"object","properties":{"id":{"type":"integer"}}}')
    p = _cli("import", "-t", "t", "--no-progress", "--value-format", "json-schema",
             "--value-schema", str(schema), "--schema-registry", "http://127.0.0.1:1",
             str(f))  # fmt: skip
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--schema-registry http://127.0.0.1:1: the Schema Registry does not answer" in p.stderr
    assert "reading" not in p.stderr and "embedded broker" not in p.stderr, p.stderr
