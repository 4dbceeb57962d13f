"""Security: TLS and SASL reach the broker through librdkafka's own config
keys, a bad CA or a refused login fails with a clear error, and no secret leaks.

What this Tansu build allows (docs/tansu.md) and therefore what is proven here:

* TLS: Tansu cannot serve TLS.  A TLS-terminating proxy (Python ``ssl``, a
  certificate made with ``openssl`` for this test) sits in front of a plaintext
  Tansu that advertises the proxy's port, so *every* client connection is TLS:
  a producer with ``security.protocol=SSL`` + ``ssl.ca.location`` delivers and the
  records are read back over TLS; the proxy counts completed handshakes.  With
  a CA that did not sign the certificate, the handshake fails and the client
  reports an SSL error through ``on_error``; every future fails (reported).
* SASL: Tansu ``--authentication`` speaks SCRAM-SHA-512 but no user can be
  created with memory storage, so "wrong password" and "unknown user" look the
  same here: the SCRAM exchange runs and the broker refuses it.  The test shows
  the refusal reaches the application as ``KafkaAuthenticationError``
  (``_AUTHENTICATION``, "SASL authentication error ...") via ``on_error``, and the
  future fails with ``_MSG_TIMED_OUT`` -- librdkafka does not fail queued
  messages with the auth error itself.  A right password is not testable here.
* Secrets: repr, config, explainer (text and dict), CLI, log lines at DEBUG with
  ``debug=all`` through a real SASL exchange, error callbacks, delivery errors
  and exception messages are grepped for a known secret.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cykafka
from cykafka.launchers.process import free_port
from cykafka.launchers.tansu import find_tansu
from support.cli import child_env
from support.reliability_log import record

# The module's fixtures start their own Tansu brokers behind TLS and SASL.
pytestmark = pytest.mark.broker

SECRET = "Zebra-S3cr3t-7731"
SECRET_KEYS = (
    "sasl.password",
    "ssl.key.password",
    "sasl.oauthbearer.client.secret",
    "ssl.keystore.password",
)


# --------------------------------------------------------------------------- helpers


def _openssl_cert(d: Path, name: str) -> tuple[Path, Path]:
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            f"/CN=127.0.0.1/O={name}",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class _Tansu:
    """A Tansu process with full control of its flags (LocalBroker always
    advertises its own listener, and waits for a plaintext admin to answer)."""

    def __init__(
        self, tmp: Path, advertised_port: int | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        self.port = free_port("127.0.0.1")
        adv = advertised_port or self.port
        self.log = tmp / f"tansu-{self.port}.log"
        with open(self.log, "wb") as log:
            self.proc = self._spawn(adv, extra, log)
        _wait_port(self.port)

    def _spawn(self, adv: int, extra: tuple[str, ...], log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                find_tansu(),
                "broker",
                "--cluster-id",
                "sec",
                "--listener-url",
                f"tcp://127.0.0.1:{self.port}",
                "--advertised-listener-url",
                f"tcp://127.0.0.1:{adv}",
                "--storage-engine",
                "memory://tansu/",
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class TLSProxy:
    """TLS on ``port`` -> plaintext to ``backend``; counts handshakes."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.create_server(("127.0.0.1", 0))  # bound now: Tansu advertises it
        self.port = self.sock.getsockname()[1]
        self.backend = 0
        self.handshakes_ok = 0
        self.handshake_errors: list[str] = []
        self.versions: set[str] = set()
        self._stop = False

    def start(self, backend: int) -> None:
        self.backend = backend
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            self.handshake_errors.append(str(exc))
            conn.close()
            return
        self.handshakes_ok += 1
        self.versions.add(tls.version() or "?")
        up = socket.create_connection(("127.0.0.1", self.backend))

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(up, tls), daemon=True).start()
        pump(tls, up)
        tls.close()
        up.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("certs")
    cert, key = _openssl_cert(d, "good")
    other, _ = _openssl_cert(d, "other")  # a CA that did not sign `cert`
    return {"cert": cert, "key": key, "other": other, "dir": d}


