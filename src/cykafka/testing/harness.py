"""The ordering harness: produce numbered messages through faults, read them back, count
what went wrong."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from .._load import load_native
from ..cluster.wire import log_ends
from .log import LogRecord, RawRecord, read_log, read_raw_log
from .mock import MockCluster
from .report import OrderingReport, PartitionReport

if TYPE_CHECKING:
    from .._native import KafkaDeliveryError, RecordMetadata
    from ..presets import PresetSpec

_native = load_native()

__all__ = ["FaultAction", "Faults", "verify_ordering"]

# ---------------------------------------------------------------------------
# The ordering harness
# ---------------------------------------------------------------------------

#: A key as ``verify_ordering`` takes it: bytes, text (UTF-8) or None.
Keyish = Union[bytes, bytearray, memoryview, str, None]
#: A fault action: called with the MockCluster (e.g. ``lambda m: m.set_broker_down(1)``).
FaultAction = Callable[[MockCluster], object]
#: ``[(after_n_messages, action), ...]`` or ``fn(mock, n_produced)`` called every
#: ``fault_every`` messages.
Faults = Union[Sequence[tuple[int, FaultAction]], Callable[[MockCluster, int], object], None]


def _keys_arg(keys: Union[int, Sequence[Keyish], None]) -> list[Optional[bytes]]:
    if keys is None:
        return [None]
    if isinstance(keys, bool):
        raise TypeError("keys must be a count, a sequence of keys, or None")
    if isinstance(keys, int):
        if keys < 1:
            raise ValueError(f"keys must be >= 1, not {keys}")
        return [f"key-{i}".encode() for i in range(keys)]
    out = [k.encode() if isinstance(k, str) else (None if k is None else bytes(k)) for k in keys]
    if not out or len(set(out)) != len(out):
        raise ValueError("keys must be non-empty and distinct")
    return out


def _schedule(
    faults: Faults, messages: int, fault_every: int
) -> Callable[[MockCluster, int], None]:
    """A function called with the count of messages produced so far."""
    if faults is None:
        return lambda mock, n: None
    if callable(faults):
        fn = faults

        def every(mock: MockCluster, n: int) -> None:
            if n and n % fault_every == 0:
                fn(mock, n)

        return every
    schedule = sorted(((int(n), a) for n, a in faults), key=lambda x: x[0])
    for n, a in schedule:
        if not callable(a):
            raise TypeError(f"fault action at {n} is not callable: {a!r}")
    idx = [0]

    def at(mock: MockCluster, n: int) -> None:
        while idx[0] < len(schedule) and schedule[idx[0]][0] <= n:
            schedule[idx[0]][1](mock)
            idx[0] += 1

    return at


def verify_ordering(
    producer_config: Mapping[str, Any],
    mock: MockCluster,
    messages: int = 2000,
    keys: Union[int, Sequence[Keyish], None] = 1,
    topic: Optional[str] = None,
    partitions: int = 1,
    faults: Faults = None,
    preset: PresetSpec = None,
    *,
    fault_every: int = 100,
    flush_timeout: float = 60.0,
    heal: bool = True,
    warmup: bool = True,
) -> OrderingReport:
    """Produce ``messages`` sequence-numbered messages through a ``cykafka.Producer``
    built from ``producer_config`` (+ ``preset``) against ``mock``, read the
    partitions back, and report inversions, duplicates, losses and failures.

    Message ``i`` has key ``keys[i % len(keys)]`` (``keys``: a count, a list, or
    None for unkeyed messages) and carries its per-key sequence number in its
    value.  ``faults`` runs fault actions during production (see :data:`Faults`);
    with ``heal`` (default) the cluster is healed after the last message so the
    flush can finish.  ``topic`` defaults to a fresh one with ``partitions``
    partitions.  With ``warmup`` (default) one unnumbered record per partition
    is delivered first, so the producer is connected when the run starts.
    """
    from ..producer import Producer

    if messages < 1:
        raise ValueError(f"messages must be >= 1, not {messages}")
    key_list = _keys_arg(keys)
    nkeys = len(key_list)
    run = uuid.uuid4().hex[:8]
    if topic is None:
        topic = f"cykafka-verify-{run}"
        mock.create_topic(topic, partitions, 1)
    else:
        try:
            mock.create_topic(topic, partitions, 1)
        except _native.KafkaError as exc:
            if exc.name != "TOPIC_ALREADY_EXISTS":
                raise
    tick = _schedule(faults, messages, fault_every)
    config = {**producer_config, "bootstrap.servers": mock.bootstrap_servers}
    config.setdefault("log_level", 3)

    # index -> (error name or None, partition, offset); filled on the event thread.
    outcome: list[Optional[tuple[Optional[str], int, int]]] = [None] * messages

    def recorder(i: int) -> Callable[[Optional[KafkaDeliveryError], RecordMetadata], None]:
        def cb(exc: Optional[KafkaDeliveryError], md: RecordMetadata) -> None:
            outcome[i] = (None if exc is None else exc.name, md.partition, md.offset)

        return cb

    start = time.monotonic()
    producer = Producer(config, preset=preset)
    try:
        if warmup:
            # Connected, with the leaders known, before the first fault fires:
            # otherwise every message is queued before the first connection
            # and faults scheduled "during" the run hit an idle producer.
            for p in range(partitions):
                producer.produce(topic, b"warmup", partition=p).result(flush_timeout)
        for i in range(messages):
            tick(mock, i)
            k = i % nkeys
            producer.produce(
                topic,
                f"{run}:{k}:{i // nkeys}".encode(),
                key=key_list[k],
                on_delivery=recorder(i),
            )
        tick(mock, messages)
        if heal:
            mock.heal()
        producer.flush(flush_timeout)
        applied = producer.config
        idempotent = producer._resolved.idempotent
        if str(applied.get("acks", applied.get("request.required.acks"))) == "0":
            _until_appended(mock, topic, flush_timeout)
    finally:
        # Whatever is still undelivered is purged: its reports say so (failed).
        producer.close(0)
    elapsed = time.monotonic() - start

    nparts = max(partitions, 1 + max((o[1] for o in outcome if o is not None), default=0))
    log = read_log(mock, topic, nparts)
    # The raw log carries each batch's producer id, epoch and sequence: what tells a mock
    # artefact from a real duplicate or loss.  Uncompressed, gzip and lz4 are parsed.
    try:
        raw: Optional[list[RawRecord]] = read_raw_log(mock, topic, nparts)
    except ValueError:
        raw = None
    return _analyse(topic, run, messages, key_list, outcome, log, applied, elapsed, raw, idempotent)


def _until_appended(mock: MockCluster, topic: str, timeout: float) -> None:
    """With acks=0 a delivery report says the request was written to the socket, not
    that the broker read it: closing the producer right away lost requests the broker
    had not read yet (measured on the mock: all 30 of a run's requests in 3 of 25
    loaded runs), a loss of the close, not of the fault under test.  Wait until the
    topic's log ends stop moving (asked 0.2 s apart, twice alike)."""
    client = {"bootstrap.servers": mock.bootstrap_servers}
    deadline = time.monotonic() + timeout
    last = log_ends(client, topic, timeout)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = log_ends(client, topic, timeout)
        if now == last:
            return
        last = now


