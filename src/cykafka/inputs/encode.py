"""Rows -> message columns: which field is the key, the value, the partition, the
timestamp and the headers, for Arrow batches (CSV, Parquet) and for JSON records.

Without a value field the value is the whole record as compact JSON
(:func:`cykafka._arrow.record_json`).  A row whose fields cannot become a message (a
partition that is not an int >= 0, a timestamp that is not a time) is reported and
dropped, the rest of its batch goes on.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import TYPE_CHECKING, Callable, Optional, TypedDict, Union

from .model import Chunk, Column, Fields, ImportInputError, Problem

if TYPE_CHECKING:
    import pyarrow as pa

    from ..config.types import JSONValue
    from ..schema_registry.formats import ColumnEncoders

__all__ = ["batch_chunk", "json_record_fields", "records_chunk", "row_json"]


class FieldColumns(TypedDict):
    """What :func:`json_record_fields` adds one item to per record."""

    keys: list[Optional[bytes]]
    partitions: list[Optional[int]]
    headers: list[list[tuple[str, Optional[bytes]]]]
    timestamps: list[Optional[int]]


def _field_bytes(v: object) -> Optional[bytes]:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def naive_refused(name: str, what: str) -> str:
    """Why a naive timestamp is refused, with the fix: one rule with ``produce()``."""
    return (
        f"timestamp field {name!r} is {what}, which names no time zone: pass --timezone "
        "with the zone it was written in (--timezone UTC if it is UTC)"
    )


def _timestamp_ms(v: object, name: str, timezone: Optional[str] = None) -> Optional[int]:
    """A JSON value as milliseconds since the epoch: an int (ms) or RFC 3339 text (in
    ``timezone`` when it names no zone; refused without one)."""
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    if isinstance(v, str):
        try:
            t = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if t.tzinfo is None:
                if timezone is None:
                    raise ValueError(naive_refused(name, repr(v)))
                from zoneinfo import ZoneInfo

                t = t.replace(tzinfo=ZoneInfo(timezone))
            return int(t.timestamp() * 1000)
    raise ValueError(f"timestamp field {name!r} is {v!r}, not ms since the epoch or RFC 3339")


def json_record_fields(
    rec: dict[str, JSONValue], fields: Fields, text: bytes, out: FieldColumns
) -> Optional[bytes]:
    """Pick the fields out of one JSON record (appending to ``out["keys"]`` etc.);
    returns the value.  ValueError names a field that cannot be used."""
    if fields.value:
        if fields.value not in rec:
            # A missing value would be a null message: a tombstone on compacted topics.
            raise ValueError(f"value field {fields.value!r} is missing")
        value = _field_bytes(rec[fields.value])
    else:
        value = text
    part = None
    if fields.partition:
        p = rec.get(fields.partition)
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 0):
            raise ValueError(f"partition field {fields.partition!r} is {p!r}, not an int >= 0")
        part = p
    ts = (
        _timestamp_ms(rec.get(fields.timestamp), fields.timestamp, fields.timezone)
        if fields.timestamp
        else None
    )
    if fields.key:
        out["keys"].append(_field_bytes(rec.get(fields.key)))
    if fields.partition:
        out["partitions"].append(part)
    if fields.timestamp:
        out["timestamps"].append(ts)
    if fields.headers:
        out["headers"].append([(h, _field_bytes(rec.get(h))) for h in fields.headers])
    return value


def _partitions(pcol: pa.Array, name: str, bad: dict[int, str]) -> list[Optional[int]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(pcol.type) or pa.types.is_large_string(pcol.type):
        pcol = pc.utf8_trim_whitespace(pcol)
        pcol = pc.if_else(pc.equal(pcol, ""), pa.scalar(None, pcol.type), pcol)
    try:
        parts = pc.cast(pcol, pa.int64()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        parts = []
        for i, v in enumerate(pcol.to_pylist()):
            try:
                parts.append(None if v is None else int(v))
            except (TypeError, ValueError):
                parts.append(None)
                bad[i] = f"partition field {name!r} is {v!r}, not an int"
    for i, p in enumerate(parts):
        if p is not None and p < 0 and i not in bad:
            bad[i] = f"partition field {name!r} is {p}, not >= 0"
    return parts


def _timestamps(
    tcol: pa.Array, name: str, bad: dict[int, str], timezone: Optional[str] = None
) -> list[Optional[int]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = tcol.type
    if pa.types.is_timestamp(t) and t.tz is None:
        if timezone is None:
            raise ImportInputError(naive_refused(name, f"a {t} column"))
        tcol = pc.assume_timezone(tcol, timezone, ambiguous="raise", nonexistent="raise")
        t = tcol.type
    if pa.types.is_timestamp(t):
        # Kafka timestamps are milliseconds: finer units (Spark and pandas write us or
        # ns) are truncated toward the earlier millisecond, as Java's toEpochMilli does.
        per_ms = {"s": 1, "ms": 1, "us": 1_000, "ns": 1_000_000}[t.unit]
        ints = pc.cast(tcol, pa.int64())
        if t.unit == "s":
            return pc.multiply(ints, 1000).to_pylist()
        if per_ms == 1:
            return ints.to_pylist()
        return [None if v is None else v // per_ms for v in ints.to_pylist()]
    if pa.types.is_date(t):
        return pc.cast(pc.cast(tcol, pa.timestamp("ms")), pa.int64()).to_pylist()
    if pa.types.is_integer(t):
        return tcol.to_pylist()
    out: list[Optional[int]] = []
    for i, v in enumerate(tcol.to_pylist()):
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        try:
            out.append(_timestamp_ms(v if v != "" else None, name, timezone))
        except ValueError as e:
            out.append(None)
            bad[i] = str(e)
    return out


def batch_chunk(
    batch: pa.RecordBatch,
    fields: Fields,
    chunk: Chunk,
    record: Optional[Callable[[pa.RecordBatch], pa.Array]] = None,
    encoders: Optional[ColumnEncoders] = None,
    nonfinite: str = "refuse",
) -> tuple[Chunk, list[Problem]]:
    """Fill ``chunk`` (positions already set, one element per row of ``batch``) with
    the message columns of the Arrow record batch; returns it and the rows dropped.
    ``record``: how to render a whole row as JSON (default ``record_json``).
    ``encoders``: Schema Registry serializers for the value (the whole row, or the
    value field) and the key field (:class:`cykafka.schema_registry.ColumnEncoders`);
    a row that does not fit the schema is dropped and reported like a bad field.
    ``nonfinite``: what NaN and infinities become (:func:`cykafka._arrow.record_json`);
    under "refuse" their rows are dropped and reported, naming column and value."""
    import pyarrow as pa

    from .._arrow import as_message_column, record_json

    def col(name: str) -> pa.Array:
        return batch.column(batch.schema.get_field_index(name))

    bad: dict[int, str] = {}

    def merge(refused: dict[int, str]) -> None:
        for i, why in refused.items():
            bad.setdefault(i, why)

    def message_column(c: pa.Array, name: str) -> pa.Array:
        out, refused = as_message_column(c, name, nonfinite=nonfinite)
        merge(refused)
        return out

    parts = _partitions(col(fields.partition), fields.partition, bad) if fields.partition else None
    stamps = (
        _timestamps(col(fields.timestamp), fields.timestamp, bad, fields.timezone)
        if fields.timestamp
        else None
    )
    if encoders is not None and encoders.value is not None:
        values = encoders.encode_value(col(fields.value) if fields.value else batch, bad)
    elif fields.value:
        values = message_column(col(fields.value), fields.value)
    elif record is not None:
        values = record(batch)
    else:
        values, refused = record_json(batch, nonfinite=nonfinite)
        merge(refused)
    if encoders is not None and encoders.key is not None and fields.key:
        keys = encoders.encode_key(col(fields.key), bad)
    else:
        keys = message_column(col(fields.key), fields.key) if fields.key else None
    headers = None
    if fields.headers:
        hvals = [message_column(col(h), h).to_pylist() for h in fields.headers]
        headers = [
            [
                (h, v.encode("utf-8") if isinstance(v, str) else v)
                for h, v in zip(fields.headers, vs)
            ]
            for vs in zip(*hvals)
        ]
    problems = [
        chunk.problem(i, "refused", msg, text=row_json(batch, i)) for i, msg in sorted(bad.items())
    ]
    if bad:
        # Drop the rows that cannot be produced; keep the positions of the rest.
        keep = [i for i in range(batch.num_rows) if i not in bad]
        mask = pa.array([i not in bad for i in range(batch.num_rows)])
        values = values.filter(mask)
        keys = keys.filter(mask) if keys is not None else None
        parts = [parts[i] for i in keep] if parts is not None else None
        stamps = [stamps[i] for i in keep] if stamps is not None else None
        headers = [headers[i] for i in keep] if headers is not None else None
        _keep_positions(chunk, keep)
    chunk.values, chunk.keys, chunk.partitions = values, keys, parts
    chunk.headers, chunk.timestamps = headers, stamps
    return chunk, problems


def _keep_positions(chunk: Chunk, keep: list[int]) -> None:
    import numpy as np

    idx = np.asarray(keep, np.int64)
    chunk.rows = np.asarray([chunk.row_of(i) for i in keep], np.int64)
    lines, offsets = chunk.line_array(), chunk.offset_array()
    if lines is not None:
        chunk.lines = np.asarray(lines)[idx]
    if offsets is not None:
        chunk.offsets = np.asarray(offsets)[idx]


def row_json(batch: pa.RecordBatch, i: int) -> str:
    """Record i of a batch as JSON text (for dead-letter entries)."""
    row = {name: batch.column(j)[i].as_py() for j, name in enumerate(batch.schema.names)}
    return json.dumps(row, ensure_ascii=False, default=str)


#: CSV text sent as a bare JSON number or boolean when types are inferred: numbers as
#: written (exact: "2.50" stays 2.50), at most 15 integer digits (what a double holds
#: exactly), no leading zeros (a zip code "02134" stays text).
_PLAIN_JSON = r"^(-?(0|[1-9][0-9]{0,14})(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?|true|false)$"


def csv_record_json(batch: pa.RecordBatch, infer: bool = True) -> pa.Array:
    """Each CSV row as a JSON object; with ``infer`` numbers and true/false are bare
    JSON values (as written), everything else a string; nulls (--null-value) null.

    A column whose values are all plain (or none is) costs one regex scan; only a
    mixed column pays for both spellings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._arrow import escaped, json_string, record_json

    if not infer:
        return record_json(batch)[0]  # text columns: nothing to refuse
    parts: list[Union[str, pa.Array]] = []
    literal = "{"
    for i, name in enumerate(batch.schema.names):
        col = batch.column(i)
        literal += ("," if i else "") + json.dumps(str(name), ensure_ascii=False) + ":"
        plain = pc.match_substring_regex(col, _PLAIN_JSON)
        n_plain = pc.sum(plain).as_py() or 0
        if n_plain and n_plain == len(col) - col.null_count:
            parts += [literal, pc.fill_null(col, "null")]  # all bare JSON values
        elif n_plain:
            text = pc.if_else(plain, col, pc.cast(json_string(col), pa.string()))
            parts += [literal, pc.fill_null(text, "null")]
        elif col.null_count == 0:
            esc, quoted = escaped(col)
            if not quoted:  # the quotes go into the literals around it
                parts += [literal + '"', pc.cast(esc, pa.string())]
                literal = '"'
                continue
            parts += [literal, pc.cast(esc, pa.string())]
        else:
            parts += [literal, pc.fill_null(pc.cast(json_string(col), pa.string()), "null")]
        literal = ""
    parts.append(literal + "}")
    return pc.binary_join_element_wise(*parts, "")


