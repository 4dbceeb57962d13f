# avro_match.pxi -- an Avro schema matched against an Arrow type, once (see avro.pxi).
#
# Which Arrow types each Avro type accepts (anything else is refused when the
# encoder is built, naming the column):
#   boolean                bool
#   int, long              integers (uint64 is range-checked per row)
#   float, double          float32, float64, integers
#   string, bytes          string, large_string, binary, large_binary,
#                          fixed_size_binary, dictionary of those
#   fixed                  fixed_size_binary, binary (length checked per row)
#   enum                   string or dictionary of string (symbol checked per row)
#   decimal                decimal128 with scale <= the schema's
#   date                   date32, date64
#   time-millis/micros     time32, time64
#   timestamp-*, local-timestamp-*   timestamp (any unit, any zone)
#   uuid                   string, fixed_size_binary(16), arrow.uuid
#   array                  list, large_list, fixed_size_list
#   map                    map with string keys
#   record                 struct; a field missing from the struct (or a column
#                          missing from the table) is written as its default
#   union                  null and one other type, in either order
#
# Other unions and recursive records have no Arrow column type: AvroSerializer
# writes those schemas record by record with fastavro (fits_columns decides).


cdef dict _A_TIME_UNITS = {"s": 1, "ms": 1000, "us": 1000000, "ns": 1000000000}
cdef dict _A_LOGICAL_UNIT = {
    "date": 0, "time-millis": 1000, "time-micros": 1000000,
    "timestamp-millis": 1000, "timestamp-micros": 1000000,
    "local-timestamp-millis": 1000, "local-timestamp-micros": 1000000,
}
_A_NAMED = ("record", "error", "enum", "fixed")
_A_PRIMITIVE = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


def _a_fullname(name, namespace):
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