def _analyse(
    topic: str,
    run: str,
    messages: int,
    key_list: list[Optional[bytes]],
    outcome: list[Optional[tuple[Optional[str], int, int]]],
    log: list[LogRecord],
    config: dict[str, Any],
    elapsed: float,
    raw: Optional[list[RawRecord]] = None,
    idempotent: bool = False,
) -> OrderingReport:
    nkeys = len(key_list)
    reports: dict[int, PartitionReport] = {}

    def part(p: int) -> PartitionReport:
        if p not in reports:
            reports[p] = PartitionReport(p)
        return reports[p]

    # Where each (key index, seq) was written: list of (partition, offset).
    written: dict[tuple[int, int], list[tuple[int, int]]] = {}
    by_partition: dict[int, list[tuple[int, int, int]]] = {}  # p -> [(offset, k, seq)]
    at_offset: dict[tuple[int, int], tuple[int, int]] = {}
    prefix = run.encode() + b":"
    for rec in log:
        if rec.value is None or not rec.value.startswith(prefix):
            continue  # another run's record on a shared topic
        _, k_text, seq_text = rec.value.decode().split(":")
        ks = (int(k_text), int(seq_text))
        written.setdefault(ks, []).append((rec.partition, rec.offset))
        by_partition.setdefault(rec.partition, []).append((rec.offset, ks[0], ks[1]))
        at_offset[(rec.partition, rec.offset)] = ks
        part(rec.partition).written += 1

    # Where each key's messages went (for attributing failures without a partition).
    key_partition: dict[int, int] = {}
    for i, o in enumerate(outcome):
        if o is not None and o[1] >= 0 and o[0] is None:
            key_partition.setdefault(i % nkeys, o[1])

    raw_ids, gaps = _raw_identities(raw or [], prefix)
    errors: dict[str, int] = {}
    undelivered = 0
    for i, o in enumerate(outcome):
        k, seq = i % nkeys, i // nkeys
        if o is None:
            undelivered += 1
            o = ("(no delivery report)", -1, -1)
        err, p, off = o
        if p < 0:
            p = key_partition.get(k, written.get((k, seq), [(-1, -1)])[0][0])
        pr = part(p)
        pr.produced += 1
        copies = written.get((k, seq), [])
        if err is not None:
            errors[err] = errors.get(err, 0) + 1
            pr.failed += 1
            if copies:
                pr.failed_but_written += 1
        elif not copies:
            value = f"{run}:{k}:{seq}".encode()
            if value in raw_ids:
                pr.unread += 1
            elif idempotent and gaps.get(p, 0) > 0:
                pr.unconfirmed_losses += 1
            else:
                pr.losses += 1
        if err is None and off >= 0 and at_offset.get((p, off)) != (k, seq):
            pr.misreported_offsets += 1
        if len(copies) > 1:
            ids = raw_ids.get(f"{run}:{k}:{seq}".encode(), [])
            # Copies sharing the first copy's (producer id, epoch, sequence) are retries
            # a real broker would not have appended; a copy without a sequence or with
            # another identity is a real duplicate.
            same = sum(1 for ident in ids[1:] if ident == ids[0] and ident[2] >= 0) if ids else 0
            same = min(same, len(copies) - 1)
            pr.mock_duplicates += same
            if len(copies) - 1 - same == 0:
                continue
            pr.duplicates += len(copies) - 1 - same
            if len(pr.duplicate_examples) < 5:
                pr.duplicate_examples.append((key_list[k], seq, sorted(o for _, o in copies)))

    for p, recs in by_partition.items():
        _count_order(part(p), recs, key_list)

    return OrderingReport(
        topic=topic,
        messages=messages,
        keys=nkeys,
        partitions=reports,
        config=dict(config),
        elapsed=elapsed,
        undelivered=undelivered,
        errors=errors,
    )


