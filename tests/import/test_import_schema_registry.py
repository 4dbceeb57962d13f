"""``cykafka import --value-format avro|json-schema|protobuf --schema-registry URL``:
records serialized for a Confluent registry (the session's real one, Apicurio); a row
that does not fit the schema is dead-lettered with its row and field."""

from __future__ import annotations

import gc
import io
import json
import socket
import urllib.parse
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cykafka.cli import main
from support.registry import registered_id

SCHEMA = {
    "type": "record",
    "name": "Visit",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "city", "type": ["null", "string"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["web", "app"]}},
        {"name": "source", "type": "string", "default": "import"},
    ],
}


def run(broker: Any, *args: str) -> int:
    return main(["import", "-b", broker.bootstrap_servers, "--no-progress", *args])


def values(broker: Any, read_back: Any, name: str, n: int) -> list[Any]:
    return [
        r for part in read_back(broker.bootstrap_servers, name, expected=n).values() for r in part
    ]


def framed(registry: Any, subject: str) -> bytes:
    """Confluent's framing of a record of ``subject``'s latest schema: magic byte 0 and
    the id the registry gave it."""
    return b"\x00" + registered_id(registry, subject).to_bytes(4, "big")


def avro(payload: bytes, schema: Any) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(payload[5:]), fastavro.parse_schema(schema))


