"""Security an Apache Kafka broker enforces -- TLS with hostname verification, SASL/SCRAM
users, ACLs -- against the producer and ``cykafka import`` (Spark: tests/spark).  The
secured node, its listeners and the certificates: tests/support/security.py."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

import cykafka
from cykafka.cli import main
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

# --------------------------------------------------------------------------- TLS


def test_tls_right_ca_delivers_and_reads_back(secure, read_back) -> None:
    topic = new_topic(secure, partitions=2)
    n = 500
    conf = secure.listener_config("SSL")
    assert conf["security.protocol"] == "SSL"
    with cykafka.Producer(conf, preset="ordered") as p:
        futs = [p.produce(topic, b"tls-%d" % i, key=b"k%d" % (i % 7)) for i in range(n)]
        assert p.flush(60) == 0
    assert all(f.exception(0) is None for f in futs)
    got = read_back(secure.bootstrap_servers, topic, expected=n)
    assert sorted(r.value for rs in got.values() for r in rs) == sorted(
        b"tls-%d" % i for i in range(n)
    )


@pytest.mark.parametrize("case", ["wrong CA", "wrong host"])
def test_tls_wrong_ca_or_host_is_refused_by_the_producer(secure, certs, read_back, case) -> None:
    topic = new_topic(secure)
    if case == "wrong CA":
        conf = secure.listener_config("SSL", **{"ssl.ca.location": str(certs.other_ca)})
    else:
        conf = secure.listener_config("BADHOST")
    conf["message.timeout.ms"] = 3000
    errors: list[BaseException] = []
    with cykafka.Producer(conf, on_error=errors.append) as p:
        futs = [p.produce(topic, b"never") for _ in range(3)]
        p.flush(30)
    for f in futs:
        exc = f.exception(0)
        assert isinstance(exc, cykafka.KafkaDeliveryError), exc
        assert "SSL" in str(exc) and "certificate verify failed" in str(exc), str(exc)
    texts = [str(e) for e in errors]
    assert any("SSL handshake failed" in t for t in texts), texts
    assert records(secure, topic, read_back) == 0


# --------------------------------------------------------------------------- SASL/SCRAM


def test_scram_user_delivers_and_reads_back(secure, read_back) -> None:
    topic = new_topic(secure, partitions=3)
    u = writer(secure, topic)
    n = 300
    with cykafka.Producer(sasl(secure, u), preset="ordered") as p:
        futs = [p.produce(topic, b"v%d" % i, key=b"k%d" % (i % 5)) for i in range(n)]
        assert p.flush(60) == 0
    assert [f.exception(0) for f in futs] == [None] * n
    got = read_back(secure.bootstrap_servers, topic, expected=n)
    for recs in got.values():  # per-key order kept
        by_key: dict[bytes, list[int]] = {}
        for r in recs:
            assert r.key is not None and r.value is not None
            by_key.setdefault(r.key, []).append(int(r.value[1:]))
        assert all(v == sorted(v) for v in by_key.values())


def test_scram_wrong_password_is_a_clear_error_without_the_secret(
    secure, read_back, caplog
) -> None:
    caplog.set_level(logging.DEBUG, logger="cykafka")
    topic = new_topic(secure)
    u = writer(secure, topic)
    errors: list[BaseException] = []
    wrong = PASSWORD + "-wrong"
    conf = sasl(
        secure,
        u,
        **{"sasl.password": wrong, "message.timeout.ms": 3000, "debug": "security,broker"},
    )
    with cykafka.Producer(conf, on_error=errors.append) as p:
        seen = {"repr": repr(p)}
        futs = [p.produce(topic, b"never") for _ in range(3)]
        p.flush(30)
        seen["repr after"] = repr(p)
    auth = [e for e in errors if isinstance(e, cykafka.KafkaAuthenticationError)]
    assert auth, [str(e) for e in errors]
    assert "SCRAM-SHA-512" in str(auth[0]) and "authentication" in str(auth[0]).lower()
    for f in futs:
        exc = f.exception(0)
        assert isinstance(exc, cykafka.KafkaDeliveryError), exc
        assert "SCRAM-SHA-512" in str(exc) and "uthentication" in str(exc), str(exc)
        seen[f"future {f!r}"] = f"{exc!s} {exc!r}"
    seen["on_error"] = "\n".join(f"{e!s} {e!r}" for e in errors)
    seen["log"] = "\n".join(r.getMessage() for r in caplog.records)
    assert "SCRAM" in seen["log"]  # the exchange really ran and was logged
    for where, text in seen.items():
        no_secret(where, text)
        assert wrong not in text, where
    assert records(secure, topic, read_back) == 0


# --------------------------------------------------------------------------- ACLs


def _refused(conf: dict[str, Any], topic: str, n: int = 3) -> tuple[list, list]:
    """Produce ``n`` messages; (their exceptions, what on_error got)."""
    errors: list[BaseException] = []
    with cykafka.Producer({**conf, "message.timeout.ms": 10_000}, on_error=errors.append) as p:
        futs = [p.produce(topic, b"refused-%d" % i) for i in range(n)]
        p.flush(60)
    return [f.exception(0) for f in futs], errors


def test_a_message_librdkafka_refuses_at_the_call_names_the_principal_too(secure) -> None:
    """Once the topic's metadata answered TOPIC_AUTHORIZATION_FAILED, librdkafka refuses
    the next messages at the produce call, before sending: their errors name the
    principal and the right as the broker's refusal of the first ones did."""
    topic = new_topic(secure)
    u = user(secure, "reader")
    secure.allow(u.principal, "TOPIC", topic, ["DESCRIBE", "READ"])
    conf = sasl(secure, u, **{"enable.idempotence": False, "message.timeout.ms": 10_000})
    with cykafka.Producer(conf) as p:
        p.produce(topic, b"first").exception(30)  # refused by the broker
        later = [p.produce(topic, b"later").exception(30)]
        later += [e for _, e in p.produce_batch(topic, [b"a", b"b"]).result(30).errors]
    texts = [str(e) for e in later]
    assert any("before sending" in t for t in texts), texts  # the refusal at the call
    for e, t in zip(later, texts):
        assert e.name == "TOPIC_AUTHORIZATION_FAILED", t
        assert u.principal in t and repr(topic) in t and "WRITE" in t, t