class _ABuilder:
    """Walks an Avro schema and an Arrow type together into node specs."""

    def __init__(self):
        self.specs = []
        self.names = {}

    def new(self, path, **kw):
        spec = dict(op=_AO_NULL, src=_AS_NONE, nullable=0, null_index=0, value_index=0,
                    width=0, sgn=1, size=0, precision=0, scale_up=0, mul=1, div=1,
                    lo=-(1 << 63), hi=(1 << 63) - 1, kids=[], konst=None, path=path,
                    decode=False, symbols=None, fields=None, storage=False)
        spec.update(kw)
        self.specs.append(spec)
        return len(self.specs) - 1

    def resolve(self, schema, ns):
        """(schema as a dict or primitive name, its namespace), following named refs."""
        if isinstance(schema, str):
            if schema in _A_PRIMITIVE:
                return schema, ns
            for key in (_a_fullname(schema, ns), schema):
                if key in self.names:
                    return self.names[key]
            raise ValueError(f"Avro schema: unknown type {schema!r}")
        if isinstance(schema, dict):
            kind = schema.get("type")
            if kind in _A_NAMED:
                name = schema.get("name")
                if not isinstance(name, str):
                    raise ValueError(f"Avro schema: a {kind} needs a name")
                sns = schema.get("namespace", ns) if "." not in name else name.rpartition(".")[0]
                self.names[_a_fullname(name, sns)] = (schema, sns)
                return schema, sns
            if isinstance(kind, (dict, list)) or (isinstance(kind, str) and
                                                  kind not in _A_PRIMITIVE and
                                                  kind not in ("array", "map")):
                if "logicalType" not in schema:
                    return self.resolve(kind, ns)
            return schema, ns
        if isinstance(schema, list):
            return schema, ns
        raise ValueError(f"Avro schema: {schema!r} is not a schema")

    def build(self, schema, atype, path, ns, depth=0):
        import pyarrow as pa
        if depth > 64:
            raise ValueError(f"{path}: the Avro schema nests too deep (recursive types are "
                             f"not supported)")
        schema, ns = self.resolve(schema, ns)
        nullable = 0
        null_index = value_index = 0
        if isinstance(schema, list):
            others = [i for i, s in enumerate(schema) if self.resolve(s, ns)[0] != "null"]
            nulls = [i for i, s in enumerate(schema) if self.resolve(s, ns)[0] == "null"]
            if len(others) > 1:
                raise TypeError(f"{path}: unions of more than one non-null type are not "
                                f"supported (schema {_json.dumps(schema)})")
            if not others:
                return self.new(path)
            if nulls:
                nullable, null_index = 1, nulls[0]
            value_index = others[0]
            schema, ns = self.resolve(schema[value_index], ns)
        nid = self.new(path, nullable=nullable, null_index=null_index, value_index=value_index)
        spec = self.specs[nid]
        if atype is not None and pa.types.is_null(atype):
            if not nullable and schema != "null":
                raise TypeError(f"{path}: the Arrow column is all nulls (type null) but the "
                                f"schema does not allow null")
            return nid
        if schema == "null":
            if atype is not None and not pa.types.is_null(atype):
                raise TypeError(f"{path}: Arrow type {atype} cannot be written as Avro null")
            return nid
        if atype is not None and isinstance(atype, pa.BaseExtensionType):
            spec["storage"] = True
            if atype.extension_name == "arrow.uuid":
                spec["uuid"] = True
            atype = atype.storage_type
        if atype is not None and pa.types.is_dictionary(atype):
            spec["decode"] = True
            atype = atype.value_type
        self.match(spec, schema, atype, path, ns, depth)
        return nid

    def refuse(self, path, atype, schema):
        desc = schema if isinstance(schema, str) else _json.dumps(schema)
        raise TypeError(f"column {path!r}: Arrow type {atype} cannot be written as Avro "
                        f"{desc}")

    def match(self, spec, schema, atype, path, ns, depth):
        import pyarrow as pa
        t = pa.types
        kind = schema if isinstance(schema, str) else schema.get("type")
        logical = None if isinstance(schema, str) else schema.get("logicalType")
        if kind in ("record", "error"):
            if not t.is_struct(atype):
                self.refuse(path, atype, schema)
            spec["op"], spec["src"] = _AO_RECORD, _AS_STRUCT
            names = [atype.field(i).name for i in range(atype.num_fields)]
            spec["fields"] = []
            for f in schema.get("fields", ()):
                fpath = f"{path}.{f['name']}" if path else f["name"]
                if f["name"] in names:
                    fi = names.index(f["name"])
                    kid = self.build(f["type"], atype.field(fi).type, fpath, ns, depth + 1)
                else:
                    if "default" not in f:
                        raise TypeError(f"column {fpath!r} is missing and the schema gives it "
                                        f"no default")
                    fi = -1
                    kid = self.new(fpath, op=_AO_CONST,
                                   konst=self.default_bytes(f["type"], f["default"], ns))
                spec["kids"].append(kid)
                spec["fields"].append(fi)
            return
        if kind == "array":
            if t.is_list(atype) or t.is_large_list(atype) or t.is_fixed_size_list(atype):
                spec["op"] = _AO_ARRAY
                spec["src"] = _AS_LIST32 if t.is_list(atype) else \
                    _AS_LIST64 if t.is_large_list(atype) else _AS_FSL
                spec["width"] = atype.list_size if t.is_fixed_size_list(atype) else 0
                spec["kids"] = [self.build(schema["items"], atype.value_type, f"{path}[]", ns,
                                           depth + 1)]
                return
            self.refuse(path, atype, schema)
        if kind == "map":
            if t.is_map(atype) and (t.is_string(atype.key_type) or
                                    t.is_large_string(atype.key_type)):
                spec["op"], spec["src"] = _AO_MAP, _AS_LIST32
                spec["kids"] = [self.build("string", atype.key_type, f"{path}.key", ns),
                                self.build(schema["values"], atype.item_type, f"{path}{{}}",
                                           ns, depth + 1)]
                return
            self.refuse(path, atype, schema)
        if kind == "enum":
            if t.is_string(atype) or t.is_large_string(atype):
                spec["op"], spec["src"] = _AO_ENUM, _AS_ENUM
                spec["symbols"] = list(schema["symbols"])
                return
            self.refuse(path, atype, schema)
        if logical == "decimal" and kind in ("bytes", "fixed") and t.is_decimal(atype):
            scale = schema.get("scale", 0)
            if atype.bit_width != 128 or atype.scale > scale:
                raise TypeError(f"column {path!r}: Arrow {atype} cannot be written as Avro "
                                f"decimal(scale={scale}) without losing digits"
                                if atype.bit_width == 128 else
                                f"column {path!r}: only decimal128 is supported, not {atype}")
            spec["op"], spec["src"] = _AO_DECIMAL, _AS_DEC128
            spec["precision"] = schema["precision"]
            spec["scale_up"] = scale - atype.scale
            spec["size"] = schema["size"] if kind == "fixed" else 0
            return
        if logical in _A_LOGICAL_UNIT and kind in ("int", "long"):
            if self.temporal(spec, logical, atype):
                spec["op"] = _AO_INT if kind == "int" else _AO_LONG
                if kind == "int":
                    spec["lo"], spec["hi"] = -(1 << 31), (1 << 31) - 1
                return
            if not (t.is_integer(atype)):
                self.refuse(path, atype, schema)
        if kind == "fixed":
            if t.is_fixed_size_binary(atype):
                spec["op"], spec["src"], spec["width"] = _AO_FIXED, _AS_FIXED, atype.byte_width
                spec["size"] = schema["size"]
                if atype.byte_width != schema["size"]:
                    raise TypeError(f"column {path!r}: Arrow {atype} cannot be written as Avro "
                                    f"fixed of size {schema['size']}")
                return
            if t.is_binary(atype) or t.is_large_binary(atype):
                spec["op"], spec["size"] = _AO_FIXED, schema["size"]
                spec["src"] = _AS_BIN32 if t.is_binary(atype) else _AS_BIN64
                return
            self.refuse(path, atype, schema)
        if kind in ("string", "bytes"):
            if t.is_string(atype) or t.is_binary(atype):
                spec["op"], spec["src"] = _AO_BYTES, _AS_BIN32
            elif t.is_large_string(atype) or t.is_large_binary(atype):
                spec["op"], spec["src"] = _AO_BYTES, _AS_BIN64
            elif t.is_fixed_size_binary(atype):
                spec["src"], spec["width"] = _AS_FIXED, atype.byte_width
                spec["op"] = _AO_UUID16 if (kind == "string" and atype.byte_width == 16 and
                                            (logical == "uuid" or spec.get("uuid"))) \
                    else _AO_BYTES
            else:
                self.refuse(path, atype, schema)
            return
        if kind == "boolean" and t.is_boolean(atype):
            spec["op"], spec["src"] = _AO_BOOL, _AS_BOOL
            return
        if kind in ("int", "long", "float", "double") and t.is_integer(atype):
            spec["src"], spec["width"] = _AS_INT, atype.bit_width // 8
            spec["sgn"] = 1 if t.is_signed_integer(atype) else 0
            spec["op"] = {"int": _AO_INT, "long": _AO_LONG, "float": _AO_FLOAT,
                          "double": _AO_DOUBLE}[kind]
            if kind == "int":
                spec["lo"], spec["hi"] = -(1 << 31), (1 << 31) - 1
            return
        if kind in ("float", "double") and (t.is_float32(atype) or t.is_float64(atype)):
            spec["src"] = _AS_F32 if t.is_float32(atype) else _AS_F64
            spec["op"] = _AO_FLOAT if kind == "float" else _AO_DOUBLE
            return
        self.refuse(path, atype, schema)

    def temporal(self, spec, logical, atype):
        """Set the unit conversion of a date/time logical type; False if ``atype``
        is not a matching Arrow temporal type."""
        import pyarrow as pa
        t = pa.types
        want = _A_LOGICAL_UNIT[logical]
        if logical == "date":
            if t.is_date32(atype):
                have, want = 1, 1
            elif t.is_date64(atype):
                have, want = 86400000, 1
            else:
                return False
        elif logical.startswith("time-"):
            if not (t.is_time32(atype) or t.is_time64(atype)):
                return False
            have = _A_TIME_UNITS[atype.unit]
        else:
            if not t.is_timestamp(atype):
                return False
            have = _A_TIME_UNITS[atype.unit]
        spec["src"], spec["width"], spec["sgn"] = _AS_INT, atype.bit_width // 8, 1
        if want >= have:
            spec["mul"] = want // have
        else:
            spec["div"] = have // want
        return True

    def expand(self, schema, ns, seen=None):
        """The schema with named references replaced by their definitions (for
        fastavro, which encodes defaults)."""
        seen = set() if seen is None else seen
        if isinstance(schema, str):
            if schema in _A_PRIMITIVE:
                return schema
            full, sns = self.resolve(schema, ns)
            key = _a_fullname(full["name"], sns)
            if key in seen:
                return key
            seen.add(key)
            return self.expand(full, sns, seen)
        if isinstance(schema, list):
            return [self.expand(s, ns, seen) for s in schema]
        out = dict(schema)
        if out.get("type") in _A_NAMED:
            seen.add(_a_fullname(out["name"], out.get("namespace", ns)))
            ns = out.get("namespace", ns)
        if "fields" in out:
            out["fields"] = [dict(f, type=self.expand(f["type"], ns, seen))
                             for f in out["fields"]]
        if "items" in out:
            out["items"] = self.expand(out["items"], ns, seen)
        if "values" in out:
            out["values"] = self.expand(out["values"], ns, seen)
        if isinstance(out.get("type"), (dict, list)):
            out["type"] = self.expand(out["type"], ns, seen)
        return out

    def default_bytes(self, schema, default, ns):
        import io
        import fastavro
        expanded = self.expand(schema, ns)
        if isinstance(expanded, list):
            # Avro: a union's default belongs to its first branch.
            expanded = expanded[0]
            if isinstance(expanded, dict) and "logicalType" in expanded:
                expanded = {k: v for k, v in expanded.items() if k != "logicalType"}
            bio = io.BytesIO()
            fastavro.schemaless_writer(bio, fastavro.parse_schema(expanded), default)
            return b"\x00" + bio.getvalue()
        bio = io.BytesIO()
        fastavro.schemaless_writer(bio, fastavro.parse_schema(expanded), default)
        return bio.getvalue()
