"""write_kafka against an Apache Kafka node that enforces security (TLS with hostname
verification, SCRAM users, ACLs; tests/support/security.py): what the broker refuses
is a report that is not ok, says why, names no secret, and counts no row delivered."""

from __future__ import annotations

from typing import Any

import pytest

from cykafka.spark import KafkaWriteError, WriteReport, write_kafka
from support.security import (
    PASSWORD,
    new_topic,
    no_secret,
    records,
    sasl,
    transactional_writer,
    user,
    writer,
)

# One deployment: the refusals come from the broker, not from how Spark runs the tasks.
pytestmark = pytest.mark.parametrize("spark", ["local"], indirect=True)

ROWS = 40


def _df(spark: Any) -> Any:
    return spark.createDataFrame(
        [(f"k{i % 4}", f"v{i}") for i in range(ROWS)], "key string, value string"
    ).repartition(2)


def _write(spark: Any, topic: str, conf: dict[str, Any], **kw: Any) -> WriteReport:
    conf = dict(conf)
    servers = conf.pop("bootstrap.servers")
    return write_kafka(
        _df(spark), topic, bootstrap_servers=servers, on_error="report", **kw, **conf
    )


def _refused(report: WriteReport) -> str:
    """The report of a refused write: not ok, nothing delivered, every row failed."""
    assert not report.ok, str(report)
    assert report.delivered == 0 and report.failed == report.rows == ROWS, str(report)
    assert report.offsets == {}, report.offsets
    text = f"{report} {report!r} {report.errors}"
    no_secret("the Spark report", text)
    return text


def test_scram_over_tls_delivers(spark, secure, read_back) -> None:
    topic = new_topic(secure, partitions=2)
    report = _write(spark, topic, sasl(secure, writer(secure, topic)))
    assert report.ok and report.delivered == ROWS, str(report)
    no_secret("the Spark report", f"{report} {report!r}")
    read_back(secure.bootstrap_servers, topic, expected=ROWS)


def test_spark_sink_options_with_a_jaas_line_deliver(spark, secure, read_back) -> None:
    """The options as Spark's own Kafka sink takes them: ``kafka.``-prefixed Java names,
    the SCRAM user in a JAAS line.  An ordered write asks the cluster for the topic's
    partition count on the driver: that client gets them translated too."""
    topic = new_topic(secure, partitions=2)
    u = writer(secure, topic)
    conf = secure.listener_config("SASL_SSL")
    conf["sasl.jaas.config"] = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{u.name}" password="{u.password}";'
    )
    servers = conf.pop("bootstrap.servers")
    options = {f"kafka.{k}": v for k, v in conf.items()}
    report = write_kafka(_df(spark), topic, bootstrap_servers=servers, preset="ordered", **options)
    assert report.ok and report.delivered == ROWS, str(report)
    no_secret("the Spark report", f"{report} {report!r}")
    read_back(secure.bootstrap_servers, topic, expected=ROWS)


@pytest.mark.parametrize("case", ["wrong CA", "wrong host"])
def test_wrong_ca_or_host_is_a_failed_report_naming_ssl(
    spark, secure, certs, read_back, case
) -> None:
    topic = new_topic(secure)
    if case == "wrong CA":
        conf = secure.listener_config("SSL", **{"ssl.ca.location": str(certs.other_ca)})
    else:
        conf = secure.listener_config("BADHOST")
    report = _write(spark, topic, {**conf, "message.timeout.ms": 5000}, preset=None)
    text = _refused(report)
    assert "SSL handshake failed" in text and "certificate verify failed" in text, text
    assert records(secure, topic, read_back) == 0


def test_wrong_password_is_a_failed_report_without_the_password(spark, secure, read_back) -> None:
    topic = new_topic(secure)
    u = writer(secure, topic)
    wrong = PASSWORD + "-wrong"
    conf = sasl(secure, u, **{"sasl.password": wrong, "message.timeout.ms": 5000})
    text = _refused(_write(spark, topic, conf, preset=None))
    assert "SCRAM-SHA-512" in text and "uthentication" in text, text
    assert wrong not in text
    assert records(secure, topic, read_back) == 0


@pytest.mark.parametrize("preset", [None, "ordered"], ids=["plain", "ordered"])
def test_no_write_is_a_failed_report_naming_topic_and_principal(
    spark, secure, read_back, preset
) -> None:
    topic = new_topic(secure)
    u = user(secure, "reader")
    secure.allow(u.principal, "TOPIC", topic, ["DESCRIBE", "READ"])
    text = _refused(_write(spark, topic, sasl(secure, u), preset=preset))
    assert u.principal in text and "WRITE" in text, text
    assert records(secure, topic, read_back) == 0


def test_exactly_once_without_the_transactional_id_fails_naming_it(
    spark, secure, read_back
) -> None:
    topic, progress, u = transactional_writer(secure)
    with pytest.raises(KafkaWriteError) as info:
        _write(
            spark,
            topic,
            sasl(secure, u),
            preset="exactly_once",
            progress_topic=progress,
            job_id=f"job-{u.name}",
        )
    text = str(info.value)
    no_secret("the Spark error", text)
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in text and u.principal in text, text
    assert records(secure, topic, read_back) == 0
