"""Avro through a Confluent Schema Registry, encoded from Arrow columns in C."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable, Optional, Union

import fastavro
import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry._sync.avro import _resolve_named_schema
from confluent_kafka.schema_registry.avro import AvroSerializer as _ConfluentAvro
from confluent_kafka.schema_registry.common.avro import LocalSchemaRepository, _schema_loads
from confluent_kafka.serialization import SerializationContext, SerializationError
from fastavro.validation import ValidationError, validate

from .._arrow import AvroEncoder
from ._common import (
    LIST_CHUNK,
    Chunk,
    RegistryLike,
    Rejected,
    SchemaRegistryFailure,
    arrow_chunks,
    frame,
    is_arrow,
    python_rows,
    records_as_array,
    registry_client,
    resolve_schema_id,
)
from ._text import cast_type, parse_text, text_casts
from .avro_types import arrow_type_for, avro_schema_for, fits_columns

__all__ = ["AvroSerializer"]

#: rows encoded at a time from one Arrow batch
ENCODE_ROWS = 65536

_REGISTERED_KEYS = ("use.latest.version", "use.schema.id", "use.latest.with.metadata")


class _RecordWriter:
    """Records written one at a time by fastavro's ``schemaless_writer``, the encoder
    inside confluent's AvroSerializer (with its strictness settings), so the bytes are
    its bytes.  Used for schemas the column encoder does not take (unions of several
    non-null types, recursive records) and for records Arrow cannot hold (``uuid.UUID``
    values, a union branch chosen by value).  A record it refuses, or that fastavro's
    validation refuses (an int out of range), is rejected alone, naming the field."""

    def __init__(self, writer: Any, prefix: bytes, ref: _ConfluentAvro) -> None:
        self._parsed = fastavro.parse_schema(writer)
        self._prefix = prefix
        self._strict = bool(getattr(ref, "_strict", False))
        self._strict_default = bool(getattr(ref, "_strict_allow_default", False))
        self._as_is = _bytes_as_is(writer)
        self._ints = _int_checker(writer, "", {}, "")

    def encode(self, record: Any) -> tuple[Optional[bytes], str]:
        """(framed bytes, "") or (None, why, naming the field)."""
        if self._as_is:
            if isinstance(record, (bytes, str)):
                return self._prefix + (record if isinstance(record, bytes) else record.encode()), ""
            return None, f"a bytes schema takes bytes or str, not {type(record).__name__}"
        bio = io.BytesIO()
        try:
            fastavro.schemaless_writer(
                bio,
                self._parsed,
                record,
                strict=self._strict,
                strict_allow_default=self._strict_default,
            )
        except Exception as exc:  # any refusal of one record fails that record alone
            why = _field_error(exc)
            if not why.startswith("field "):  # some errors carry no field: ask validation
                try:
                    validate(record, self._parsed, raise_errors=True, strict=self._strict)
                except ValidationError as invalid:
                    why = _invalid(invalid)
                except Exception:  # the writer's own error stands
                    pass
            return None, why
        # The writer takes an int beyond Avro int's range (no reader takes it back; in a
        # union it checks the branch): refused here, where confluent's serializer
        # writes it.  fastavro's validation would catch it at 10x the writing's cost.
        if self._ints is not None:
            why = self._ints(record)
            if why:
                return None, why
        return self._prefix + bio.getvalue(), ""

    def chunk(self, records: Sequence[Any]) -> Chunk:
        out: list[Optional[bytes]] = []
        rejected: Rejected = []
        for i, record in enumerate(records):
            data, why = (None, "") if record is None else self.encode(record)
            if why:
                rejected.append((i, why))
            out.append(data)
        return pa.array(out, pa.large_binary()), rejected


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1

Check = Callable[[Any], str]


def _int_checker(schema: Any, ns: str, named: dict[str, Any], path: str) -> Optional[Check]:
    """A function giving why a value of ``schema`` has an int out of Avro int's range
    ("" when none does), or None when ``schema`` has no int outside unions."""
    if isinstance(schema, str):
        if schema == "int":
            return lambda v: (
                f"field {path!r}: {v} is out of range for the Avro int"
                if isinstance(v, int) and not _INT_MIN <= v <= _INT_MAX
                else ""
            )
        full = f"{ns}.{schema}" if ns and "." not in schema else schema
        if full in named or schema in named:
            # a named record used again (or inside itself): resolved when called
            key = full if full in named else schema
            return lambda v: named[key](v) if named[key] is not None else ""
        return None
    if not isinstance(schema, dict):
        return None  # a union: fastavro checks the branch it writes
    kind = schema.get("type")
    if kind == "int" and "logicalType" not in schema:
        return _int_checker("int", ns, named, path)
    if kind in ("record", "error"):
        name = str(schema.get("name", ""))
        sns = name.rpartition(".")[0] if "." in name else schema.get("namespace", ns)
        full = name if "." in name or not sns else f"{sns}.{name}"
        named[full] = None  # while its fields are read
        checks = []
        for f in schema.get("fields", ()):
            fpath = f"{path}.{f['name']}" if path else f["name"]
            sub = _int_checker(f.get("type"), sns, named, fpath)
            if sub is not None:
                checks.append((f["name"], sub))
        if not checks:
            return None

        def record(v: Any) -> str:
            if not isinstance(v, Mapping):
                return ""
            for fname, check in checks:
                why = check(v.get(fname))
                if why:
                    return why
            return ""

        named[full] = record
        return record
    if kind in ("array", "map"):
        inner = _int_checker(
            schema.get("items" if kind == "array" else "values"), ns, named, f"{path}[]"
        )
        if inner is None:
            return None
        return lambda v: next(
            (w for w in map(inner, v.values() if isinstance(v, Mapping) else v or ()) if w), ""
        )
    if isinstance(kind, (str, dict)):
        return _int_checker(kind, ns, named, path)
    return None


def _bytes_as_is(writer: Any) -> bool:
    """confluent's serializer writes the value of a top-level bytes schema as it is,
    without Avro's length prefix (and its deserializer reads it so)."""
    return writer == "bytes" or (isinstance(writer, dict) and writer.get("type") == "bytes")


