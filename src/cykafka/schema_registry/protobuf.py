"""Protobuf through a Confluent Schema Registry, with confluent-kafka's framing (magic
byte, schema id, message indexes) and bytes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as _ConfluentProtobuf
from confluent_kafka.serialization import SerializationContext, SerializationError
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import EncodeError, Message

from ._common import (
    Chunk,
    RegistryLike,
    SchemaRegistryFailure,
    context,
    encoded_chunks,
    registry_client,
)

if TYPE_CHECKING:
    from ..serialized import Data

__all__ = ["ProtobufSerializer"]


class ProtobufSerializer:
    """A drop-in for ``confluent_kafka.schema_registry.protobuf.ProtobufSerializer``
    (same arguments, ``conf`` keys and bytes) with :meth:`serialize_batch` for
    ``Producer.produce_batch``.

    Records are messages of ``msg_type`` or dicts (an Arrow table's rows), which become
    messages through its constructor: a field the message does not have, or a value of
    the wrong type, fails that record alone.  Encoding is
    protobuf's own ``SerializeToString``, per record."""

    def __init__(
        self,
        msg_type: type[Message],
        schema_registry_client: RegistryLike,
        conf: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._registry = registry_client(schema_registry_client)
        self._msg_type = msg_type
        self._ref = _ConfluentProtobuf(msg_type, self._registry, dict(conf or {}))
        self._prefixes: dict[tuple[str, bool], bytes] = {}
        self._oneofs = _has_oneofs(msg_type.DESCRIPTOR, set())

    def _prefix(self, topic: str, is_key: bool) -> bytes:
        """The framing (magic byte, schema id, message indexes) confluent's serializer
        writes for this topic: it registers the schema and its references (with its
        own rules) for an empty message, whose payload is empty."""
        got = self._prefixes.get((topic, is_key))
        if got is None:
            try:
                got = self._ref(self._msg_type(), context(topic, is_key))
            except Exception as exc:
                raise SchemaRegistryFailure(
                    f"schema registry: topic {topic!r}, message "
                    f"{self._msg_type.DESCRIPTOR.full_name}: {type(exc).__name__}: {exc}"
                ) from exc
            if got is None:
                raise SchemaRegistryFailure(f"no framing for topic {topic!r}")
            self._prefixes[(topic, is_key)] = got
        return got

    def _message(self, row: Any) -> Message:
        if isinstance(row, self._msg_type):
            return row
        if isinstance(row, Message):
            raise TypeError(
                f"a {type(row).DESCRIPTOR.full_name} message is not a "
                f"{self._msg_type.DESCRIPTOR.full_name}"
            )
        if not isinstance(row, Mapping):
            raise TypeError(f"a record must be a message or a dict, not {type(row).__name__}")
        # The constructor takes nested dicts, lists, enum names, and None as unset;
        # an unknown field is a ValueError, a wrong type a TypeError (json_format's
        # ParseDict measured 6x slower, and wants bytes as base64 text).  It keeps the
        # last of two members of one oneof; the runtime's parsers refuse that, so do we.
        if self._oneofs:
            _check_oneofs(self._msg_type.DESCRIPTOR, row, "")
        try:
            return self._msg_type(**row)
        except (TypeError, ValueError) as exc:
            raise type(exc)(_culprit(self._msg_type, row, "", exc)) from None

    def serialize_batch(self, data: Data, topic: str, *, is_key: bool = False) -> Iterator[Chunk]:
        """``data`` (pyarrow Table/RecordBatch/Array, or a list of messages or dicts) as
        framed Protobuf, chunk by chunk: (large_binary array, [(row, why), ...])."""
        prefix = self._prefix(topic, is_key)
        message = self._message

        def encode(row: Any) -> bytes:
            return bytes(message(row).SerializeToString())

        errors = (EncodeError, TypeError, ValueError)
        return encoded_chunks(data, prefix, encode, errors)

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        """Serialize one message (as confluent's ProtobufSerializer does)."""
        if obj is None:
            return None
        if ctx is None:
            raise SerializationError("ProtobufSerializer needs a SerializationContext")
        ((out, rejected),) = list(self.serialize_batch([obj], ctx.topic, is_key=ctx.field == "key"))
        if rejected:
            raise SerializationError(rejected[0][1])
        return bytes(out[0].as_py())


def _has_oneofs(d: Descriptor, seen: set[str]) -> bool:
    """Whether a record of ``d`` can set two members of one oneof (at any depth)."""
    if d.full_name in seen:
        return False
    seen.add(d.full_name)
    if any(len(o.fields) > 1 for o in d.oneofs):
        return True
    return any(
        _has_oneofs(f.message_type, seen)
        for f in d.fields
        if f.type == FieldDescriptor.TYPE_MESSAGE
    )


def _check_oneofs(d: Descriptor, record: Mapping[str, Any], path: str) -> None:
    """ValueError naming the oneof and its members when ``record`` (a dict for a
    message of ``d``) sets more than one of them, here or in a nested dict."""
    for o in d.oneofs:
        given = [f.name for f in o.fields if record.get(f.name) is not None]
        if len(given) > 1:
            raise ValueError(
                f"field {path + o.name!r}: oneof {o.name} takes one member, the record sets "
                f"{len(given)} ({', '.join(given)}); protobuf would keep only the last"
            )
    for f in d.fields:
        value = record.get(f.name)
        if f.type != FieldDescriptor.TYPE_MESSAGE or value is None:
            continue
        sub = f.message_type
        if sub.GetOptions().map_entry:
            vf = sub.fields_by_name["value"]
            if vf.type == FieldDescriptor.TYPE_MESSAGE and isinstance(value, Mapping):
                for k, v in value.items():
                    if isinstance(v, Mapping):
                        _check_oneofs(vf.message_type, v, f"{path}{f.name}[{k!r}].")
        elif isinstance(value, Mapping):
            _check_oneofs(sub, value, f"{path}{f.name}.")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if isinstance(v, Mapping):
                    _check_oneofs(sub, v, f"{path}{f.name}[{i}].")


def _culprit(cls: type[Message], record: Mapping[str, Any], path: str, exc: Exception) -> str:
    """The constructor's error with the field that caused it: each field is tried on
    its own (and a nested dict within its message), only once a record failed."""
    fields = cls.DESCRIPTOR.fields_by_name
    for name, value in record.items():
        try:
            cls(**{name: value})
        except (TypeError, ValueError) as own:
            f = fields.get(name)
            if (
                f is not None
                and f.type == FieldDescriptor.TYPE_MESSAGE
                and isinstance(value, Mapping)
                and not f.message_type.GetOptions().map_entry
            ):
                sub = message_factory.GetMessageClass(f.message_type)
                return _culprit(sub, value, f"{path}{name}.", own)
            return f"field {path + name!r}: {type(own).__name__}: {own}"
    return f"{type(exc).__name__}: {exc}"
