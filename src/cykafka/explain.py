"""What a producer config actually guarantees on librdkafka, in plain words.

``explain(config, preset=...)`` applies presets and Java-name translation exactly as the
Producer would, fills in librdkafka's own defaults and automatic adjustments, and
reports ordering, duplicates, loss, gap handling and partitioning, plus a warning for
every risky or refused combination.

Defaults below were read from CONFIGURATION.md (2.0.2, the installed doc) and checked
against the 2.16.0 runtime bundled in confluent-kafka 2.16.1 via rd_kafka_conf_dump()
and rd_kafka_topic_conf_dump(); none of the producer defaults used here changed between
the two versions.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from . import presets as _presets
from .config import CYKAFKA_KEYS, canonical, normalise_value, translate

__all__ = ["DEFAULTS", "MEASURED_INFLIGHT1_REORDER", "Guarantees", "explain"]

INT32_MAX = _presets.INT32_MAX

#: librdkafka defaults that matter for guarantees, keyed by canonical property name.
DEFAULTS: Mapping[str, str] = {
    "request.required.acks": "-1",  # acks: "-1 or all" (since 1.0)
    "enable.idempotence": "false",
    "enable.gapless.guarantee": "false",
    "max.in.flight.requests.per.connection": "1000000",
    "message.send.max.retries": str(INT32_MAX),  # 2 before librdkafka 1.0
    "message.timeout.ms": "300000",
    "queue.buffering.max.ms": "5",  # linger.ms; 0.5 before librdkafka 1.9
    "request.timeout.ms": "30000",
    "partitioner": "consistent_random",
    "transaction.timeout.ms": "60000",
    "queuing.strategy": "fifo",
}

#: The measurement behind the in-flight=1 warning.  tests/test_testing.py
#: (test_inflight1_without_idempotence_reorders_measured) re-measures it on every run
#: and asserts the range *as this text states it* (parsed from the warning), both ends:
#: every run measured so far gave 9-10 inversions with 1 in flight and 10-12 with 5, so
#: the range is wide enough for a loaded CI machine and narrow enough to be a claim.
MEASURED_INFLIGHT1_INVERSIONS = (5, 20)

_LO, _HI = MEASURED_INFLIGHT1_INVERSIONS

MEASURED_INFLIGHT1_REORDER = (
    "measured with cykafka.testing.verify_ordering on librdkafka 2.16.0's mock cluster "
    "(acks=all, one partition, batch.num.messages=10, every 7th Produce request failing "
    "with retriable NOT_ENOUGH_REPLICAS, 2000 messages): all 2000 arrived exactly once, but "
    f"every run had order inversions, between {_LO} and {_HI} per run of 2000 (e.g. 10; each a "
    "failed batch of 10 written after the next batch) when produce() calls kept arriving "
    f"during retries (10 messages every 5 ms), as many with 5 in flight, fewer than {_LO} when "
    "all 2000 were queued at once, and 0 with enable.idempotence=true"
)

_REFUSED = "librdkafka will refuse to create this producer: "


@dataclass(frozen=True)
class Guarantees:
    """The delivery guarantees of one effective producer config."""

    ordering: str  # "none" | "per-partition"
    duplicates_possible: bool
    #: A produced message can end up not written (any cause, see loss_conditions).
    loss_possible: bool
    #: Each way that can happen, saying whether the application is told.
    loss_conditions: list[str]
    gap_behaviour: str  # "fatal error" | "skip (...)" | "n/a"
    partitioning: str
    transactional: bool
    warnings: list[str]
    #: A message reported as delivered may still be missing (acks=0 / acks=1).
    silent_loss_possible: bool = False
    #: Informational sentences (why ordering is what it is, broker-side caveats...).
    notes: list[str] = field(default_factory=list)
    #: Effective values of the properties considered, with where each came from.
    settings: dict[str, str] = field(default_factory=dict)
    presets: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """librdkafka would fail to construct a producer from this config."""
        return any(w.startswith(_REFUSED) for w in self.warnings)

    def summary(self) -> str:
        """One sentence for the end of ``cykafka import`` and similar."""
        if self.refused:
            first = next(w for w in self.warnings if w.startswith(_REFUSED))
            return first[0].upper() + first[1:].rstrip(".") + "."
        order = (
            "per-partition order" if self.ordering == "per-partition" else "no ordering guarantee"
        )
        dups = "duplicates possible" if self.duplicates_possible else "no duplicates from retries"
        if self.silent_loss_possible:
            loss = "messages can be lost silently"
        elif self.loss_possible:
            loss = "failed messages are reported"
        else:
            loss = "no loss"
        parts = [order, dups, loss, f"partitioning {self.partitioning}"]
        if self.transactional:
            parts.insert(0, "transactional")
        text = "; ".join(parts)
        if self.warnings:
            n = len(self.warnings)
            text += f"; {n} warning{'s' if n != 1 else ''}"
        return text[0].upper() + text[1:] + "."

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = self.summary()
        d["refused"] = self.refused
        return d

    def __str__(self) -> str:
        def wrap(text: str, first: str, rest: str) -> str:
            return textwrap.fill(text, 100, initial_indent=first, subsequent_indent=rest)

        yes = {True: "yes", False: "no"}
        title = "Delivery guarantees (librdkafka 2.16"
        title += f", presets: {'+'.join(self.presets)})" if self.presets else ")"
        lines = [
            title,
            f"  ordering:            {self.ordering}",
            f"  duplicates possible: {yes[self.duplicates_possible]}",
            f"  loss possible:       {yes[self.loss_possible]}"
            + (" (including silently)" if self.silent_loss_possible else ""),
        ]
        lines += [wrap(c, "    - ", "      ") for c in self.loss_conditions]
        lines += [
            f"  gap behaviour:       {self.gap_behaviour}",
            f"  partitioning:        {self.partitioning}",
            f"  transactional:       {yes[self.transactional]}",
        ]
        if self.settings:
            lines.append("Settings considered:")
            lines += [f"  {k} = {v}" for k, v in self.settings.items()]
        if self.warnings:
            lines.append("Warnings:")
            lines += [wrap(w, "  ! ", "    ") for w in self.warnings]
        if self.notes:
            lines.append("Notes:")
            lines += [wrap(n, "  - ", "    ") for n in self.notes]
        lines.append(wrap(self.summary(), "Summary: ", "  "))
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def _acks(value: str) -> Optional[int]:
    v = value.strip().lower()
    if v == "all":
        return -1
    try:
        return int(v)
    except ValueError:
        return None


def _number(value: str) -> Optional[float]:
    try:
        return float(value)
    except ValueError:
        return None


def _scalar_items(config: Mapping[str, Any]) -> dict[str, Any]:
    # Callbacks and nested dicts (error_cb, default.topic.config...) carry no guarantee
    # semantics and cannot be translated; leave them out of the analysis.
    return {
        str(k): v
        for k, v in config.items()
        if isinstance(v, (str, bytes, int, float)) and not callable(v)
    }


def explain(config: Mapping[str, Any], *, preset: _presets.PresetSpec = None) -> Guarantees:
    """Explain ``config`` (Java or librdkafka names) with optional preset(s) applied.

    Raises ValueError for unknown/incompatible presets and untranslatable Java keys;
    everything else, including configs librdkafka would refuse, is reported as warnings.
    """
    user, _ = translate(_scalar_items(config))
    merged, chosen = _presets.merge(user, preset)

    warnings: list[str] = []
    notes: list[str] = []

    user_canon = {canonical(k): normalise_value(v, k) for k, v in user.items()}
    eff: dict[str, str] = {}
    source: dict[str, str] = {}
    for key, value in merged.items():
        if key in CYKAFKA_KEYS:
            continue
        canon = canonical(key)
        eff[canon] = normalise_value(value, key)
        if canon in user_canon:
            source[canon] = "config"
        else:
            owners = [p for p in chosen if key in _presets.describe(p).settings]
            source[canon] = f"preset {owners[0]}" if owners else "config"

    def setting(canon: str) -> str:
        if canon not in eff:
            eff[canon] = DEFAULTS[canon]
            source[canon] = "librdkafka default"
        return eff[canon]

    # ---- preset requirements and overrides -------------------------------------------
    for name in chosen:
        p = _presets.describe(name)
        for req in p.requires:
            if not str(merged.get(req, "")).strip():
                warnings.append(
                    f"preset {name!r} needs {req}: without it the producer is not "
                    "transactional (apply() refuses this config)."
                )
        for key, value in p.settings.items():
            canon = canonical(key)
            if canon in user_canon and not _presets._same(user_canon[canon], value, canon):
                warnings.append(
                    f"your {key}={user_canon[canon]} overrides preset {name!r} ({key}={value}): "
                    f"the preset's guarantee no longer holds as documented ({p.summary})"
                )

    # ---- effective values -------------------------------------------------------------
    transactional_id = str(merged.get("transactional.id", "")).strip()
    transactional = bool(transactional_id)
    idem_explicit = eff.get("enable.idempotence")
    # transactional.id implies idempotence (verified on 2.16: it constructs without
    # enable.idempotence, and refuses an explicit enable.idempotence=false).
    idempotent = setting("enable.idempotence").lower() == "true" or (
        transactional and idem_explicit is None
    )
    if transactional and idem_explicit is None:
        eff["enable.idempotence"] = "true"
        source["enable.idempotence"] = "implied by transactional.id"
    # CONFIGURATION.md, enable.idempotence: "The following configuration properties are
    # adjusted automatically (if not modified by the user) when idempotence is enabled:
    # max.in.flight.requests.per.connection=5, retries=INT32_MAX, acks=all,
    # queuing.strategy=fifo. Producer instantiation will fail if user-supplied
    # configuration is incompatible."
    if idempotent:
        for canon, value in (
            ("max.in.flight.requests.per.connection", "5"),
            ("message.send.max.retries", str(INT32_MAX)),
            ("request.required.acks", "-1"),
        ):
            if canon not in eff:
                eff[canon] = value
                source[canon] = "librdkafka auto-adjust for idempotence"
    if transactional and "message.timeout.ms" not in eff:
        # "The message timeout is automatically adjusted to transaction.timeout.ms if
        # transactional.id is configured."
        eff["message.timeout.ms"] = setting("transaction.timeout.ms")
        source["message.timeout.ms"] = "librdkafka: = transaction.timeout.ms"

    acks_raw = setting("request.required.acks")
    acks = _acks(acks_raw)
    inflight = _number(setting("max.in.flight.requests.per.connection"))
    retries = _number(setting("message.send.max.retries"))
    timeout = _number(setting("message.timeout.ms"))
    linger = _number(setting("queue.buffering.max.ms"))
    req_timeout = _number(setting("request.timeout.ms"))
    gapless = setting("enable.gapless.guarantee").lower() == "true"
    partitioner = setting("partitioner").strip()
    queuing = setting("queuing.strategy").strip().lower()
    if transactional:
        setting("transaction.timeout.ms")
    for name, val in (
        ("acks", acks),
        ("max.in.flight.requests.per.connection", inflight),
        ("message.send.max.retries", retries),
        ("message.timeout.ms", timeout),
        ("linger.ms", linger),
        ("request.timeout.ms", req_timeout),
    ):
        if val is None:
            warnings.append(f"{_REFUSED}{name} is not a number.")
    acks = -1 if acks is None else acks
    inflight = inflight if inflight is not None else 1e6
    retries = retries if retries is not None else INT32_MAX
    timeout = timeout if timeout is not None else 300000.0
    linger = linger if linger is not None else 5.0
    req_timeout = req_timeout if req_timeout is not None else 30000.0
    retrying = retries > 0 and acks != 0

    # ---- configs librdkafka refuses (checked against 2.16 at construction) ------------
    if idempotent:
        if inflight > 5:
            warnings.append(
                f"{_REFUSED}max.in.flight.requests.per.connection={_fmt(inflight)} but "
                "enable.idempotence requires <= 5."
            )
        if acks != -1:
            warnings.append(f"{_REFUSED}acks={acks_raw} but enable.idempotence requires acks=all.")
        if retries == 0:
            warnings.append(f"{_REFUSED}retries=0 but enable.idempotence requires retries >= 1.")
        if queuing != "fifo":
            warnings.append(
                f"{_REFUSED}queuing.strategy={queuing} but enable.idempotence requires fifo."
            )
    if gapless and not idempotent:
        warnings.append(f"{_REFUSED}enable.gapless.guarantee requires enable.idempotence=true.")
    if transactional and idem_explicit is not None and idem_explicit.lower() != "true":
        warnings.append(f"{_REFUSED}transactional.id requires enable.idempotence=true.")
    if timeout != 0 and timeout <= linger:
        warnings.append(
            f"{_REFUSED}message.timeout.ms={_fmt(timeout)} must be greater than linger.ms={_fmt(linger)}."
        )
    if transactional and source.get("message.timeout.ms") == "config":
        txn_timeout = _number(eff["transaction.timeout.ms"]) or 60000.0
        if timeout == 0 or timeout > txn_timeout:
            warnings.append(
                f"{_REFUSED}message.timeout.ms={_fmt(timeout)} must be <= "
                f"transaction.timeout.ms={_fmt(txn_timeout)} with transactional.id."
            )

    # ---- risky combinations -----------------------------------------------------------
    if not idempotent and retrying and inflight == 1:
        warnings.append(
            "max.in.flight.requests.per.connection=1 without enable.idempotence=true is NOT "
            f"an ordering guarantee on librdkafka (unlike the Java client): {MEASURED_INFLIGHT1_REORDER}. "
            "Use enable.idempotence=true (preset 'ordered')."
        )
    elif not idempotent and retrying and inflight > 1:
        warnings.append(
            f"retries ({_fmt(retries)}) with {_fmt(inflight)} requests in flight and no idempotence: a "
            "retried batch can be written after later batches (reordering), and a retry after "
            'a lost acknowledgement writes the batch twice (duplicates). librdkafka: "retrying '
            'may cause reordering unless enable.idempotence is set to true".'
        )
    if acks == 0 and retries > 0:
        warnings.append(
            f"acks=0 with retries={_fmt(retries)}: with no broker response librdkafka cannot detect "
            "a lost request, so retries give no protection; set retries=0 (preset "
            "'at_most_once') to make at-most-once explicit."
        )
    if acks == 1:
        warnings.append(
            "acks=1: the leader acknowledges before its followers have the data; if it fails "
            "before they catch up, acknowledged messages are lost and no error is reported "
            "(leader loss). Use acks=all for durability."
        )
    if timeout != 0 and linger < timeout < linger + req_timeout:
        warnings.append(
            f"message.timeout.ms={_fmt(timeout)} is shorter than linger.ms + request.timeout.ms "
            f"({_fmt(linger)} + {_fmt(req_timeout)}): a message can time out before the broker's ack "
            "timeout for its first request has elapsed, i.e. before any retry is possible "
            "(the Java client rejects such a delivery.timeout.ms outright)."
        )
    if queuing == "lifo" and not idempotent:
        warnings.append("queuing.strategy=lifo sends newer messages first: order is reversed.")

    # ---- the guarantees ---------------------------------------------------------------
    ordering = "per-partition" if idempotent else "none"
    if idempotent:
        notes.append(
            "Order is per partition only; do not mix produce() with explicit partitions and "
            "partitioner-chosen ones on one topic (librdkafka queues the latter until the "
            "partition count is known, placing them after)."
        )
    elif not retrying:
        notes.append(
            "Without retries librdkafka does not reorder (its doc ties reordering to retries), "
            "but cykafka only promises order with idempotence."
        )
    duplicates = not idempotent and retrying

    loss: list[str] = []
    silent = False
    if acks == 0:
        silent = True
        loss.append(
            'acks=0: "Broker does not send any response/ack" - a message lost in transit or '
            "on a broker failure is still reported as delivered (silent)."
        )
    elif acks == 1:
        silent = True
        loss.append(
            "acks=1: leader failure before replication loses acknowledged messages (silent)."
        )
    elif acks > 1:
        loss.append(f"acks={acks}: acknowledged messages are lost if those {acks} replicas fail.")
    else:
        notes.append(
            "acks=all is only as strong as the topic's min.insync.replicas (broker side, not "
            "visible here); with min.insync.replicas=1 it degrades to acks=1."
        )
    if acks != 0:
        if retries == 0:
            loss.append(
                "retries=0: the first transient error (leader change, NOT_ENOUGH_REPLICAS, "
                "request timeout) fails the message (reported as a delivery error)."
            )
        elif retries < INT32_MAX:
            loss.append(
                f"retries={_fmt(retries)}: a message failing {_fmt(retries + 1)} times with retriable "
                "errors fails (reported as a delivery error)."
            )
    if timeout != 0:
        loss.append(
            f"message.timeout.ms={_fmt(timeout)}: a message not delivered within this time of "
            "produce() (queueing and retries included) fails with _MSG_TIMED_OUT (reported); "
            "if it was in flight it may still have been written (POSSIBLY_PERSISTED)."
        )
    else:
        notes.append("message.timeout.ms=0 means no timeout: undeliverable messages wait forever.")
    if idempotent and gapless:
        gap = "fatal error"
        loss.append(
            "gapless: an error that would leave a gap raises fatal ERR__GAPLESS_GUARANTEE; the "
            "producer stops and every queued message fails (reported). Timeouts are not covered."
        )
    elif idempotent:
        gap = "skip (messages may be lost without a fatal error)"
        loss.append(
            "a permanent error on one batch fails its messages (reported per message) while "
            "later messages are still written: a gap, without a fatal error."
        )
    else:
        gap = "n/a"
    if transactional:
        notes.append(
            "Transactional: messages become visible to read_committed consumers only on "
            "commit_transaction(); an aborted transaction's messages are never seen by them."
        )

    if partitioner in ("murmur2_random", "murmur2"):
        partitioning = "java-compatible (murmur2)"
        if partitioner == "murmur2":
            notes.append(
                "partitioner=murmur2 maps NULL keys to a single partition (Java spreads them); "
                "murmur2_random matches Java for both."
            )
    else:
        partitioning = f"{partitioner} (not Java-compatible for keyed messages)"

    shown = [
        "request.required.acks",
        "enable.idempotence",
        "enable.gapless.guarantee",
        "max.in.flight.requests.per.connection",
        "message.send.max.retries",
        "message.timeout.ms",
        "queue.buffering.max.ms",
        "request.timeout.ms",
        "partitioner",
    ]
    if transactional:
        shown.append("transaction.timeout.ms")
    settings = {k: f"{eff[k]} ({source[k]})" for k in shown if k in eff}
    if transactional:
        settings["transactional.id"] = f"{transactional_id} ({'config'})"

    return Guarantees(
        ordering=ordering,
        duplicates_possible=duplicates,
        loss_possible=bool(loss),
        loss_conditions=loss,
        gap_behaviour=gap,
        partitioning=partitioning,
        transactional=transactional,
        warnings=warnings,
        silent_loss_possible=silent,
        notes=notes,
        settings=settings,
        presets=chosen,
    )
