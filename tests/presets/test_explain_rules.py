"""explain's rules, one guarantee each, from configs alone (and librdkafka's acceptance)."""

from __future__ import annotations

import itertools
import json
import re

import confluent_kafka
import pytest

from cykafka.explain import DEFAULTS, explain
from support.librdkafka import librdkafka_accepts


def _has(g, *words: str) -> bool:
    return any(all(w in x for w in words) for x in g.warnings)


def test_inflight_one_without_idempotence_is_flagged() -> None:
    g = explain({"max.in.flight.requests.per.connection": 1, "acks": "all"})
    assert g.ordering == "none" and g.duplicates_possible
    assert _has(g, "max.in.flight.requests.per.connection=1", "NOT an ordering guarantee")
    # the measured range itself is checked against a fresh run in test_testing.py
    assert _has(g, "order inversions, between", "per run of 2000", "verify_ordering")


def test_java_spelling_of_inflight_is_flagged_too() -> None:
    g = explain({"max.in.flight": 1})
    assert _has(g, "NOT an ordering guarantee")


def test_librdkafka_defaults_alone() -> None:
    g = explain({})
    assert g.ordering == "none" and g.duplicates_possible and not g.transactional
    assert (
        g.partitioning.startswith("consistent_random") and "not Java-compatible" in g.partitioning
    )
    assert _has(g, "reordering", "duplicates")
    assert g.gap_behaviour == "n/a"
    assert g.settings["request.required.acks"].startswith("-1")


def test_idempotence_gives_order_and_skip_gaps() -> None:
    g = explain({"enable.idempotence": True})
    assert g.ordering == "per-partition" and not g.duplicates_possible
    assert g.gap_behaviour.startswith("skip")
    assert g.warnings == []
    assert g.settings["max.in.flight.requests.per.connection"].startswith("5 ")


def test_gapless_is_fatal() -> None:
    assert explain({}, preset="strict_ordered").gap_behaviour == "fatal error"


def test_transactional() -> None:
    g = explain({"transactional.id": "tx-1"})
    assert g.transactional and g.ordering == "per-partition"
    assert g.settings["message.timeout.ms"].startswith("60000")


def test_exactly_once_without_id_warns() -> None:
    assert _has(explain({}, preset="exactly_once"), "needs transactional.id")


def test_preset_override_conflict() -> None:
    g = explain({"enable.idempotence": False}, preset="ordered")
    assert g.ordering == "none"
    assert _has(g, "enable.idempotence=false", "overrides preset 'ordered'")
    # Same value spelled differently is not a conflict.
    assert not _has(explain({"acks": -1}, preset="ordered"), "overrides")


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        ({"enable.idempotence": True, "max.in.flight": 6}, "must be set <= 5"),
        ({"enable.idempotence": True, "acks": 1}, "must be set to `all`"),
        ({"enable.idempotence": True, "retries": 0}, "must be set >= 1"),
        ({"enable.gapless.guarantee": True}, "requires `enable.idempotence`"),
        ({"linger.ms": 50, "message.timeout.ms": 10}, "must be greater than `linger.ms`"),
        ({"transactional.id": "t", "message.timeout.ms": 70000}, "transaction.timeout.ms"),
        ({"transactional.id": "t", "enable.idempotence": False}, "requires `enable.idempotence"),
    ],
)
def test_refused_configs_are_flagged_and_really_refused(cfg: dict, words: str) -> None:
    g = explain(cfg)
    assert g.refused and "refuse" in g.summary()
    with pytest.raises(confluent_kafka.KafkaException, match=words):
        librdkafka_accepts(
            {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in cfg.items()}
        )


def test_acks_zero_with_retries_and_acks_one() -> None:
    g = explain({"acks": 0})
    assert _has(g, "acks=0 with retries") and g.silent_loss_possible and not g.duplicates_possible
    assert not _has(explain({}, preset="at_most_once"), "acks=0 with retries")
    g1 = explain({"acks": 1, "enable.idempotence": False})
    assert _has(g1, "acks=1", "leader") and g1.silent_loss_possible


def test_timeout_shorter_than_linger_plus_request_timeout() -> None:
    g = explain({"delivery.timeout.ms": 20000, "linger.ms": 100, "request.timeout.ms": 30000})
    assert _has(g, "shorter than linger.ms + request.timeout.ms")
    assert not g.refused


def test_loss_conditions() -> None:
    g = explain({}, preset="at_most_once")
    assert g.loss_possible and any("acks=0" in c for c in g.loss_conditions)
    assert any("message.timeout.ms" in c for c in explain({}, preset="ordered").loss_conditions)


def test_partitioning_java_compatible() -> None:
    assert explain({}, preset="java_compatible").partitioning == "java-compatible (murmur2)"
    g = explain(
        {"partitioner.class": "org.apache.kafka.clients.producer.internals.DefaultPartitioner"}
    )
    assert g.partitioning == "java-compatible (murmur2)"


