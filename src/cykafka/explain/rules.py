"""One small rule per guarantee, each reading the resolved configuration.

``Facts`` holds the effective values once; each rule adds its warnings, notes and loss
conditions to a ``Draft``.  Acceptance is librdkafka's own answer (``librdkafka_refusal``);
the other rules' claims are checked against librdkafka's mock cluster in
tests/presets/test_explain_matrix.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from .. import presets as _presets
from ..config import INT32_MAX, ResolvedConfig, batch_sizing, canonical, same_value
from ..config.properties import LIBRDKAFKA_PROPERTIES
from ..config.secrets import secret_values
from .measured import MEASURED_INFLIGHT1_REORDER, MEASURED_RETRIES0_REORDER
from .report import REFUSED

__all__ = ["RULES", "Draft", "Facts"]


class Unasked:
    """No verdict given: :class:`Facts` asks librdkafka itself."""


UNASKED = Unasked()


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def _number(value: str) -> Optional[float]:
    try:
        return float(value)
    except ValueError:
        return None


def _acks(value: str) -> Optional[int]:
    v = value.strip().lower()
    if v == "all":
        return -1
    try:
        return int(v)
    except ValueError:
        return None


@dataclass
class Facts:
    """The effective values the rules read (explicit, preset or librdkafka default)."""

    r: ResolvedConfig
    #: librdkafka's verdict when the caller asked it already (:func:`librdkafka_refusal`
    #: with ``whole``); else asked here.
    asked: Union[Optional[str], Unasked] = UNASKED

    def __post_init__(self) -> None:
        r = self.r
        self.transactional = r.transactional
        self.idempotent = r.idempotent
        self.acks_raw = r.effective("acks").value
        acks = _acks(self.acks_raw)  # None: refused by librdkafka (see refusal)
        self.acks = -1 if acks is None else acks
        self.inflight = self._num("max.in.flight.requests.per.connection", 1e6)
        self.retries = self._num("message.send.max.retries", INT32_MAX)
        self.timeout = self._num("message.timeout.ms", 300000.0)
        self.linger = self._num("queue.buffering.max.ms", 5.0)
        self.req_timeout = self._num("request.timeout.ms", 30000.0)
        self.txn_timeout = self._num("transaction.timeout.ms", 60000.0)
        self.gapless = r.effective("enable.gapless.guarantee").value.lower() == "true"
        self.partitioner = r.effective("partitioner").value.strip()
        self.queuing = r.effective("queuing.strategy").value.strip().lower()
        self.retrying = self.retries > 0 and self.acks != 0
        self.refusal = librdkafka_refusal(r) if isinstance(self.asked, Unasked) else self.asked

    def _num(self, name: str, fallback: float) -> float:
        v = _number(self.r.effective(name).value)
        return fallback if v is None else v  # not a number: refused by librdkafka


@dataclass
class Draft:
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    loss: list[str] = field(default_factory=list)
    silent: bool = False
    ordering: str = "none"
    duplicates: bool = False
    gap: str = "n/a"
    partitioning: str = ""


def presets_rule(f: Facts, d: Draft) -> None:
    """A preset's required keys, and user settings that undo a preset's guarantee."""
    for name in f.r.presets:
        p = _presets.describe(name)
        for req in p.requires:
            found = f.r.explicit(req)
            if found is None or not found[1].value.strip():
                d.warnings.append(
                    f"preset {name!r} needs {req}: without it the producer is not "
                    "transactional (the Producer refuses this config)."
                )
        for key, value in p.settings.items():
            found = f.r.explicit(key)
            if found is None or found[1].source not in ("user", "translated"):
                continue
            mine = found[1].value
            if not same_value(mine, value, canonical(key)):
                d.warnings.append(
                    f"your {key}={mine} overrides preset {name!r} ({key}={value}): "
                    f"the preset's guarantee no longer holds as documented ({p.summary})"
                )


#: Properties whose values act on the world outside the process when a producer is
#: built (brokers contacted, certificates and keytabs read, plugins loaded, kinit run):
#: left out of the construction explain asks librdkafka for.
_OUTSIDE = ("metadata.broker.list", "bootstrap.servers", "security.protocol", "client.rack")
_OUTSIDE_PREFIXES = ("ssl", "sasl.", "https.", "plugin.", "interceptors")


def librdkafka_refusal(r: ResolvedConfig, whole: bool = False) -> Optional[str]:
    """Why librdkafka refuses to build a producer from ``r``, in its own words; None
    when it builds one.  librdkafka itself is asked (the same properties the Producer
    hands it, then ``rd_kafka_new``), so explain cannot disagree with it on ranges and
    cross-checks it documents loosely (linger.ms is adjusted below an unset
    message.timeout.ms, message.timeout.ms follows transaction.timeout.ms...).

    ``whole``: every property but the brokers, as a front door about to build the
    producer asks (its files are read, its plugins loaded, its unknown keys refused)."""
    from .._native import config_refusal

    # A key librdkafka does not know is the translation rule's warning: a plugin (left
    # out here) may define it.
    lib = {
        k: v
        for k, v in r.librdkafka().items()
        if (whole and k not in ("bootstrap.servers", "metadata.broker.list"))
        or (
            k in LIBRDKAFKA_PROPERTIES and k not in _OUTSIDE and not k.startswith(_OUTSIDE_PREFIXES)
        )
    }
    return config_refusal({**lib, "log_level": "0"}, tuple(secret_values(r.librdkafka())))


def acceptance_rule(f: Facts, d: Draft) -> None:
    """The config librdkafka refuses to build a producer from, in its words."""
    if f.refusal is not None:
        reason = f.refusal.removeprefix("Failed to create producer: ").strip().rstrip(".")
        d.warnings.append(f"{REFUSED}{reason}.")


def ordering_rule(f: Facts, d: Draft) -> None:
    """Per-partition order only with idempotence; why not otherwise."""
    if f.idempotent:
        d.ordering = "per-partition"
        d.notes.append(
            "Order is per partition only; do not mix produce() with explicit partitions and "
            "partitioner-chosen ones on one topic (librdkafka queues the latter until the "
            "partition count is known, placing them after)."
        )
        return
    d.ordering = "none"
    if f.r.explicit("enable.idempotence") is None:
        d.notes.append(
            "enable.idempotence not set: the Java client (3.0+) defaults to true, librdkafka "
            "to false - without it retries may reorder or duplicate messages "
            "(use preset 'ordered')."
        )
    if f.queuing == "lifo":
        d.warnings.append("queuing.strategy=lifo sends newer messages first: order is reversed.")
    if f.acks == 0:
        return
    if not f.retrying:
        d.warnings.append(f"{MEASURED_RETRIES0_REORDER}. Use enable.idempotence=true.")
    elif f.inflight == 1:
        d.warnings.append(
            "max.in.flight.requests.per.connection=1 without enable.idempotence=true is NOT "
            f"an ordering guarantee on librdkafka (unlike the Java client): "
            f"{MEASURED_INFLIGHT1_REORDER}. Use enable.idempotence=true (preset 'ordered')."
        )
    else:
        d.warnings.append(
            f"retries ({_fmt(f.retries)}) with {_fmt(f.inflight)} requests in flight and no "
            "idempotence: a retried batch can be written after later batches (reordering), "
            "and a retry after a lost acknowledgement writes the batch twice (duplicates). "
            'librdkafka: "retrying may cause reordering unless enable.idempotence is set to '
            'true".'
        )


def duplicates_rule(f: Facts, d: Draft) -> None:
    """Retries without idempotence can write a batch twice."""
    d.duplicates = not f.idempotent and f.retrying
    if f.acks == 0 and f.retries > 0:
        d.warnings.append(
            f"acks=0 with retries={_fmt(f.retries)}: with no broker response librdkafka cannot "
            "detect a lost request, so retries give no protection; set retries=0 (preset "
            "'at_most_once') to make at-most-once explicit."
        )


def loss_rule(f: Facts, d: Draft) -> None:
    """Each way a message can end up not written, and whether the application is told."""
    if f.acks == 0:
        d.silent = True
        d.loss.append(
            'acks=0: "Broker does not send any response/ack" - a message lost in transit or '
            "on a broker failure is still reported as delivered (silent)."
        )
    elif f.acks == 1:
        d.silent = True
        d.warnings.append(
            "acks=1: the leader acknowledges before its followers have the data; if it fails "
            "before they catch up, acknowledged messages are lost and no error is reported "
            "(leader loss). Use acks=all for durability."
        )
        d.loss.append(
            "acks=1: leader failure before replication loses acknowledged messages (silent)."
        )
    elif f.acks > 1:
        d.loss.append(
            f"acks={f.acks}: acknowledged messages are lost if those {f.acks} replicas fail."
        )
    else:
        d.notes.append(
            "acks=all is only as strong as the topic's min.insync.replicas (broker side, not "
            "visible here); with min.insync.replicas=1 it degrades to acks=1."
        )
    if f.acks != 0:
        if f.retries == 0:
            d.loss.append(
                "retries=0: the first NOT_ENOUGH_REPLICAS, request timeout or disconnect fails "
                "the message (reported as a delivery error; after a disconnect it may still "
                "have been written). Leader changes are re-sent regardless (see ordering)."
            )
        elif f.retries < INT32_MAX:
            d.loss.append(
                f"retries={_fmt(f.retries)}: a message failing {_fmt(f.retries + 1)} times with "
                "retriable errors fails (reported as a delivery error)."
            )
    if f.timeout != 0:
        d.loss.append(
            f"message.timeout.ms={_fmt(f.timeout)}: a message not delivered within this time "
            "of produce() (queueing and retries included) fails with _MSG_TIMED_OUT "
            "(reported); if it was in flight it may still have been written "
            "(POSSIBLY_PERSISTED)."
        )
        if f.linger < f.timeout < f.linger + f.req_timeout:
            d.warnings.append(
                f"message.timeout.ms={_fmt(f.timeout)} is shorter than linger.ms + "
                f"request.timeout.ms ({_fmt(f.linger)} + {_fmt(f.req_timeout)}): a message can "
                "time out before the broker's ack timeout for its first request has elapsed, "
                "i.e. before any retry is possible (the Java client rejects such a "
                "delivery.timeout.ms outright)."
            )
    else:
        d.notes.append(
            "message.timeout.ms=0 means no timeout: undeliverable messages wait forever."
        )


def gaps_rule(f: Facts, d: Draft) -> None:
    """What a permanently failed batch does to the sequence (idempotent producers)."""
    if f.idempotent and f.gapless:
        d.gap = "fatal error"
        d.loss.append(
            "gapless: an error that would leave a gap raises fatal ERR__GAPLESS_GUARANTEE; the "
            "producer stops and every queued message fails (reported). Timeouts are not covered."
        )
    elif f.idempotent:
        d.gap = "skip (messages may be lost without a fatal error)"
        d.loss.append(
            "a permanent error on one batch fails its messages (reported per message) while "
            "later messages are still written: a gap, without a fatal error."
        )
    if f.transactional:
        d.notes.append(
            "Transactional: messages become visible to read_committed consumers only on "
            "commit_transaction(); an aborted transaction's messages are never seen by them."
        )


#: What librdkafka does with NULL keys, stated exactly (the Java client's KIP-794
#: uniform sticky partitioner is not implemented by librdkafka 2.16).
NULL_KEYS = (
    "NULL-key messages: librdkafka picks a random available partition and keeps it for "
    "sticky.partitioning.linger.ms (default 10 ms), then picks again at random; the Java "
    "client (KIP-794) instead switches after batch.size bytes and favours partitions with "
    "shorter queues. Keyed messages are unaffected."
)


def partitioning_rule(f: Facts, d: Draft) -> None:
    """Where keyed and NULL-key messages go, compared with the Java client."""
    if f.partitioner in ("murmur2_random", "murmur2"):
        d.partitioning = "java-compatible (murmur2)"
        if f.partitioner == "murmur2":
            d.notes.append(
                "partitioner=murmur2 maps NULL keys to a single partition (Java spreads them); "
                "murmur2_random matches Java for keyed messages."
            )
        else:
            d.notes.append(NULL_KEYS)
    else:
        d.partitioning = f"{f.partitioner} (not Java-compatible for keyed messages)"
        if f.r.explicit("partitioner") is None:
            d.notes.append(
                "No partitioner: librdkafka defaults to consistent_random (CRC32), so keyed "
                "messages land on different partitions than with the Java client; set "
                "partitioner=murmur2_random (preset 'java_compatible') to match it."
            )


#: Keys whose translation note the ordering rule already states more fully.
_COVERED = frozenset({"max.in.flight.requests.per.connection"})


def translation_rule(f: Facts, d: Draft) -> None:
    """What translating Java names did: behaviour changes are warnings, the rest notes."""
    for note in f.r.notes:
        if note.key in _COVERED:
            continue
        (d.warnings if note.warn else d.notes).append(note.text)


#: The rules, in the order their sentences appear.
def sizing_rule(f: Facts, d: Draft) -> None:
    """A batch.size lowered for a topic's max.message.bytes, and what librdkafka cannot
    do without it: the broker refuses a record batch above the limit whole
    (MESSAGE_TOO_LARGE) and librdkafka 2.16 fails every message in it, where the Java
    producer splits the batch and retries (measured on Apache Kafka 4.4)."""
    said = batch_sizing(f.r)
    if said is not None:
        d.notes.append(
            f"{said}: the broker refuses a larger record batch whole, and librdkafka fails "
            "every message in it (the Java producer splits it); only a message too large "
            "alone fails now."
        )


RULES = (
    presets_rule,
    acceptance_rule,
    ordering_rule,
    duplicates_rule,
    loss_rule,
    gaps_rule,
    partitioning_rule,
    translation_rule,
    sizing_rule,
)
