"""The listeners of a :class:`~cykafka.launchers.kafka.KafkaCluster` and their security:
TLS from PEM files, SASL/SCRAM logins and ACLs, as ``server.properties`` lines."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Listener", "Security"]


@dataclass(frozen=True)
class Listener:
    """A client listener of every node: its Kafka listener name and security protocol
    (``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``).

    ``certificate``/``key``: PEM files (certificate chain, unencrypted private key) this
    listener serves TLS with, instead of :class:`Security`'s (say a certificate made for
    another host name, to see clients refuse it)."""

    name: str
    protocol: str = "PLAINTEXT"
    certificate: str | os.PathLike[str] | None = None
    key: str | os.PathLike[str] | None = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


@dataclass(frozen=True)
class Security:
    """TLS, SASL and authorization of a :class:`KafkaCluster`.

    Args:
        certificate / key: PEM files (certificate chain, unencrypted PKCS#8 private key)
            every ``SSL``/``SASL_SSL`` listener serves, unless the listener has its own.
            Kafka reads them as a ``PEM`` keystore.
        ca: the PEM CA file clients should trust (:meth:`KafkaCluster.listener_config`
            passes it as ``ssl.ca.location``).
        sasl_mechanisms: what the ``SASL_*`` listeners accept; SCRAM only (users are
            added with :meth:`KafkaCluster.add_scram_user`).
        acls: run Kafka's ``StandardAuthorizer``: nothing is allowed without an ACL
            (:meth:`KafkaCluster.allow`), except to the first listener's principal
            (``User:ANONYMOUS`` on PLAINTEXT), which is a super user so that the
            cluster's own admin client, the brokers and the controllers keep working.
    """

    certificate: str | os.PathLike[str] | None = None
    key: str | os.PathLike[str] | None = None
    ca: str | os.PathLike[str] | None = None
    sasl_mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",)
    acls: bool = False

    def server_config(self, listeners: Sequence[Listener]) -> dict[str, str]:
        """The ``server.properties`` lines for ``listeners`` (per listener name)."""
        out: dict[str, str] = {}
        for ln in listeners:
            prefix = f"listener.name.{ln.name.lower()}."
            if ln.tls:
                cert = ln.certificate or self.certificate
                key = ln.key or self.key
                if cert is None or key is None:
                    raise ValueError(
                        f"listener {ln.name} ({ln.protocol}) needs a certificate and a key: "
                        "give Security(certificate=..., key=...) or Listener(certificate=..., key=...)"
                    )
                # Inline PEM (a PEM keystore *file* needs an encrypted key).
                out[prefix + "ssl.keystore.type"] = "PEM"
                out[prefix + "ssl.keystore.certificate.chain"] = Path(cert).read_text().strip()
                out[prefix + "ssl.keystore.key"] = Path(key).read_text().strip()
            if ln.sasl:
                out[prefix + "sasl.enabled.mechanisms"] = ",".join(self.sasl_mechanisms)
                for mech in self.sasl_mechanisms:
                    if not mech.startswith("SCRAM-"):
                        raise ValueError(f"sasl_mechanisms: only SCRAM-SHA-256/512, not {mech}")
                    out[prefix + f"{mech.lower()}.sasl.jaas.config"] = (
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                    )
        if any(ln.sasl for ln in listeners):
            out["sasl.enabled.mechanisms"] = ",".join(self.sasl_mechanisms)
        if self.acls:
            first = listeners[0]
            if first.protocol not in ("PLAINTEXT", "SSL"):
                raise ValueError(
                    "acls=True needs a PLAINTEXT (or SSL) first listener: its principal, "
                    "User:ANONYMOUS, is the super user the brokers and the test admin use"
                )
            out["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
            out["super.users"] = "User:ANONYMOUS"
        return out