@pytest.fixture(scope="module")
def tls_broker(certs: dict[str, Path]) -> Iterator[TLSProxy]:
    proxy = TLSProxy(certs["cert"], certs["key"])
    tansu = _Tansu(certs["dir"], advertised_port=proxy.port)
    proxy.start(tansu.port)
    try:
        yield proxy
    finally:
        proxy.close()
        tansu.stop()


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Tansu]:
    t = _Tansu(tmp_path_factory.mktemp("sasl"), extra=("--authentication",))
    try:
        yield t
    finally:
        t.stop()


# --------------------------------------------------------------------------- TLS


def test_tls_producer_delivers_through_a_real_tls_endpoint(tls_broker, certs) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    ssl_conf = {
        "bootstrap.servers": f"127.0.0.1:{tls_broker.port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs["cert"]),
    }
    name = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({**ssl_conf, "log_level": 0})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    before = tls_broker.handshakes_ok
    n = 2000
    with cykafka.Producer(ssl_conf) as p:
        futs = [p.produce(name, b"tls-%d" % i) for i in range(n)]
        assert p.flush(30) == 0
    offsets = [f.result(0).offset for f in futs]
    assert offsets == sorted(offsets) and len(set(offsets)) == n
    assert tls_broker.handshakes_ok > before  # the producer's connections were TLS
    assert tls_broker.versions <= {"TLSv1.2", "TLSv1.3"}
    # Read back, also over TLS (the broker only advertises the TLS port).
    c = Consumer({**ssl_conf, "group.id": "g", "log_level": 0, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(name, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None
                got.append(m.value())
    finally:
        c.close()
    assert got == [b"tls-%d" % i for i in range(n)]
    record("TLS (SSL via loopback TLS proxy -> Tansu): delivered and read back", n, n - len(got))


def test_tls_wrong_ca_fails_clearly(tls_broker, certs) -> None:
    errors: list[cykafka.KafkaError] = []
    conf = {
        "bootstrap.servers": f"127.0.0.1:{tls_broker.port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs["other"]),
        "message.timeout.ms": 2000,
    }
    before = len(tls_broker.handshake_errors)
    with cykafka.Producer(conf, on_error=errors.append) as p:
        fut = p.produce("t", b"never sent")
        p.flush(10)
    assert isinstance(fut.exception(0), cykafka.DeliveryTimeoutError)
    texts = [str(e) for e in errors]
    assert any("SSL handshake failed" in t and "certificate verify failed" in t for t in texts), (
        texts
    )
    assert len(tls_broker.handshake_errors) > before  # the server saw the refusal
    failed = int(isinstance(fut.exception(0), cykafka.KafkaDeliveryError))
    record(
        "TLS with the wrong CA: handshake refused (certificate verify failed), "
        "message failed through its future",
        1,
        1 - failed,
        failed,
    )


def test_ssl_keys_reach_librdkafka_bad_key_password_is_clear(certs, tmp_path) -> None:
    # An encrypted client key with the wrong ssl.key.password: librdkafka reads the
    # files at construction and refuses with a clear, masked error.
    enc = tmp_path / "enc.key"
    subprocess.run(
        [
            "openssl",
            "pkey",
            "-in",
            str(certs["key"]),
            "-out",
            str(enc),
            "-aes256",
            "-passout",
            "pass:right-one",
        ],
        check=True,
    )
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs["cert"]),
        "ssl.certificate.location": str(certs["cert"]),
        "ssl.key.location": str(enc),
        "ssl.key.password": SECRET,
    }
    with pytest.raises(cykafka.KafkaConfigError) as info:
        cykafka.Producer(conf)
    msg = str(info.value)
    assert "ssl.key.location" in msg or "private key" in msg.lower(), msg
    assert SECRET not in msg and SECRET not in repr(info.value)
    conf["ssl.key.password"] = "right-one"
    cykafka.Producer(conf).close()  # the right password is accepted
    # One producer construction refused (no message could be accepted: nothing to lose).
    record(
        "TLS client key with a wrong ssl.key.password: refused at construction "
        "(KafkaConfigError, password masked)",
        1,
        0,
        0,
        refused=1,
    )


# --------------------------------------------------------------------------- SASL


def test_sasl_refused_login_is_a_clear_authentication_error(sasl_broker, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="cykafka")
    errors: list[cykafka.KafkaError] = []
    conf = {
        "bootstrap.servers": f"127.0.0.1:{sasl_broker.port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": SECRET,
        "message.timeout.ms": 2500,
        "debug": "all",
    }
    with cykafka.Producer(conf, on_error=errors.append) as p:
        fut = p.produce("t", b"x")
        p.flush(15)
    auth = [e for e in errors if isinstance(e, cykafka.KafkaAuthenticationError)]
    assert auth, [str(e) for e in errors]
    assert isinstance(auth[0], PermissionError) and auth[0].name == "_AUTHENTICATION"
    assert "SASL authentication error" in str(auth[0])
    assert "SCRAM authentication failed" in str(auth[0])
    assert isinstance(fut.exception(0), cykafka.DeliveryTimeoutError)
    # The SCRAM exchange really ran (the broker answered), at DEBUG in the log:
    lines = [r.getMessage() for r in caplog.records]
    assert any("SCRAM-SHA-512" in m for m in lines)
    assert all(SECRET not in m for m in lines)
    failed = int(isinstance(fut.exception(0), cykafka.KafkaDeliveryError))
    record(
        "SASL/SCRAM login refused: KafkaAuthenticationError via on_error, message failed "
        "through its future",
        1,
        1 - failed,
        failed,
    )


# --------------------------------------------------------------------------- secrets


def _secret_config(servers: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": SECRET,
        "ssl.key.password": SECRET + "-key",
        "sasl.oauthbearer.client.secret": SECRET + "-oauth",
        "ssl.keystore.password": SECRET + "-ks",
    }


def _assert_clean(where: str, text: str) -> None:
    assert SECRET not in text, (
        f"secret leaked in {where}: ...{text[text.find(SECRET) - 80 :][:200]}"
    )


def test_no_secret_in_repr_config_explain_logs_errors(sasl_broker, caplog, capfd) -> None:
    caplog.set_level(logging.DEBUG)
    seen: dict[str, str] = {}
    conf = _secret_config(f"127.0.0.1:{sasl_broker.port}")
    conf.update({"debug": "all", "message.timeout.ms": 2000, "statistics.interval.ms": 200})
    errors: list[BaseException] = []
    stats: list[str] = []
    with cykafka.Producer(
        conf, preset="ordered", on_error=errors.append, stats_cb=stats.append
    ) as p:
        seen["repr"] = repr(p)
        seen["config"] = json.dumps(p.config)
        seen["guarantees"] = str(p.guarantees) + json.dumps(p.guarantees.to_dict())
        futs = [p.produce("t", b"payload"), p.produce_batch("t", [b"a", b"b"])]
        p.flush(10)
        seen["counters"] = json.dumps(p._counters())
        seen["len"] = str(len(p))
        # the inspector: snapshot (repr, dict, table, log line), metrics, Prometheus
        snap = p.accumulator()
        seen["inspector"] = "\n".join(
            [
                repr(snap),
                json.dumps(snap.to_dict(), default=str),
                snap.log_line(),
                json.dumps(p.metrics()),
                p.metrics_prometheus(),
            ]
        )
        from rich.console import Console

        console = Console(record=True, width=200)
        console.print(snap.table())
        seen["inspector table"] = console.export_text()
    seen["future"] = repr(futs[0]) + str(futs[0].exception(0))
    seen["batch"] = repr(futs[1].result(0)) + json.dumps(futs[1].result(0).to_dict())
    seen["on_error"] = "\n".join(f"{e!s} {e!r}" for e in errors)
    seen["stats"] = "\n".join(stats)
    seen["explain"] = str(cykafka.explain(conf, preset="ordered"))
    seen["explain.to_dict"] = json.dumps(cykafka.explain(conf).to_dict())
    seen["mask_secrets"] = json.dumps(cykafka.mask_secrets(conf))
    seen["translate notes"] = json.dumps(cykafka.translate(conf)[1])  # [0] is the real config
    seen["log"] = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    out, err = capfd.readouterr()
    seen["stdout/stderr"] = out + err
    # the explain CLI, in a subprocess
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "cykafka.cli",
            "explain",
            "--json",
            *[f"-X{k}={v}" for k, v in conf.items()],
        ],
        capture_output=True,
        text=True,
        env=child_env(),
    )
    assert cli.returncode == 0, cli.stderr
    seen["cli explain"] = cli.stdout + cli.stderr
    assert errors and len(seen["log"]) > 10_000  # debug=all really logged, auth really ran
    assert "[redacted]" in seen["log"] or "***" in seen["log"]
    for where, text in seen.items():
        _assert_clean(where, text)
    record("secret grep: repr/config/explain/CLI/logs(debug=all)/callbacks/futures", len(seen), 0)


