"""WriteOptions: the one list of what write_kafka and kafka_batch_writer take, checked
when made; the front doors' signatures and docs are made from it."""

import dataclasses
import inspect
import pickle

import pytest

from cykafka.spark import WriteOptions, kafka_batch_writer, write_kafka
from cykafka.spark.options import OptionArguments

BS = "127.0.0.1:1"


def _options() -> list[str]:
    return [f.name for f in dataclasses.fields(WriteOptions) if f.init]


@pytest.mark.parametrize(
    ("door", "left_out"), [(write_kafka, set()), (kafka_batch_writer, {"job_id"})]
)
def test_each_front_door_shows_every_option_with_its_doc(door, left_out) -> None:
    params = inspect.signature(door).parameters
    doc = inspect.getdoc(door) or ""
    for name in _options():
        if name in left_out:
            assert name not in params
            continue
        assert name in params, name
        shown = f"**{name}:" if name == "producer_config" else f"{name}:"
        assert f"\n    {shown} " in doc, name
    assert params["producer_config"].kind is inspect.Parameter.VAR_KEYWORD
    assert "options" in params


def test_arguments_by_position_keyword_and_producer_config_make_the_same_options() -> None:
    write = OptionArguments(positional=18)
    made = write.options(("t", BS, "ordered", "k"), {"writers": 2, "linger_ms": 5}, None)
    assert made == WriteOptions(
        "t", BS, "ordered", key="k", writers=2, producer_config={"linger_ms": 5}
    )
    assert made.config == {"linger.ms": 5, "bootstrap.servers": BS}
    stream = OptionArguments(positional=3, leave_out=("job_id",))
    with pytest.raises(TypeError, match="too many positional"):
        stream.options(("t", BS, "ordered", "k"), {}, None)
    ready = WriteOptions("t", BS)
    assert write.options((), {}, ready) is ready
    with pytest.raises(TypeError, match="not beside it"):
        write.options((), {"key": "k"}, ready)


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"on_error": "ignore"}, "on_error"),
        ({"writers": 0}, "writers"),
        ({"repartition": "yes"}, "repartition"),
        ({"order_by": ["ts", 3]}, "order_by"),
        ({"job_id": "j"}, "apply to preset='exactly_once'"),
        ({"preset": "exactly_once", "job_id": "a/b"}, "without '/'"),
        ({"producer_config": {"kafka.key.serializer": "x"}}, "not supported"),
        ({"topics": "t"}, "topics must be a non-empty list of topic names"),
        ({"topics": []}, "topics must be a non-empty list"),
        ({"topics": ["t", ""]}, "topics must be a non-empty list"),
    ],
)
def test_a_bad_option_fails_when_the_options_are_made(given, error) -> None:
    with pytest.raises(ValueError, match=error):
        WriteOptions("t", BS, **given)


def test_bootstrap_servers_from_spark_option_or_environment(monkeypatch) -> None:
    monkeypatch.delenv("CYKAFKA_BOOTSTRAP_SERVERS", raising=False)
    with pytest.raises(ValueError, match="bootstrap_servers is required"):
        WriteOptions("t")
    given = WriteOptions("t", producer_config={"kafka.bootstrap.servers": "b:1"})
    assert given.config["bootstrap.servers"] == "b:1"
    monkeypatch.setenv("CYKAFKA_BOOTSTRAP_SERVERS", "e:1")
    assert WriteOptions("t").config["bootstrap.servers"] == "e:1"


def test_each_unit_gets_its_transactional_id_on_the_one_resolution() -> None:
    mine = WriteOptions("t", BS, "exactly_once", producer_config={"transactional.id": "orders"})
    assert mine.transactional and mine.resolved.explicit("transactional.id") is None
    setting = mine.unit_config("etl", 3).explicit("transactional.id")
    assert setting is not None and setting[1].value == "orders-etl-3"
    default = WriteOptions("t", BS, "exactly_once").unit_config("etl", 0)
    assert default.settings["transactional.id"].value == "cykafka-spark-etl-0"
    # what is explained is a transactional producer, as each task's is
    assert mine.guarantees("etl").transactional
    plain = WriteOptions("t", BS, "ordered")
    assert plain.unit_config(None, 3) is plain.resolved


def test_refused_config_is_named_and_batch_writer_checks_when_made() -> None:
    refused = WriteOptions("t", BS, "exactly_once", producer_config={"enable.idempotence": "false"})
    with pytest.raises(ValueError, match="producer config refused"):
        refused.guarantees("j")
    with pytest.raises(ValueError, match="producer config refused"):
        kafka_batch_writer(options=refused, query="q")
    with pytest.raises(ValueError, match="needs query="):
        kafka_batch_writer("t", BS, "exactly_once")
    with pytest.raises(ValueError, match="not job_id"):
        kafka_batch_writer(options=WriteOptions("t", BS, "exactly_once", job_id="j"), query="q")


def test_options_travel_to_executors_as_plain_data_unchanged() -> None:
    o = WriteOptions("t", BS, "ordered", order_by=("a", "b"), producer_config={"batch.size": 65536})
    data = pickle.loads(pickle.dumps(o.to_json()))
    assert not any("cykafka" in type(v).__module__ for v in data.values())
    back = WriteOptions.from_json(data)
    assert back == o and back.resolved == o.resolved and back.config == o.config
