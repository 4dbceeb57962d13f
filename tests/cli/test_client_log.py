"""librdkafka's log as the import presents it: what librdkafka recovers from by itself is
not printed on a normal run, anything else is said once in cykafka's words, and
``--verbose`` shows librdkafka's own lines."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import child_env


def _real_lines(bootstrap: str, config: dict[str, object], verbose: bool) -> tuple[str, int]:
    """What a real producer's log (librdkafka's own lines) shows through the import's
    presentation, and how many lines were of states librdkafka recovers from."""
    import cykafka
    from cykafka.cli.client_log import presented

    out = io.StringIO()
    with presented("import", verbose, out) as log:
        p = cykafka.Producer({"bootstrap.servers": bootstrap, **config}, preset=None)
        try:
            fut = p.produce("t", value=b"x")
            p.flush(120)  # until message.timeout.ms fails it: nothing is left to purge
        finally:
            p.close(0)
        assert fut.done()
    return out.getvalue(), log.recovered


@pytest.fixture
def refused() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{s.getsockname()[1]}"


def test_a_broker_away_is_not_streamed_but_verbose_shows_it(refused: str) -> None:
    """A broker that refuses connections (down, or restarting): librdkafka retries by
    itself and logs each attempt; the import's normal run shows none of it."""
    conf = {"message.timeout.ms": 2000, "reconnect.backoff.max.ms": 100}
    quiet, recovered = _real_lines(refused, conf, verbose=False)
    assert quiet == "" and recovered > 0
    loud, _ = _real_lines(refused, conf, verbose=True)
    assert "Connection refused" in loud and "rdkafka#producer" in loud


def test_anything_else_is_said_once_in_cykafkas_words(refused: str) -> None:
    """A warning librdkafka gives for a real problem (here: a deprecated property, given
    to two producers) is said once, naming what it said."""
    conf = {"message.timeout.ms": 500, "produce.offset.report": "true"}
    import cykafka
    from cykafka.cli.client_log import presented

    out = io.StringIO()
    with presented("import", False, out):
        for _ in range(2):
            p = cykafka.Producer({"bootstrap.servers": refused, **conf}, preset=None)
            p.flush(1)
            p.close(0)
    lines = out.getvalue().splitlines()
    said = [ln for ln in lines if "produce.offset.report" in ln]
    assert len(said) == 1, lines
    assert said[0].startswith(
        "cykafka import: the Kafka client reports: Configuration property "
        "produce.offset.report is deprecated"
    ), said
    assert "--verbose" in said[0] and "rdkafka#producer" not in said[0]


@pytest.mark.broker  # starts its own Apache Kafka: the coordinator must be loading
def test_a_first_import_into_a_fresh_kafka_prints_no_raw_librdkafka_line(tmp_path: Path) -> None:
    """The idempotent producer's first InitProducerId on a cluster just started meets
    the transaction coordinator loading (Kafka answers COORDINATOR_LOAD_IN_PROGRESS or
    COORDINATOR_NOT_AVAILABLE and librdkafka retries): the import prints its summary
    and nothing of librdkafka's."""
    from cykafka.launchers.kafka import KafkaCluster

    rows = tmp_path / "rows.csv"
    rows.write_text("id,user\n" + "".join(f"{i},u{i % 5}\n" for i in range(1000)))
    with KafkaCluster() as cluster:
        cluster.create_topic("first", partitions=3)
        cmd = [sys.executable, "-m", "cykafka.cli", "import", "-b", cluster.bootstrap_servers,
               "-t", "first", "--no-progress", str(rows)]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env())
    assert out.returncode == 0, out.stdout + out.stderr
    raw = [ln for ln in out.stderr.splitlines() if "rdkafka#" in ln or "[GETPID]" in ln]
    assert raw == [], out.stderr
    assert "OK: every row was delivered" in out.stdout