@pytest.mark.parametrize("preset", [None, "ordered"], ids=["plain", "idempotent"])
def test_no_write_on_the_topic_fails_every_message_naming_topic_and_principal(
    secure, read_back, preset
) -> None:
    topic = new_topic(secure)
    u = user(secure, "reader")
    secure.allow(u.principal, "TOPIC", topic, ["DESCRIBE", "READ"])  # sees it, may not write
    excs, errors = _refused(
        sasl(secure, u, **({"enable.idempotence": False} if preset is None else {})), topic
    )
    texts = [str(e) for e in excs]
    assert all(isinstance(e, cykafka.KafkaDeliveryError) for e in excs), texts
    # Each message names the principal and the missing right.  Plain: the broker refuses
    # the topic.  Idempotent: whichever the broker refuses first -- the topic, or the
    # producer id (no WRITE on any topic: a fatal error, and librdkafka purges the queue).
    for e, t in zip(excs, texts):
        assert u.principal in t and "WRITE" in t, t
        if preset is None or e.name == "TOPIC_AUTHORIZATION_FAILED":
            assert e.name == "TOPIC_AUTHORIZATION_FAILED" and topic in t, t
        else:
            assert "Cluster authorization failed" in t and "fatal error" in t, t
    assert records(secure, topic, read_back) == 0


def test_idempotent_write_needs_only_write_on_anew_topic(secure, read_back) -> None:
    """Kafka 3+ (KIP-679): IDEMPOTENT_WRITE on the cluster is no longer needed; WRITE
    on any topic lets a principal get a producer id.  So "no IDEMPOTENT_WRITE" alone is
    not refused: the user below has no cluster ACL at all, and delivers idempotently."""
    topic = new_topic(secure)
    u = writer(secure, topic)
    with cykafka.Producer(sasl(secure, u), preset="ordered") as p:
        assert p.guarantees.to_dict()  # an idempotent config
        futs = [p.produce(topic, b"i%d" % i) for i in range(50)]
        assert p.flush(60) == 0
    assert [f.exception(0) for f in futs] == [None] * 50
    read_back(secure.bootstrap_servers, topic, expected=50)


def test_no_rights_on_the_transactional_id_is_a_clear_error(secure, read_back) -> None:
    topic = new_topic(secure)
    u = writer(secure, topic)
    tid = f"tx-{u.name}"
    with cykafka.Producer(sasl(secure, u, **{"transactional.id": tid})) as p:
        with pytest.raises(cykafka.KafkaError) as info:
            p.init_transactions(30)
    text = str(info.value)
    assert info.value.name == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", text
    assert tid in text and u.principal in text and "WRITE" in text, text
    no_secret("init_transactions error", text + repr(info.value))
    assert records(secure, topic, read_back) == 0


# --------------------------------------------------------------------------- cykafka import


def _config_file(tmp_path: Path, conf: dict[str, Any]) -> str:
    """The client settings as a -F file (the password stays out of argv)."""
    path = tmp_path / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items() if k != "bootstrap.servers"))
    return str(path)


def _input(tmp_path: Path, rows: int = 20) -> str:
    f = tmp_path / "orders.csv"
    f.write_text("id,user\n" + "".join(f"{i},u{i % 3}\n" for i in range(rows)))
    return str(f)


