"""JSON Schema through a Confluent Schema Registry (validated and encoded per record,
as confluent-kafka's JSONSerializer does, with the same bytes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.common.json_schema import _json_dumps
from confluent_kafka.schema_registry.json_schema import JSONSerializer as _ConfluentJSON
from confluent_kafka.serialization import SerializationContext, SerializationError
from jsonschema import ValidationError

from ._common import (
    Chunk,
    RegistryLike,
    context,
    encoded_chunks,
    frame,
    registry_client,
    resolve_schema_id,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from ..serialized import Data

__all__ = ["JSONSerializer"]


class JSONSerializer:
    """A drop-in for ``confluent_kafka.schema_registry.json_schema.JSONSerializer``
    (same arguments, ``conf`` keys and bytes) with :meth:`serialize_batch` for
    ``Producer.produce_batch``: a record that fails validation fails alone.

    Records are Python values (an Arrow table's rows as dicts); each is validated with
    jsonschema and encoded with confluent's own JSON encoder, so this path is per
    record in Python (bench/schema_registry_bench.py measures it)."""

    def __init__(
        self,
        schema_str: Union[str, Schema, None],
        schema_registry_client: RegistryLike,
        to_dict: Optional[Callable[[Any, SerializationContext], Any]] = None,
        conf: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._registry = registry_client(schema_registry_client)
        self._to_dict = to_dict
        self._ref = _ConfluentJSON(schema_str, self._registry, to_dict, dict(conf or {}))
        self._resolved: dict[tuple[str, bool], tuple[bytes, Optional[Validator]]] = {}

    def _prepare(self, topic: str, is_key: bool) -> tuple[bytes, Optional[Validator]]:
        """(framing prefix, validator or None) for this topic."""
        got = self._resolved.get((topic, is_key))
        if got is None:
            ref = self._ref
            schema_id, registered = resolve_schema_id(ref, topic, is_key, ref._schema)
            schema = registered.schema if registered is not None else ref._schema
            validator = None
            if ref._validate and schema is not None:
                if registered is not None:
                    parsed, refs = ref._get_parsed_schema(schema)
                else:
                    parsed, refs = ref._parsed_schema, ref._ref_registry
                if parsed is not None and refs is not None:
                    validator = ref._get_validator(schema, parsed, refs)
            got = self._resolved[(topic, is_key)] = (frame(schema_id), validator)
        return got

    def serialize_batch(self, data: Data, topic: str, *, is_key: bool = False) -> Iterator[Chunk]:
        """``data`` (pyarrow Table/RecordBatch/Array or a list of records) as framed
        JSON, chunk by chunk: (large_binary array, [(row, why), ...]).  The registry is
        consulted here, before the first chunk is returned."""
        prefix, validator = self._prepare(topic, is_key)
        ctx = context(topic, is_key)
        to_dict = self._to_dict

        def encode(row: Any) -> bytes:
            value = to_dict(row, ctx) if to_dict is not None else row
            if validator is not None:
                try:
                    validator.validate(value)
                except ValidationError as exc:
                    where = "/".join(str(p) for p in exc.absolute_path)
                    raise SerializationError(
                        f"{exc.message}" + (f" (at {where})" if where else "")
                    ) from None
            return _json_dumps(value).encode("utf8")

        return encoded_chunks(data, prefix, encode, (SerializationError, TypeError, ValueError))

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        """Serialize one record (as confluent's JSONSerializer does; None stays None)."""
        if obj is None:
            return None
        if ctx is None:
            raise SerializationError("JSONSerializer needs a SerializationContext (the topic)")
        ((out, rejected),) = list(self.serialize_batch([obj], ctx.topic, is_key=ctx.field == "key"))
        if rejected:
            raise SerializationError(rejected[0][1])
        return bytes(out[0].as_py())
