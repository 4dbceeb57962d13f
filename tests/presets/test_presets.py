from __future__ import annotations

import pytest

from cykafka import presets
from cykafka.config import resolve
from cykafka.explain import explain
from support.librdkafka import librdkafka_accepts


def test_names_cover_the_documented_presets() -> None:
    assert {
        "ordered",
        "strict_ordered",
        "exactly_once",
        "throughput",
        "at_most_once",
        "java_compatible",
    } <= set(presets.names())


def test_get_returns_fresh_copies() -> None:
    a = presets.get("ordered")
    a["acks"] = "0"
    assert presets.get("ordered")["acks"] == "all"
    with pytest.raises(TypeError):
        presets.describe("ordered").settings["acks"] = "0"  # type: ignore[index]


def test_ordered_settings() -> None:
    s = presets.get("ordered")
    assert s["enable.idempotence"] == "true"
    assert s["acks"] == "all"
    assert s["max.in.flight.requests.per.connection"] == "5"
    assert s["message.send.max.retries"] == "2147483647"
    assert presets.get("strict_ordered")["enable.gapless.guarantee"] == "true"
    assert presets.get("java_compatible") == {"partitioner": "murmur2_random"}
    assert presets.get("at_most_once") == {"acks": "0", "message.send.max.retries": "0"}
    t = presets.get("throughput")
    assert t["acks"] == "1" and t["compression.type"] in ("lz4", "zstd")
    assert 10 <= int(t["linger.ms"]) < 100


def test_describe_has_docs() -> None:
    for name in presets.names():
        p = presets.describe(name)
        assert p.name == name and p.summary and p.guarantees
    assert "duplicates possible" in presets.describe("throughput").guarantees
    assert "transactional.id" not in presets.get("exactly_once")
    assert presets.describe("exactly_once").requires == ("transactional.id",)


@pytest.mark.parametrize("name", [n for n in presets.names() if n != "exactly_once"])
def test_every_preset_is_accepted_by_librdkafka(name: str) -> None:
    librdkafka_accepts(resolve({}, name).require().librdkafka())


def test_exactly_once_accepted_with_transactional_id() -> None:
    librdkafka_accepts(resolve({"transactional.id": "t-1"}, "exactly_once").require().librdkafka())


def test_combinations_accepted_by_librdkafka() -> None:
    librdkafka_accepts(resolve({}, "ordered+java_compatible").librdkafka())
    librdkafka_accepts(resolve({}, ["strict_ordered", "java_compatible"]).librdkafka())
    combo = resolve({"transactional.id": "t"}, "exactly_once,strict_ordered")
    librdkafka_accepts(combo.require().librdkafka())


def test_explicit_config_overrides_preset_even_through_alias() -> None:
    out = resolve({"message.send.max.retries": 3, "linger.ms": 1}, "ordered").librdkafka()
    assert out["message.send.max.retries"] == "3"
    assert out["linger.ms"] == "1"
    # The same property under its alias: one key reaches librdkafka, the caller's.
    out = resolve({"request.required.acks": "-1"}, "throughput").librdkafka()
    assert out["request.required.acks"] == "-1"
    assert "acks" not in out


def test_resolve_accepts_all_spellings() -> None:
    a = resolve({}, ["ordered", "java_compatible"]).librdkafka()
    assert a == resolve({}, "ordered+java_compatible").librdkafka()
    assert a == resolve({}, "ordered, java_compatible").librdkafka()
    assert resolve({"linger.ms": "1"}, None).librdkafka() == {"linger.ms": "1"}


def test_unknown_preset_names_it_and_lists_valid() -> None:
    with pytest.raises(ValueError, match="'fastest'") as e:
        resolve({}, "ordered+fastest")
    for n in presets.names():
        assert n in str(e.value)


@pytest.mark.parametrize(
    "combo",
    [
        "at_most_once+ordered",
        "throughput+ordered",
        "at_most_once+exactly_once",
        "at_most_once+throughput",
    ],
)
def test_incompatible_presets(combo: str) -> None:
    with pytest.raises(ValueError, match="incompatible"):
        resolve({"transactional.id": "t"}, combo)


def test_exactly_once_requires_transactional_id() -> None:
    with pytest.raises(ValueError, match="preset 'exactly_once' needs transactional.id"):
        resolve({}, "exactly_once").require()
    with pytest.raises(ValueError, match="transactional.id"):
        resolve({"transactional.id": " "}, "exactly_once").require()
    resolved = resolve({"transactional.id": "t"}, "exactly_once").require()
    assert resolved.librdkafka()["transactional.id"] == "t"
    assert resolved.transactional


def test_java_compatible_combines_with_everything() -> None:
    for name in presets.names():
        cfg = resolve({"transactional.id": "t"}, [name, "java_compatible"]).librdkafka()
        assert cfg["partitioner"] == "murmur2_random"


@pytest.mark.parametrize(
    ("name", "ordering", "dups"),
    [
        ("ordered", "per-partition", False),
        ("strict_ordered", "per-partition", False),
        ("exactly_once", "per-partition", False),
        ("throughput", "none", True),
        ("at_most_once", "none", False),
    ],
)
def test_presets_deliver_their_documented_guarantees(name: str, ordering: str, dups: bool) -> None:
    g = explain({"transactional.id": "t"} if name == "exactly_once" else {}, preset=name)
    assert (g.ordering, g.duplicates_possible) == (ordering, dups)
    assert not g.refused