BAD_CONFIGS = [
    # (config additions, why it fails)
    ({"no.such.property": "1"}, "unknown key next to secrets"),
    ({"my.app.secret": SECRET}, "unknown secret-looking key"),
    ({"sasl.password": object()}, "unsupported value type"),
    ({"sasl.password": float("nan")}, "non-finite value"),
    (
        {
            "sasl.username": "u",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            f'required username="u" password="{SECRET}-jaas";',
        },
        "two spellings of the password disagree",
    ),
    ({"sasl.mechanism": "NOPE"}, "bad mechanism"),
    (
        {"security.protocol": "SASL_SSL", "ssl.key.location": "/nonexistent/key.pem"},
        "unreadable key with a key password",
    ),
    (
        {"sasl.oauthbearer.method": "oidc", "sasl.mechanism": "OAUTHBEARER"},
        "oidc without the endpoint",
    ),
    ({"acks": SECRET}, "a secret pasted into the wrong key"),
]


@pytest.mark.parametrize("extra, why", BAD_CONFIGS, ids=[w for _, w in BAD_CONFIGS])
def test_config_errors_do_not_echo_secrets(extra: dict[str, Any], why: str) -> None:
    conf = {**_secret_config("127.0.0.1:1"), **extra}
    with pytest.raises((ValueError, TypeError)) as info:
        cykafka.Producer(conf)
    exc = info.value
    texts = [str(exc), repr(exc), *(str(a) for a in exc.args)]
    if why == "a secret pasted into the wrong key":
        # Not a secret key: its value may be quoted.  Documented, not masked.
        return
    for t in texts:
        _assert_clean(f"exception for {why}", t)
    for t in (str(exc.__cause__ or ""), str(exc.__context__ or "")):
        _assert_clean(f"chained exception for {why}", t)
    # One row per case; tests/soak/table.py sums rows with the same item.
    record("bad configs carrying secrets: refused, secret not in the exception", 1, 0, 0, refused=1)


def test_failed_delivery_error_never_quotes_the_payload() -> None:
    # Regression: rd_kafka_message_errstr() returned the payload (not NUL-terminated)
    # as the "error string" of every failed delivery report.
    conf = {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 200, "log_level": 0}
    payload = b"PAYLOAD-" + SECRET.encode()
    with cykafka.Producer(conf) as p:
        f = p.produce("t", payload)
        bf = p.produce_batch("t", [payload, payload])
        p.flush(10)
    texts = [str(f.exception(0)), repr(f), *(str(e) for _, e in bf.result(0).errors)]
    for t in texts:
        assert "PAYLOAD-" not in t and "Message timed out" in t, t