def _invalid(exc: ValidationError) -> str:
    """fastavro's first validation error: it names a field by its record's full name."""
    first = exc.errors[0]
    record, _, name = str(first.field).rpartition(".")
    where = f"field {name!r} (record {record})" if record else f"field {name!r}"
    expected = first.schema if isinstance(first.schema, str) else json.dumps(first.schema)
    return f"{where}: {first.datum!r} is not a valid Avro {expected}"


def _field_error(exc: BaseException) -> str:
    """fastavro's error with the field path first: it appends " on field NAME" at each
    enclosing record, innermost first."""
    head, *fields = str(exc).split(" on field ")
    path = list(reversed(fields))
    missing = "no value and no default for "
    if head.startswith(missing):
        path.append(head[len(missing) :])
        head = "has no value and the schema gives it no default"
    text = f"{type(exc).__name__}: {head}" if not head.startswith("has no") else head
    return f"field {'.'.join(path)!r}: {text}" if path else text


class AvroSerializer:
    """A drop-in for ``confluent_kafka.schema_registry.avro.AvroSerializer`` (same
    arguments and ``conf`` keys, same bytes) that also serializes whole batches --
    a pyarrow Table/RecordBatch/Array or a list of dicts -- in one C loop over the
    Arrow columns (:meth:`serialize_batch`, used by ``Producer.produce_batch``).

    ``schema_registry_client`` may also be a URL (``mock://name`` for confluent's
    in-process mock) or a client config dict.  Without ``schema_str`` the schema is
    the subject's registered one (``use.latest.version``) or, failing that, derived
    from the data's Arrow schema (:mod:`cykafka.schema_registry.avro_types`), as a
    record named ``record_name``.
    """

    def __init__(
        self,
        schema_registry_client: RegistryLike,
        schema_str: Union[str, Schema, None] = None,
        to_dict: Optional[Callable[[Any, SerializationContext], Any]] = None,
        conf: Optional[Mapping[str, Any]] = None,
        *,
        record_name: str = "Row",
    ) -> None:
        self._registry = registry_client(schema_registry_client)
        self._conf = dict(conf or {})
        self._to_dict = to_dict
        self._record_name = record_name
        # confluent's serializer checks the conf (the same errors for the same keys)
        # and gives the subject name strategy; it never encodes a row here.  A Schema is
        # handed over whole: its references name the other subjects it needs.
        self._ref = _ConfluentAvro(self._registry, schema_str, to_dict, self._conf)
        self._schema_str: Optional[str] = None
        self._references: Optional[list[Any]] = None
        if schema_str is not None:
            # as confluent registers it: a primitive '"string"' as '{"type":"string"}'
            self._schema_str = self._ref._schema.schema_str
            self._references = self._ref._schema.references
        self._uses_registered = any(self._conf.get(k) for k in _REGISTERED_KEYS)
        self._derived: dict[str, _ConfluentAvro] = {}
        self._resolved: dict[tuple[str, bool, str], tuple[bytes, Any]] = {}
        self._encoders: dict[tuple[str, bytes, pa.DataType], AvroEncoder] = {}

    # -- schema and id ---------------------------------------------------------

    def _writer(
        self, topic: str, is_key: bool, arrow_type: Optional[pa.DataType]
    ) -> tuple[bytes, Any]:
        """(framing prefix, writer schema as parsed JSON) for this topic; the registry
        is asked once per topic."""
        ref, text = self._ref, self._schema_str
        if text is None and not self._uses_registered:
            if arrow_type is None or not pa.types.is_struct(arrow_type):
                raise TypeError(
                    "AvroSerializer without schema_str derives the schema from a pyarrow "
                    "Table/RecordBatch (or use.latest.version); got no Arrow record type"
                )
            text = json.dumps(avro_schema_for(pa.schema(list(arrow_type)), self._record_name))
            ref = self._derived.get(text)
            if ref is None:
                ref = self._derived[text] = _ConfluentAvro(
                    self._registry, text, self._to_dict, self._conf
                )
        key = (topic, is_key, text or "")
        got = self._resolved.get(key)
        if got is None:
            # Only the given schema has references; [] (not None) as Schema's own default,
            # or a registry would see another schema.
            refs = (self._references if text == self._schema_str else None) or []
            schema = Schema(text, "AVRO", refs) if text is not None else None
            schema_id, registered = resolve_schema_id(ref, topic, is_key, schema)
            used = registered.schema if registered is not None else schema
            if used is None:  # resolve_schema_id raised already when neither is known
                raise SchemaRegistryFailure(f"no schema for topic {topic!r}")
            try:
                writer = self._self_contained(used)
            except Exception as exc:
                raise SchemaRegistryFailure(
                    f"the schemas referenced by topic {topic!r}'s schema ({used.references}): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            got = self._resolved[key] = (frame(schema_id), writer)
        return got

    def _self_contained(self, schema: Schema) -> Any:
        """``schema`` as parsed JSON, each named type it references (Confluent's schema
        references, fetched from the registry as confluent's serializer fetches them)
        defined where it is first used, so that the encoders see one whole schema."""
        text = schema.schema_str or ""
        if not schema.references:
            return json.loads(text)
        named = _resolve_named_schema(schema, self._registry)
        root = json.loads(_schema_loads(text).schema_str or "")
        repo = LocalSchemaRepository({**named, "$root": root})
        # fastavro's loader puts a referenced schema's definition at its first use.
        return fastavro.schema.load_schema("$root", repo=repo, _write_hint=False)

    def _encoder(self, prefix: bytes, writer: Any, arrow_type: pa.DataType) -> AvroEncoder:
        key = (json.dumps(writer, sort_keys=True), prefix, arrow_type)
        encoder = self._encoders.get(key)
        if encoder is None:
            encoder = self._encoders[key] = AvroEncoder(writer, arrow_type, prefix)
        return encoder

    # -- batches ---------------------------------------------------------------

    def serialize_batch(self, data: Any, topic: str, *, is_key: bool = False) -> Iterator[Chunk]:
        """``data`` as Confluent-framed Avro, chunk by chunk: each chunk a large_binary
        Arrow array and the rows that did not fit the schema (null in the array).  The
        registry is consulted here, before the first chunk is returned."""
        if is_arrow(data):
            atype = data.schema if isinstance(data, (pa.Table, pa.RecordBatch)) else data.type
            if isinstance(atype, pa.Schema):
                atype = pa.struct(list(atype))
            prefix, writer = self._writer(topic, is_key, atype)
            if _bytes_as_is(writer) or not fits_columns(writer):
                return self._record_chunks(data, prefix, writer)
            casts = text_casts(atype, writer)
            # refuses incompatible columns up front
            self._encoder(prefix, writer, cast_type(atype, casts) if casts else atype)
            return self._arrow_chunks(data, prefix, writer, casts)
        if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
            raise TypeError(
                f"data must be a pyarrow Table/RecordBatch/Array or a list of records, "
                f"not {type(data).__name__}"
            )
        rows = list(data)
        if self._to_dict is not None:
            from ._common import context

            ctx = context(topic, is_key)
            rows = [None if r is None else self._to_dict(r, ctx) for r in rows]
        inferred = None
        if self._schema_str is None and not self._uses_registered:
            inferred = pa.Table.from_pylist([r for r in rows if r is not None][:1000]).schema
            inferred = pa.struct(list(inferred))
        prefix, writer = self._writer(topic, is_key, inferred)
        if _bytes_as_is(writer) or not fits_columns(writer):
            return self._record_chunks(rows, prefix, writer)
        return self._list_chunks(rows, prefix, writer)

    def _record_chunks(self, data: Any, prefix: bytes, writer: Any) -> Iterator[Chunk]:
        records = _RecordWriter(writer, prefix, self._ref)
        for rows in python_rows(data):
            for start in range(0, max(len(rows), 1), ENCODE_ROWS):
                yield records.chunk(rows[start : start + ENCODE_ROWS])

    def _arrow_chunks(
        self, data: Any, prefix: bytes, writer: Any, casts: dict[int, pa.DataType]
    ) -> Iterator[Chunk]:
        for whole in arrow_chunks(data):
            encoder = None
            # Slices of ENCODE_ROWS: librdkafka sends one while the next is encoded, and
            # the encoded bytes in memory stay bounded.
            for start in range(0, max(len(whole), 1), ENCODE_ROWS):
                arr = whole.slice(start, ENCODE_ROWS)
                unparsed: Rejected = []
                if casts:
                    arr, unparsed = parse_text(arr, casts)
                if encoder is None:
                    encoder = self._encoder(prefix, writer, arr.type)
                out, bad = encoder.encode(arr)
                why = dict(unparsed)  # a text that did not parse says so, not "is null"
                for row, path, what in bad:
                    why.setdefault(row, f"field {path!r} {what}")
                yield out, sorted(why.items())

    def _list_chunks(self, rows: list[Any], prefix: bytes, writer: Any) -> Iterator[Chunk]:
        atype = arrow_type_for(writer)
        records: Optional[_RecordWriter] = None
        for start in range(0, len(rows), LIST_CHUNK):
            part = rows[start : start + LIST_CHUNK]
            ptype, part = _fill_defaults(writer, atype, part)
            arr, unfit = records_as_array(part, ptype)
            out, bad = self._encoder(prefix, writer, ptype).encode(arr)
            why = {row: f"field {path!r} {what}" for row, path, what in bad}
            if unfit:
                # A record Arrow cannot hold (a uuid.UUID, a value of another type
                # than the column's) goes to fastavro, as confluent would write it.
                records = records or _RecordWriter(writer, prefix, self._ref)
                values = out.to_pylist()
                for row, _ in unfit:
                    values[row], why[row] = records.encode(part[row])
                out = pa.array(values, pa.large_binary())
            yield out, sorted((row, text) for row, text in why.items() if text)

    # -- one record, as confluent's ------------------------------------------

    def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        """Serialize one record (as confluent's AvroSerializer does; None stays None)."""
        if obj is None:
            return None
        if ctx is None:
            raise SerializationError("AvroSerializer needs a SerializationContext (the topic)")
        is_key = ctx.field == "key"
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        saved, self._to_dict = self._to_dict, None
        try:
            ((out, rejected),) = list(self.serialize_batch([value], ctx.topic, is_key=is_key))
        finally:
            self._to_dict = saved
        if rejected:
            raise SerializationError(rejected[0][1])
        result = out[0].as_py()
        return None if result is None else bytes(result)


def _fill_defaults(
    writer: Any, atype: pa.DataType, rows: list[Any]
) -> tuple[pa.DataType, list[Any]]:
    """For Python records: a top-level field no record has is left to its default
    (dropped from the Arrow type); one some records lack gets its default there."""
    if not (isinstance(writer, dict) and writer.get("type") in ("record", "error")):
        return atype, rows
    keep = []
    for i, f in enumerate(writer.get("fields", ())):
        name = f["name"]
        present = [isinstance(r, dict) and name in r for r in rows]
        if "default" in f and not any(present):
            continue
        if "default" in f and not all(present):
            rows = [
                {**r, name: f["default"]} if isinstance(r, dict) and not p else r
                for r, p in zip(rows, present)
            ]
        keep.append(atype.field(i))
    return pa.struct(keep), rows
