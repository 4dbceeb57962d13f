"""Who the brokers' ACLs see for a config: the name cykafka's authorization errors give
(proven against Apache Kafka's refusals in tests/security/test_kafka_security.py)."""

from __future__ import annotations

import pytest

from cykafka._native import principal


@pytest.mark.parametrize(
    "config, who",
    [
        ({}, "User:ANONYMOUS"),
        ({"security.protocol": "SSL"}, "User:ANONYMOUS"),
        (
            {"security.protocol": "ssl", "ssl.certificate.location": "/c.pem"},
            "the TLS client certificate's principal",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.username": "alice", "sasl.password": "x"},
            "User:alice",
        ),
        (
            {"security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN",
             "sasl.username": "bob"},
            "User:bob",
        ),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
         "the OAUTHBEARER principal"),
        ({"security.protocol": "SASL_SSL"}, "the GSSAPI principal"),
    ],
)  # fmt: skip
def test_principal_names_the_user_never_the_password(config, who) -> None:
    assert principal(config) == who
