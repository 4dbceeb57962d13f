"""Avro types and Arrow types, both ways.

:func:`avro_schema_for` derives an Avro schema from an Arrow schema (when a serializer
is given no schema):

==============================  ===============================================
Arrow                           Avro
==============================  ===============================================
bool                            boolean
int8, int16, int32, uint8/16    int
int64, uint32, uint64           long (a uint64 above 2**63-1 fails its row)
float32 / float64               float / double
string, large_string            string (dictionary-encoded too)
binary, large_binary            bytes
fixed_size_binary(n)            fixed, size n
arrow.uuid                      string, logicalType uuid
decimal128(p, s)                bytes, logicalType decimal, precision p, scale s
date32, date64                  int, logicalType date
time32                          int, logicalType time-millis
time64                          long, logicalType time-micros
timestamp(s|ms, tz)             long, timestamp-millis (local-timestamp-millis
                                without a zone)
timestamp(us|ns, tz)            long, timestamp-micros (local-… without a zone;
                                nanoseconds are truncated)
list, large_list, fixed_size    array
map(string, v)                  map
struct                          record, named after its path
nullable field                  ["null", T] with default null
==============================  ===============================================

:func:`arrow_type_for` goes the other way, for Python records (dicts) that are
turned into Arrow before encoding.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

__all__ = ["arrow_type_for", "avro_schema_for", "fits_columns"]


def _name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "_"
    return name if not name[0].isdigit() else f"_{name}"


def _avro_of(t: pa.DataType, path: str) -> Any:
    T = pa.types
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return {"type": "string", "logicalType": "uuid"}
        t = t.storage_type
    if T.is_dictionary(t):
        t = t.value_type
    if T.is_boolean(t):
        return "boolean"
    if T.is_integer(t):
        small = t.bit_width < 32 or (t.bit_width == 32 and T.is_signed_integer(t))
        return "int" if small else "long"
    if T.is_float32(t):
        return "float"
    if T.is_float64(t):
        return "double"
    if T.is_string(t) or T.is_large_string(t):
        return "string"
    if T.is_binary(t) or T.is_large_binary(t):
        return "bytes"
    if T.is_fixed_size_binary(t):
        return {"type": "fixed", "name": _name(path), "size": t.byte_width}
    if T.is_decimal(t) and t.bit_width == 128:
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if T.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if T.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if T.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if T.is_timestamp(t):
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        local = "" if t.tz else "local-"
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    if T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t):
        return {"type": "array", "items": _field_type(t.value_field, f"{path}_item")}
    if T.is_map(t):
        if not (T.is_string(t.key_type) or T.is_large_string(t.key_type)):
            raise TypeError(f"column {path!r}: Avro maps have string keys, not {t.key_type}")
        return {"type": "map", "values": _field_type(t.item_field, f"{path}_value")}
    if T.is_struct(t):
        return {
            "type": "record",
            "name": _name(path),
            "fields": [
                _field(t.field(i), f"{path}_{t.field(i).name}") for i in range(t.num_fields)
            ],
        }
    if T.is_null(t):
        return "null"
    raise TypeError(f"column {path!r}: Arrow type {t} has no Avro equivalent")


def _field_type(f: pa.Field, path: str) -> Any:
    avro = _avro_of(f.type, path)
    if f.nullable and avro != "null":
        return ["null", avro]
    return avro


def _field(f: pa.Field, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "type": _field_type(f, path)}
    if isinstance(out["type"], list):
        out["default"] = None
    return out


def avro_schema_for(schema: pa.Schema, name: str = "Row", namespace: str = "") -> dict[str, Any]:
    """The Avro record schema for rows of ``schema`` (see the module's table)."""
    fields = [_field(f, f"{name}_{f.name}") for f in schema]
    out: dict[str, Any] = {"type": "record", "name": name, "fields": fields}
    if namespace:
        out["namespace"] = namespace
    return out


_PRIMITIVE = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
    "null": pa.null(),
}
_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", "UTC"),
    "timestamp-micros": pa.timestamp("us", "UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
}


def arrow_type_for(schema: Any, names: dict[str, Any] | None = None, ns: str = "") -> pa.DataType:
    """The Arrow type Python values of an Avro schema are converted to (enums become
    strings, uuids strings, unions with null nullable)."""
    names = {} if names is None else names
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        for key in (f"{ns}.{schema}" if ns and "." not in schema else schema, schema):
            if key in names:
                return names[key]
        raise ValueError(f"Avro schema: unknown type {schema!r}")
    if isinstance(schema, list):
        others = [s for s in schema if s != "null"]
        if len(others) != 1:
            raise TypeError(f"unions of more than one non-null type are not supported: {schema}")
        return arrow_type_for(others[0], names, ns)
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return pa.decimal128(schema["precision"], schema.get("scale", 0))
    if logical in _LOGICAL and kind in ("int", "long"):
        return _LOGICAL[logical]
    if kind in ("record", "error"):
        sns = schema.get("namespace", ns)
        full = schema["name"] if "." in schema["name"] or not sns else f"{sns}.{schema['name']}"
        fields = []
        for f in schema.get("fields", ()):
            nullable = isinstance(f["type"], list) and "null" in f["type"]
            fields.append(pa.field(f["name"], arrow_type_for(f["type"], names, sns), nullable))
        out = pa.struct(fields)
        names[full] = out
        return out
    if kind == "enum":
        names[schema["name"]] = pa.string()
        return pa.string()
    if kind == "fixed":
        out = pa.binary(schema["size"])
        names[schema["name"]] = out
        return out
    if kind == "array":
        return pa.list_(arrow_type_for(schema["items"], names, ns))
    if kind == "map":
        return pa.map_(pa.string(), arrow_type_for(schema["values"], names, ns))
    if isinstance(kind, (str, list, dict)):
        return arrow_type_for(kind, names, ns)
    raise ValueError(f"Avro schema: {schema!r} is not a schema")


def fits_columns(schema: Any) -> bool:
    """Whether the column encoder takes ``schema``: it has no Arrow column type for a
    union of several non-null types, nor for a record that contains itself.  Other
    schemas are written record by record by fastavro, confluent's own encoder."""

    def walk(node: Any, ns: str, open_: frozenset[str]) -> bool:
        if isinstance(node, str):
            if node in _PRIMITIVE:
                return True
            full = f"{ns}.{node}" if ns and "." not in node else node
            return full not in open_ and node not in open_
        if isinstance(node, list):
            if sum(1 for s in node if s != "null") > 1:
                return False
            return all(walk(s, ns, open_) for s in node)
        if not isinstance(node, dict):
            return True
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = str(node.get("name", ""))
            sns = name.rpartition(".")[0] if "." in name else node.get("namespace", ns)
            full = name if "." in name or not sns else f"{sns}.{name}"
            if kind in ("record", "error"):
                inner = open_ | {full}
                return all(walk(f.get("type"), sns, inner) for f in node.get("fields", ()))
            return True
        if kind == "array":
            return walk(node.get("items"), ns, open_)
        if kind == "map":
            return walk(node.get("values"), ns, open_)
        if isinstance(kind, (list, dict)) or (isinstance(kind, str) and kind not in _PRIMITIVE):
            return walk(kind, ns, open_)
        return True

    return walk(schema, "", frozenset())
