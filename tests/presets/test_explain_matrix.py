"""explain's statements against what librdkafka does, over generated configs.

Acceptance: every generated config is explained and then constructed as a real Producer;
``Guarantees.refused`` must equal "construction failed".  Ordering, duplicates and loss:
accepted configs run through the mock-cluster harness with retriable faults, and what
explain says must hold in the measurement (no inversions unless it warns of reordering,
no duplicates unless it says they are possible, nothing lost or failed unless it lists a
way).  CI runs a seeded sample of 150; ``-m slow`` runs 3,000 and a wider fault matrix.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

import pytest

from cykafka import KafkaConfigError, Producer, explain
from cykafka.testing import MockCluster, verify_ordering

# librdkafka's mock cluster (in this process) or a real broker: not a unit test.
pytestmark = pytest.mark.broker

DIMENSIONS: dict[str, list[Any]] = {
    "acks": [None, "0", "1", "all"],
    "enable.idempotence": [None, True, False],
    "max.in.flight.requests.per.connection": [None, 1, 5, 6],
    "retries": [None, 0, 3],
    "linger.ms": [None, 0, 5, 50],
    "message.timeout.ms": [None, 0, 1, 10, 70000],
    "transactional.id": [None, "tx-matrix"],
    "enable.gapless.guarantee": [None, True],
    "queuing.strategy": [None, "lifo"],
    "preset": [None, "ordered", "strict_ordered", "throughput", "at_most_once"],
}


def _configs() -> list[tuple[dict[str, Any], Any]]:
    out = []
    for values in itertools.product(*DIMENSIONS.values()):
        cfg = {k: v for k, v in zip(DIMENSIONS, values, strict=True) if v is not None}
        preset = cfg.pop("preset", None)
        out.append((cfg, preset))
    return out


ALL = _configs()  # 115,200 configs: too many to construct in one run
SAMPLE = random.Random(20261123).sample(ALL, 150)
WIDE_SAMPLE = random.Random(7).sample(ALL, 3000)


def _id(case: tuple[dict[str, Any], Any]) -> str:
    cfg, preset = case
    text = ",".join(f"{k}={v}" for k, v in cfg.items()) or "defaults"
    return f"{preset}:{text}" if preset else text


def _constructs(cfg: dict[str, Any], preset: Any) -> tuple[bool, str]:
    try:
        p = Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0, **cfg}, preset=preset)
    except KafkaConfigError as e:
        return False, str(e)
    p.close(0)
    return True, ""


def _check_acceptance(cases: list[tuple[dict[str, Any], Any]]) -> None:
    wrong = []
    for cfg, preset in cases:
        g = explain(cfg, preset=preset)
        ok, why = _constructs(cfg, preset)
        if g.refused == ok:
            said = next((w for w in g.warnings if "refuse" in w), "accepted")
            wrong.append(f"{_id((cfg, preset))}: explain: {said}; librdkafka: {why or 'accepted'}")
    assert not wrong, "\n".join(wrong)


def test_acceptance_matches_librdkafka_on_a_generated_sample() -> None:
    _check_acceptance(SAMPLE)


@pytest.mark.slow
def test_acceptance_matches_librdkafka_on_a_wide_sample() -> None:
    _check_acceptance(WIDE_SAMPLE)


def test_message_timeout_below_default_linger_is_accepted() -> None:
    g = explain({"message.timeout.ms": 1})
    assert not g.refused and _constructs({"message.timeout.ms": 1}, None)[0]


# -- behaviour under faults ------------------------------------------------------------

# Every 7th Produce request fails, alternating a replication error (counted as a retry)
# and a leader error (re-sent by librdkafka after a metadata refresh).
FAULTS = (
    ["NO_ERROR"] * 6 + ["NOT_ENOUGH_REPLICAS"] + ["NO_ERROR"] * 6 + ["NOT_LEADER_OR_FOLLOWER"]
) * 80

BEHAVIOUR_DIMENSIONS: dict[str, list[Any]] = {
    "enable.idempotence": [None, True],
    "retries": [None, 0],
    "max.in.flight.requests.per.connection": [1, 5],
}


def _behaviour_configs(dims: dict[str, list[Any]]) -> list[dict[str, Any]]:
    out = []
    for values in itertools.product(*dims.values()):
        cfg = {k: v for k, v in zip(dims, values, strict=True) if v is not None}
        if not explain(cfg).refused:
            out.append(cfg)
    return out


def _reorder_warned(g: Any) -> bool:
    return any("reorder" in w or "NOT an ordering guarantee" in w for w in g.warnings)


def _measure(cfg: dict[str, Any], messages: int = 2000) -> None:
    g = explain(cfg)
    with MockCluster(3) as mock:
        mock.push_request_errors("Produce", FAULTS)
        r = verify_ordering(
            {**cfg, "batch.num.messages": 10},
            mock,
            messages=messages,
            keys=1,
            faults=lambda m, n: time.sleep(0.005),
            fault_every=10,
        )
    print(cfg, r)
    if g.ordering == "per-partition" or not _reorder_warned(g):
        assert r.inversions == 0, (g.ordering, g.warnings, str(r))
    if not g.duplicates_possible:
        assert r.duplicates == 0, str(r)
    if not g.loss_possible:
        assert r.losses == 0 and r.failed == 0, str(r)
    if not g.silent_loss_possible:
        assert r.losses == 0, str(r)
    if any(c.startswith("retries=0: the first NOT_ENOUGH_REPLICAS") for c in g.loss_conditions):
        assert r.errors.get("NOT_ENOUGH_REPLICAS", 0) > 0, str(r)


@pytest.mark.parametrize(
    "cfg", _behaviour_configs(BEHAVIOUR_DIMENSIONS) + [{"acks": "0", "retries": 0}], ids=str
)
def test_explain_holds_under_retriable_faults(cfg: dict[str, Any]) -> None:
    _measure(cfg)


@pytest.mark.slow
@pytest.mark.parametrize(
    "cfg",
    _behaviour_configs(
        {
            **BEHAVIOUR_DIMENSIONS,
            "acks": ["1", "all"],
            "retries": [None, 0, 3],
            "linger.ms": [0, 20],
            "enable.gapless.guarantee": [None, True],
        }
    ),
    ids=str,
)
def test_explain_holds_under_retriable_faults_wide(cfg: dict[str, Any]) -> None:
    _measure(cfg)
