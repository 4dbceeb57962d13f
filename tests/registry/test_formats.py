"""serializer_for / serializers_for: the front doors' way to a registry serializer, and
the errors naming the culprit."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from cykafka.schema_registry import (
    AvroSerializer,
    JSONSerializer,
    ProtobufSerializer,
    serialize_column,
    serializer_for,
    serializers_for,
)
from support.registry import mock_url


def test_each_format_and_the_errors_name_the_culprit(tmp_path: Path) -> None:
    url = mock_url()
    assert isinstance(serializer_for("avro", url), AvroSerializer)  # schema derived later
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object"}')
    assert isinstance(serializer_for("json-schema", url, str(schema)), JSONSerializer)
    assert isinstance(
        serializer_for("protobuf", url, "support.proto_types:Order"), ProtobufSerializer
    )
    with pytest.raises(ValueError, match=r"value format 'xml' is not a registry format"):
        serializer_for("xml", url)
    with pytest.raises(FileNotFoundError, match=r"key: schema file '/nope.avsc' does not exist"):
        serializers_for("avro", url, None, "avro", "/nope.avsc")
    with pytest.raises(ValueError, match=r"json-schema needs a schema"):
        serializer_for("json-schema", url)
    with pytest.raises(ValueError, match=r"protobuf needs the message class as module:Message"):
        serializer_for("protobuf", url, "orders.proto")
    with pytest.raises(
        ValueError, match=r"cannot load protobuf message 'support.proto_types:Nope'"
    ):
        serializer_for("protobuf", url, "support.proto_types:Nope")


def test_serialize_column_gives_one_column_and_the_bad_rows() -> None:
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    ser = serializer_for("avro", mock_url(), json.dumps(schema))
    table = pa.concat_tables([pa.table({"n": [1, 2**40]}), pa.table({"n": [3, 2**35]})])
    column, bad = serialize_column(ser, table, "t")
    assert len(column) == 4 and column.null_count == 2
    assert sorted(bad) == [1, 3] and "out of range" in bad[3]
    assert column[2].as_py() == b"\x00\x00\x00\x00\x01\x06"
