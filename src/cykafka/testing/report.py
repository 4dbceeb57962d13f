"""What verify_ordering found: per partition and in total."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["OrderingReport", "PartitionReport"]


@dataclass
class PartitionReport:
    """What one partition's log shows."""

    partition: int
    #: Messages produced whose key landed here (by the delivery report).
    produced: int = 0
    #: Records in the log from this run.
    written: int = 0
    #: Places where a key's sequence goes backwards in offset order: each is one
    #: "an earlier batch was written after a later one" event.
    inversions: int = 0
    #: Messages written after a higher-sequence message of the same key.
    reordered_messages: int = 0
    #: Extra copies: a sequence number written more than once.
    duplicates: int = 0
    #: Neither written nor reported failed (includes "delivered" but missing).
    losses: int = 0
    #: Reported failed by their delivery report.
    failed: int = 0
    #: Reported failed, yet written (librdkafka's POSSIBLY_PERSISTED case).
    failed_but_written: int = 0
    #: Reported delivered at an offset that holds a different record.
    misreported_offsets: int = 0
    #: Extra copies with the first copy's (producer id, epoch, sequence): a retry that a
    #: real broker answers with DUPLICATE_SEQUENCE_NUMBER instead of appending it, but
    #: librdkafka's mock appends again.  Not counted in ``duplicates``.
    mock_duplicates: int = 0
    #: Delivered, absent, and the partition's raw log shows a sequence gap for the
    #: producer: the mock accepted a batch after missing sequences, which a real broker
    #: refuses (OUT_OF_ORDER_SEQUENCE_NUMBER) and librdkafka then never acks the missing
    #: ones.  A loss the mock cannot confirm; not counted in ``losses``.
    unconfirmed_losses: int = 0
    #: Absent from the consumer's read but present in the raw log: a read-back artefact.
    unread: int = 0
    #: First few (key, offset, sequence, previous-highest-sequence) inversions.
    inversion_examples: list[tuple[Optional[bytes], int, int, int]] = field(default_factory=list)
    #: First few (key, sequence, offsets) duplicates.
    duplicate_examples: list[tuple[Optional[bytes], int, list[int]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.inversions or self.duplicates or self.losses or self.misreported_offsets)

    @property
    def mock_artefacts(self) -> int:
        return self.mock_duplicates + self.unconfirmed_losses + self.unread


@dataclass
class OrderingReport:
    """The outcome of :func:`verify_ordering`: per partition and in total."""

    topic: str
    messages: int
    keys: int
    partitions: dict[int, PartitionReport]
    config: dict[str, Any]
    elapsed: float = 0.0
    #: Delivery reports still missing after the flush timeout (counted as failed).
    undelivered: int = 0
    #: Delivery errors by librdkafka error name.
    errors: dict[str, int] = field(default_factory=dict)

    def _sum(self, attr: str) -> int:
        return sum(getattr(p, attr) for p in self.partitions.values())

    @property
    def inversions(self) -> int:
        return self._sum("inversions")

    @property
    def reordered_messages(self) -> int:
        return self._sum("reordered_messages")

    @property
    def duplicates(self) -> int:
        return self._sum("duplicates")

    @property
    def losses(self) -> int:
        return self._sum("losses")

    @property
    def failed(self) -> int:
        return self._sum("failed")

    @property
    def written(self) -> int:
        return self._sum("written")

    @property
    def misreported_offsets(self) -> int:
        return self._sum("misreported_offsets")

    @property
    def mock_duplicates(self) -> int:
        return self._sum("mock_duplicates")

    @property
    def unconfirmed_losses(self) -> int:
        return self._sum("unconfirmed_losses")

    @property
    def unread(self) -> int:
        return self._sum("unread")

    @property
    def ok(self) -> bool:
        """No inversions, duplicates, losses or misreported offsets.  (Reported
        failures are not "not ok": the application was told.)"""
        return all(p.ok for p in self.partitions.values())

    def __str__(self) -> str:
        verdict = "OK" if self.ok else "NOT OK"
        lines = [
            f"OrderingReport {verdict}: {self.messages} messages, {self.keys} key(s) -> "
            f"{self.topic!r}, {len(self.partitions)} partition(s), {self.elapsed:.2f} s",
            f"  written {self.written}, inversions {self.inversions} "
            f"({self.reordered_messages} messages out of order), duplicates "
            f"{self.duplicates}, losses {self.losses}, failed {self.failed}"
            + (
                f", misreported offsets {self.misreported_offsets}"
                if self.misreported_offsets
                else ""
            ),
        ]
        if self.mock_duplicates or self.unconfirmed_losses or self.unread:
            lines.append(
                "  mock artefacts (not counted above): "
                f"{self.mock_duplicates} same-sequence re-appends a real broker drops, "
                f"{self.unconfirmed_losses} delivered-but-absent after a sequence gap a real "
                f"broker refuses, {self.unread} absent from the consumer read but in the log"
            )
        if self.errors:
            lines.append(
                "  delivery errors: "
                + ", ".join(f"{k} x{v}" for k, v in sorted(self.errors.items()))
            )
        for p in sorted(self.partitions.values(), key=lambda p: p.partition):
            lines.append(
                f"  [{p.partition}] produced {p.produced} written {p.written} inversions "
                f"{p.inversions} duplicates {p.duplicates} losses {p.losses} failed {p.failed}"
                + (f" failed-but-written {p.failed_but_written}" if p.failed_but_written else "")
            )
            for key, off, seq, prev in p.inversion_examples:
                lines.append(
                    f"      inversion: key {key!r} seq {seq} at offset {off}, after seq {prev}"
                )
            for key, seq, offs in p.duplicate_examples:
                lines.append(f"      duplicate: key {key!r} seq {seq} at offsets {offs}")
        return "\n".join(lines)