def _count_order(
    pr: PartitionReport, recs: list[tuple[int, int, int]], key_list: list[Optional[bytes]]
) -> None:
    """Count in ``pr`` the messages of one partition (``(offset, key index, seq)``) that
    came after a later one of their key."""
    recs.sort()
    highest: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    last: dict[int, int] = {}
    for off, k, seq in recs:
        if (k, seq) in seen:
            continue  # a duplicate copy: counted as a duplicate, not an inversion
        seen.add((k, seq))
        top = highest.get(k, -1)
        if seq < top:
            pr.reordered_messages += 1
        if seq < last.get(k, -1):
            pr.inversions += 1
            if len(pr.inversion_examples) < 5:
                pr.inversion_examples.append((key_list[k], off, seq, last[k]))
        last[k] = seq
        highest[k] = max(top, seq)


def _raw_identities(
    raw: list[RawRecord], prefix: bytes
) -> tuple[dict[bytes, list[tuple[int, int, int]]], dict[int, int]]:
    """Per value of this run: the (producer id, epoch, sequence) of each stored copy in
    offset order; per partition: how many sequence numbers are missing between the
    first and last sequence of a producer id and epoch (a gap a real broker refuses)."""
    ids: dict[bytes, list[tuple[int, int, int]]] = {}
    seqs: dict[tuple[int, int, int], set[int]] = {}
    for rec in sorted(raw, key=lambda r: (r.partition, r.offset)):
        if rec.control is not None or rec.value is None:
            continue
        if rec.sequence >= 0:
            seqs.setdefault((rec.partition, rec.producer_id, rec.producer_epoch), set()).add(
                rec.sequence
            )
        if rec.value.startswith(prefix):
            ids.setdefault(rec.value, []).append(
                (rec.producer_id, rec.producer_epoch, rec.sequence)
            )
    gaps: dict[int, int] = {}
    for (partition, _, _), found in seqs.items():
        missing = max(found) - min(found) + 1 - len(found)
        gaps[partition] = gaps.get(partition, 0) + missing
    return ids, gaps