def records_chunk(
    chunk: Chunk, encoders: ColumnEncoders, key_field: Optional[str] = None
) -> tuple[Chunk, list[Problem]]:
    """A JSON Lines chunk whose values are whole records (JSON text) serialized with
    the Schema Registry ``encoders`` instead (and ``key_field``'s value with the key
    encoder); a record that does not fit the schema is dropped and reported with its
    line."""
    import pyarrow as pa

    texts = list(chunk.values)
    records = [json.loads(t) for t in texts]
    bad: dict[int, str] = {}
    values: Column = chunk.values
    if encoders.value is not None:
        values = encoders.encode_value(records, bad)
    if encoders.key is not None and key_field:
        chunk.keys = encoders.encode_key([r.get(key_field) for r in records], bad)
    problems = [
        chunk.problem(i, "refused", msg, text=texts[i].decode("utf-8", "replace"))
        for i, msg in sorted(bad.items())
    ]
    if bad:
        keep = [i for i in range(len(texts)) if i not in bad]
        mask = pa.array([i not in bad for i in range(len(texts))])
        values = values.filter(mask) if isinstance(values, pa.Array) else [values[i] for i in keep]
        for name in ("keys", "partitions", "timestamps", "headers"):
            col = getattr(chunk, name)
            if isinstance(col, pa.Array):
                setattr(chunk, name, col.filter(mask))
            elif col is not None:
                setattr(chunk, name, [col[i] for i in keep])
        _keep_positions(chunk, keep)
    chunk.values = values
    return chunk, problems