def _run_import(conf: dict[str, Any], topic: str, tmp_path: Path, capsys, *args: str):
    status = main(
        [
            "import", _input(tmp_path), "-t", topic, "--no-progress",
            "-b", conf["bootstrap.servers"], "-F", _config_file(tmp_path, conf), *args,
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return status, out, err


def _refused_before_reading(status: int, out: str, err: str) -> None:
    assert status == 1, (status, out, err)
    assert "rows" not in out and "delivered" not in out, out  # no summary: nothing read


def _refused_for_security(status: int, out: str, err: str) -> None:
    # A cluster this client cannot use is said on one line, exit status 2, as an
    # unreachable one is; the line names the security settings, not the address.
    assert status == 2, (status, out, err)
    assert "refused this client's security settings" in err, err
    assert "rows" not in out and "delivered" not in out, out  # no summary: nothing read


@pytest.mark.parametrize("case", ["wrong CA", "wrong host"])
def test_import_refuses_a_wrong_ca_or_host_before_reading(
    secure, certs, read_back, tmp_path, capsys, case
) -> None:
    topic = new_topic(secure)
    if case == "wrong CA":
        conf = secure.listener_config("SSL", **{"ssl.ca.location": str(certs.other_ca)})
    else:
        conf = secure.listener_config("BADHOST")
    status, out, err = _run_import(conf, topic, tmp_path, capsys)
    _refused_for_security(status, out, err)
    assert "SSL handshake failed" in err and "certificate verify failed" in err, err
    assert records(secure, topic, read_back) == 0


def test_import_wrong_password_is_clear_and_never_printed(
    secure, read_back, tmp_path, capsys, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    topic = new_topic(secure)
    u = writer(secure, topic)
    wrong = PASSWORD + "-wrong"
    status, out, err = _run_import(
        sasl(secure, u, **{"sasl.password": wrong}), topic, tmp_path, capsys
    )
    _refused_for_security(status, out, err)
    assert "SCRAM-SHA-512" in err and "uthentication" in err, err
    log = "\n".join(r.getMessage() for r in caplog.records)
    for where, text in (("stdout", out), ("stderr", err), ("log", log)):
        assert wrong not in text and PASSWORD not in text, where
    assert records(secure, topic, read_back) == 0


def test_import_summary_dry_run_and_explain_never_print_the_password(
    secure, read_back, tmp_path, capsys, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    topic = new_topic(secure, partitions=2)
    u = writer(secure, topic)
    conf = sasl(secure, u, debug="security")
    seen: dict[str, str] = {}
    status, out, err = _run_import(
        conf, topic, tmp_path, capsys, "--key-field", "user", "--timings"
    )
    assert status == 0, err
    assert "20" in out and "delivered" in out, out  # the summary
    seen["import"] = out + err
    status, out, err = _run_import(conf, topic, tmp_path, capsys, "--dry-run")
    assert status == 0, err
    seen["--dry-run"] = out + err
    assert main(["explain", _config_file(tmp_path, conf), "--preset", "ordered"]) == 0
    seen["explain"] = "".join(capsys.readouterr())
    assert main(["explain", "--json", _config_file(tmp_path, conf)]) == 0
    seen["explain --json"] = "".join(capsys.readouterr())
    seen["log"] = "\n".join(r.getMessage() for r in caplog.records)
    assert "SCRAM" in seen["log"]  # debug=security logged the real exchange
    for where, text in seen.items():
        no_secret(where, text)
    read_back(secure.bootstrap_servers, topic, expected=20)


@pytest.mark.parametrize("rights", [["DESCRIBE", "READ"], []], ids=["read-only", "none"])
def test_import_without_write_is_refused_before_reading(
    secure, read_back, tmp_path, capsys, rights
) -> None:
    topic = new_topic(secure)
    u = user(secure, "reader")
    if rights:
        secure.allow(u.principal, "TOPIC", topic, rights)
    before = set(secure.list_topics())
    status, out, err = _run_import(sasl(secure, u), topic, tmp_path, capsys, "--partitions", "2")
    _refused_before_reading(status, out, err)
    assert u.principal in err and repr(topic) in err and "WRITE" in err, err
    assert "Nothing was read or sent" in err, err
    assert set(secure.list_topics()) == before  # nothing created
    assert records(secure, topic, read_back) == 0


def test_exactly_once_import_without_the_transactional_id_is_refused_before_reading(
    secure, read_back, tmp_path, capsys
) -> None:
    topic, progress, u = transactional_writer(secure)
    tid = f"import-{u.name}"
    status, out, err = _run_import(
        sasl(secure, u), topic, tmp_path, capsys,
        "--exactly-once", "--transactional-id", tid, "--progress-topic", progress,
    )  # fmt: skip
    # Refused at init_transactions, before the first row is read, and not retried: the
    # summary says 0 rows read and why it stopped.
    assert status == 1, (out, err)
    assert "rows read   0" in out and "delivered   0" in out, out
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in out, out
    assert tid in out and u.principal in out and "WRITE" in out, out
    assert "resuming from the last commit" not in err, err
    assert records(secure, topic, read_back) == 0


def test_the_write_check_lets_a_cluster_without_acls_through(kafka, tmp_path, capsys) -> None:
    """No authorizer: the broker reports every operation as allowed, and the import's
    check must not refuse (nor on Tansu, which reports none: the check is skipped)."""
    from cykafka.importer.topic_checks import check_write_access

    topic = kafka.create_topic(f"open-{uuid.uuid4().hex[:8]}")
    check_write_access(kafka.bootstrap_servers, {}, topic)
    status, out, err = _run_import(kafka.client_config(), topic, tmp_path, capsys)
    assert status == 0 and "delivered" in out, (out, err)
