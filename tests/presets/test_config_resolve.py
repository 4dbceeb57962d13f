"""The one resolver: presets + user config + Java translation + defaults, with provenance."""

from __future__ import annotations

import dataclasses

import pytest

from cykafka import Producer
from cykafka.config import ResolvedConfig, resolve


def test_provenance_per_property() -> None:
    r = resolve(
        {"retries": 3, "linger.ms": 7, "bootstrap.servers": "127.0.0.1:1"},
        "ordered+java_compatible",
    )
    s = r.settings
    assert (s["message.send.max.retries"].source, s["message.send.max.retries"].origin) == (
        "translated",
        "retries",
    )
    assert (s["linger.ms"].source, s["linger.ms"].value) == ("user", "7")
    assert (s["partitioner"].source, s["partitioner"].origin) == ("preset", "java_compatible")
    assert (s["enable.idempotence"].source, s["enable.idempotence"].origin) == ("preset", "ordered")
    assert (s["enable.sparse.connections"].source, s["enable.sparse.connections"].origin) == (
        "default",
        "cykafka",
    )
    assert r.effective("request.timeout.ms").describe() == "librdkafka default"
    assert r.presets == ("ordered", "java_compatible")


def test_resolved_config_is_immutable() -> None:
    r = resolve({"acks": "all"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.presets = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        r.settings["acks"] = r.settings["acks"]  # type: ignore[index]


def test_the_producer_runs_what_the_resolver_says() -> None:
    cfg = {"bootstrap.servers": "127.0.0.1:1", "buffer.memory": 1 << 20, "sasl.password": "pw"}
    with Producer(cfg, preset="ordered") as p:
        # statistics.interval.ms is the inspector's, added at construction
        running = {k: v for k, v in p.config.items() if k != "statistics.interval.ms"}
        assert running == resolve(cfg, "ordered").masked()
        assert isinstance(p._resolved, ResolvedConfig)


def test_transactional_implies_idempotence_and_timeout() -> None:
    r = resolve({"transactional.id": "t", "transaction.timeout.ms": 30000})
    assert r.idempotent and r.transactional
    assert r.effective("message.timeout.ms").value == "30000"
    assert r.effective("max.in.flight").value == "5"


def test_max_block_ms_is_cykafka_s() -> None:
    r = resolve({"max.block.ms": 5})
    assert r.max_block_ms == 5 and "max.block.ms" not in r.librdkafka()
    with pytest.raises(ValueError, match="max.block.ms"):
        resolve({"max.block.ms": -1})


def test_front_door_defaults_go_under_presets_and_user() -> None:
    defaults = {"linger.ms": 50, "acks": "1", "batch.num.messages": 5000}
    r = resolve({"linger.ms": 7}, "ordered", defaults=defaults, defaults_origin="cykafka import")
    s = r.settings
    assert (s["linger.ms"].value, s["linger.ms"].source) == ("7", "user")
    assert (s["acks"].value, s["acks"].source) == ("all", "preset")
    assert s["batch.num.messages"].describe() == "cykafka import default"


def test_producer_takes_a_resolved_config_with_front_door_defaults() -> None:
    r = resolve(
        {"bootstrap.servers": "127.0.0.1:1"},
        "ordered",
        defaults={"linger.ms": 50},
        defaults_origin="cykafka import",
    )
    with Producer(r) as p:
        assert p.config["linger.ms"] == "50" and p.config["enable.idempotence"] == "true"
        assert p.guarantees.settings["queue.buffering.max.ms"] == "50 (cykafka import default)"
    with pytest.raises(TypeError, match="resolve"):
        Producer(r, preset="ordered")
    with pytest.raises(ValueError, match="transactional.id"):
        Producer(resolve({"bootstrap.servers": "127.0.0.1:1"}, "exactly_once"))


def test_a_resolution_travels_as_json_unchanged() -> None:
    """Spark's executors get the driver's resolution as JSON and build their producers
    from it: settings with their provenance, presets, notes and max.block.ms intact."""
    import json

    r = resolve(
        {"bootstrap.servers": "b:9092", "batch.size": 65536, "max.block.ms": 5000, "acks": "1"},
        "ordered",
    )
    assert r.notes and r.presets == ("ordered",)
    back = ResolvedConfig.from_json(json.loads(json.dumps(r.to_json())))
    assert back == r
    assert back.effective("acks") == r.effective("acks")
    with pytest.raises(ValueError, match="no source"):
        ResolvedConfig.from_json({**r.to_json(), "settings": {"acks": ["1", "guessed", "x"]}})