def test_parquet_as_registry_avro_bad_row_dead_lettered(
    broker: Any, topic: Any, read_back: Any, tmp_path: Path, schema_registry: Any
) -> None:
    table = pa.table(
        {
            "id": [1, 2, 3, 4],
            "city": ["Lyon", None, "Porto", "Turku"],
            "kind": ["web", "app", "fax", "web"],
            "user": ["u1", "u2", "u3", "u1"],
        }
    )
    pq.write_table(table, tmp_path / "visits.parquet")
    (tmp_path / "visit.avsc").write_text(json.dumps(SCHEMA))
    name = topic()
    dead = tmp_path / "dead.jsonl"
    code = run(
        broker,
        str(tmp_path / "visits.parquet"),
        "-t",
        name,
        "--value-format",
        "avro",
        "--schema-registry",
        schema_registry.url,
        "--value-schema",
        str(tmp_path / "visit.avsc"),
        "--key-field",
        "user",
        "--key-format",
        "avro",
        "--key-schema",
        '"string"',
        "--dead-letter",
        str(dead),
    )
    assert code == 1  # one row not delivered
    got = values(broker, read_back, name, 3)
    assert {r.value[:5] for r in got} == {framed(schema_registry, f"{name}-value")}
    decoded = sorted((avro(r.value, SCHEMA) for r in got), key=lambda v: v["id"])
    assert decoded[0] == {"id": 1, "city": "Lyon", "kind": "web", "source": "import"}
    assert [d["id"] for d in decoded] == [1, 2, 4]
    keys = sorted(r.key for r in got)
    assert {k[:5] for k in keys} == {framed(schema_registry, f"{name}-key")}
    assert fastavro.schemaless_reader(io.BytesIO(keys[0][5:]), "string") == "u1"
    (entry,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert entry["row"] == 3 and "kind" in entry["error"] and "not a symbol" in entry["error"]


def test_jsonl_records_and_key_field_as_registry_avro(
    broker: Any, topic: Any, read_back: Any, tmp_path: Path, schema_registry: Any
) -> None:
    f = tmp_path / "v.jsonl"
    f.write_text('{"id": 1, "kind": "web"}\n{"id": "x", "kind": "app"}\n{"id": 3, "kind": "app"}\n')
    (tmp_path / "visit.avsc").write_text(json.dumps(SCHEMA))
    name = topic()
    dead = tmp_path / "dead.jsonl"
    args = ["--value-format", "avro", "--schema-registry", schema_registry.url]
    args += ["--dead-letter", str(dead)]
    args += ["--key-field", "kind", "--key-format", "avro", "--key-schema", '"string"']
    assert (
        run(broker, str(f), "-t", name, *args, "--value-schema", str(tmp_path / "visit.avsc")) == 1
    )
    got = sorted(values(broker, read_back, name, 2), key=lambda r: avro(r.value, SCHEMA)["id"])
    assert [avro(r.value, SCHEMA)["id"] for r in got] == [1, 3]
    assert got[0].key[:5] == framed(schema_registry, f"{name}-key")
    assert got[0].value[:5] == framed(schema_registry, f"{name}-value")
    assert fastavro.schemaless_reader(io.BytesIO(got[0].key[5:]), "string") == "web"
    (entry,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert entry["line"] == 2 and "field 'id'" in entry["error"]


def test_json_schema_import(
    broker: Any, topic: Any, read_back: Any, tmp_path: Path, schema_registry: Any
) -> None:
    f = tmp_path / "v.csv"
    f.write_text("id,city\n1,Lyon\n2,Porto\n")
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    name = topic()
    args = ["--value-format", "json-schema", "--schema-registry", schema_registry.url]
    assert run(broker, str(f), "-t", name, *args, "--value-schema", str(tmp_path / "s.json")) == 0
    got = values(broker, read_back, name, 2)
    assert {r.value[:5] for r in got} == {framed(schema_registry, f"{name}-value")}
    assert sorted((json.loads(r.value[5:]) for r in got), key=lambda d: d["id"]) == [
        {"city": "Lyon", "id": "1"},
        {"city": "Porto", "id": "2"},
    ]


def _open_sockets_to(url: str) -> list[socket.socket]:
    port = urllib.parse.urlsplit(url).port
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() != -1:
            try:
                if obj.getpeername()[1] == port:
                    found.append(obj)
            except OSError:  # not connected
                pass
    return found


def test_an_import_run_in_process_closes_its_registry_connections(
    broker: Any, topic: Any, tmp_path: Path, schema_registry: Any
) -> None:
    """``main()`` may run in a process that goes on (a notebook, a scheduler): the
    import's registry client is closed when it ends, not left open for the garbage
    collector to find."""
    f = tmp_path / "v.csv"
    f.write_text("id,city,kind\n1,Lyon,web\n")
    (tmp_path / "s.avsc").write_text(json.dumps(SCHEMA))
    before = _open_sockets_to(schema_registry.url)
    args = ["--value-format", "avro", "--schema-registry", schema_registry.url]
    assert (
        run(broker, str(f), "-t", topic(), *args, "--value-schema", str(tmp_path / "s.avsc")) == 0
    )
    left = [s for s in _open_sockets_to(schema_registry.url) if s not in before]
    assert not left, f"{len(left)} connection(s) to the registry left open: {left}"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--value-format", "avro"], "need --schema-registry URL"),
        (["--schema-registry", "mock://x"], "need --value-format/--key-format"),
        (
            [
                "--value-format",
                "avro",
                "--schema-registry",
                "mock://x",
                "--value-schema",
                "/no.avsc",
            ],
            "schema file '/no.avsc' does not exist",
        ),
        (
            ["--key-format", "avro", "--schema-registry", "mock://x"],
            "--key-format serializes the --key-field",
        ),
        (
            ["--value-format", "avro", "--schema-registry", "localhost:8081"],
            "--schema-registry localhost:8081: not a registry URL",
        ),
    ],
)
def test_usage_errors_name_the_flag(
    broker: Any, tmp_path: Path, capsys: Any, extra: list[str], message: str
) -> None:
    f = tmp_path / "v.csv"
    f.write_text("id\n1\n")
    assert run(broker, str(f), "-t", "never-written", *extra) == 2
    assert message in capsys.readouterr().err


def test_csv_as_registry_avro_text_parsed_into_the_schemas_types(
    broker: Any, topic: Any, read_back: Any, tmp_path: Path, schema_registry: Any
) -> None:
    f = tmp_path / "v.csv"
    f.write_text("id,city,kind\n1,Lyon,web\nnope,Porto,app\n3,,app\n")
    (tmp_path / "visit.avsc").write_text(json.dumps(SCHEMA))
    name = topic()
    dead = tmp_path / "dead.jsonl"
    args = ["--value-format", "avro", "--schema-registry", schema_registry.url]
    args += ["--dead-letter", str(dead)]
    assert (
        run(broker, str(f), "-t", name, *args, "--value-schema", str(tmp_path / "visit.avsc")) == 1
    )
    got = sorted(
        (avro(r.value, SCHEMA) for r in values(broker, read_back, name, 2)), key=lambda v: v["id"]
    )
    assert got == [
        {"id": 1, "city": "Lyon", "kind": "web", "source": "import"},
        {"id": 3, "city": None, "kind": "app", "source": "import"},  # an empty field is null
    ]
    (entry,) = [json.loads(line) for line in dead.read_text().splitlines()]
    assert entry["line"] == 3 and "'nope' is not a int64" in entry["error"]