def test_report_formats() -> None:
    g = explain({"sasl.password": "hunter22"}, preset="ordered+java_compatible")
    text = str(g)
    assert "ordering:" in text and "per-partition" in text and "hunter22" not in text
    d = g.to_dict()
    json.dumps(d)
    assert d["ordering"] == "per-partition" and d["summary"] == g.summary()
    assert g.summary().endswith(".") and "\n" not in g.summary()


def test_defaults_match_runtime_doc() -> None:
    assert DEFAULTS["request.required.acks"] == "-1"
    assert DEFAULTS["max.in.flight.requests.per.connection"] == "1000000"
    assert DEFAULTS["message.send.max.retries"] == "2147483647"
    assert DEFAULTS["queue.buffering.max.ms"] == "5"


def test_translation_changes_appear_in_explain() -> None:
    g = explain({"batch.size": 0, "compression.type": "gzip", "compression.lz4.level": 3})
    assert any(w.startswith("batch.size=0 (Java: no batching)") for w in g.warnings)
    assert any("compression.lz4.level=3 dropped" in w for w in g.warnings)
    assert any(n.startswith("enable.idempotence not set") for n in g.notes)


# -- explain against librdkafka, over the ranges CONFIGURATION.md documents ---------------

#: Each property at and beyond the edges of its documented range, and at values whose
#: meaning depends on another property (linger.ms against message.timeout.ms, which
#: follows transaction.timeout.ms with a transactional.id).
TIMING = {
    "linger.ms": [None, 0, 5, 70000, 299999, 300000, 300001, 900000, 900001],
    "message.timeout.ms": [None, 0, 1, 60000, 300000, 900000, 2147483647, 2147483648],
    "transactional.id": [None, "tx-range"],
    "transaction.timeout.ms": [None, 1000, 70000, 900000],
}
EDGES = {
    "acks": [-2, -1, 0, 1, 1000, 1001],
    "max.in.flight.requests.per.connection": [0, 1, 5, 6, 1000000, 1000001],
    "retries": [-1, 0, 1, 2147483647, 2147483648],
    "batch.num.messages": [0, 1, 1000000, 1000001],
    "batch.size": [0, 1, 2147483647],
    "queue.buffering.max.messages": [0, 1, 2147483647],
    "queue.buffering.max.kbytes": [0, 1, 2147483647],
    "request.timeout.ms": [0, 1, 900000, 900001],
    "message.max.bytes": [999, 1000, 1000000000, 1000000001],
    "retry.backoff.ms": [0, 1, 300000, 300001],
    "sticky.partitioning.linger.ms": [-1, 0, 900000, 900001],
}


def _table() -> list[dict]:
    out = []
    for values in itertools.product(*TIMING.values()):
        out.append({k: v for k, v in zip(TIMING, values, strict=True) if v is not None})
    for key, values in EDGES.items():
        for v in values:
            for idem in (None, True):
                cfg = {key: v} if idem is None else {key: v, "enable.idempotence": True}
                out.append(cfg)
    return out


def _producer_refusal(cfg: dict, preset) -> str:
    """What building the Producer says: "" when librdkafka builds it."""
    from cykafka import KafkaConfigError, Producer

    try:
        p = Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0, **cfg}, preset=preset)
    except KafkaConfigError as exc:
        return str(exc)
    p.close(0)
    return ""


@pytest.mark.filterwarnings("ignore::cykafka.config.ConfigWarning")
@pytest.mark.parametrize("preset", [None, "ordered"])
def test_explain_refuses_exactly_what_librdkafka_refuses(preset) -> None:
    wrong = []
    for cfg in _table():
        try:
            g = explain(cfg, preset=preset)
        except ValueError as exc:  # translation refuses it: so does the Producer
            with pytest.raises(ValueError, match=re.escape(str(exc))):
                _producer_refusal(cfg, preset)
            continue
        why = _producer_refusal(cfg, preset)
        if g.refused != bool(why):
            said = next((w for w in g.warnings if w.startswith("librdkafka")), "accepted")
            wrong.append(f"{cfg}: explain: {said}; librdkafka: {why or 'accepted'}")
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:20])


def test_notes_follow_the_resolved_settings_not_the_typed_ones() -> None:
    g = explain({}, preset="ordered")
    assert g.settings["enable.idempotence"] == "true (preset ordered)"
    assert not any("enable.idempotence not set" in n for n in g.notes), g.notes
    g = explain({}, preset="java_compatible")
    assert g.settings["partitioner"].startswith("murmur2_random (preset")
    assert not any(n.startswith("No partitioner") for n in g.notes), g.notes
    # with nothing set, both notes are there
    g = explain({})
    assert any(n.startswith("enable.idempotence not set") for n in g.notes)
    assert any(n.startswith("No partitioner") for n in g.notes)
