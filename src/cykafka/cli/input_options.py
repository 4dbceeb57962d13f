"""The input options ``cykafka import`` and ``cykafka verify`` share, declared once: how
the files are read (format, CSV dialect, encoding, NaN policy) and which fields become
the key, value, partition, timestamp and headers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ..inputs import Fields, ReadOptions

from .options import UsageError

__all__ = ["add_input_options", "fields_from", "read_options_from", "static_headers_from"]


def add_input_options(p: argparse.ArgumentParser) -> None:
    """How input files become records (also ``cykafka verify``'s, which must match)."""
    p.add_argument("--format", choices=["csv", "jsonl", "parquet", "lines"], help="input format")
    f = p.add_argument_group("fields (csv, jsonl, parquet)")
    f.add_argument("--key-field", metavar="F", help="field that becomes the message key")
    f.add_argument(
        "--value-field", metavar="F", help="field that becomes the value (default: record as JSON)"
    )
    f.add_argument("--partition-field", metavar="F", help="integer field: the partition")
    f.add_argument(
        "--timestamp-field", metavar="F", help="field with the timestamp (ms or RFC 3339)"
    )
    f.add_argument(
        "--timezone",
        metavar="ZONE",
        help="the zone of --timestamp-field values that name none (UTC, Europe/Paris); "
        "without it they are refused, as produce() refuses a naive datetime",
    )
    f.add_argument("--header-fields", metavar="F,G", help="fields sent as message headers")
    f.add_argument(
        "--nan",
        choices=["refuse", "null", "string"],
        default="refuse",
        help="NaN and infinities (Parquet): refuse the row (dead letters, the default), "
        'JSON null, or the strings "NaN", "Infinity", "-Infinity"',
    )
    c = p.add_argument_group("CSV")
    c.add_argument(
        "--delimiter",
        metavar="C",
        help="field delimiter (default: detected among , ; tab |; else ',', tab for .tsv)",
    )
    c.add_argument(
        "--quote-char", metavar="C", help="quote character ('' for none; default: \" or ' detected)"
    )
    c.add_argument("--encoding", default="utf-8", help="text encoding (utf-8 BOM is skipped)")
    c.add_argument("--no-header", action="store_true", help="the first row is data")
    c.add_argument("--column-names", metavar="A,B,C", help="column names (replace the header)")
    c.add_argument("--null-value", metavar="S", help="a field with exactly this text is null")
    c.add_argument(
        "--csv-types",
        choices=["infer", "string"],
        default="infer",
        help="in JSON records: numbers and true/false as JSON values (infer), or all text",
    )
    r = p.add_argument_group("Schema Registry (csv, jsonl, parquet)")
    r.add_argument(
        "--value-format",
        choices=["avro", "json-schema", "protobuf"],
        help="serialize the value (the record, or --value-field) for a Confluent registry",
    )
    r.add_argument(
        "--key-format",
        choices=["avro", "json-schema", "protobuf"],
        help="serialize the --key-field likewise",
    )
    r.add_argument("--schema-registry", metavar="URL", help="the registry (http://host:8081)")
    r.add_argument(
        "--value-schema",
        metavar="FILE",
        help="Avro/JSON schema file (Avro: default derived from the input's columns); "
        "protobuf: module:Message",
    )
    r.add_argument("--key-schema", metavar="FILE", help="likewise for the key")
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept an input file that holds no rows (0 bytes, a CSV header alone, a "
        "Parquet file of 0 rows) as zero rows; without it such a file is refused, exit 2",
    )
    p.add_argument(
        "--skip-rows",
        type=int,
        default=0,
        metavar="N",
        help="start after the first N rows of the input (all FILEs in order, malformed rows "
        "counted, a CSV header not): what a stopped import's summary gives to finish it",
    )
    m = p.add_argument_group("messages (kcat / console-producer habits)")
    m.add_argument("-K", dest="key_delimiter", metavar="DELIM", help="lines: KEY<DELIM>VALUE")
    m.add_argument(
        "-H",
        dest="static_headers",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="header on every message (repeatable)",
    )
    m.add_argument("-p", dest="partition", type=int, metavar="N", help="send to partition N")


def _char(flag: str, value: Optional[str], empty_ok: bool = False) -> Optional[str]:
    if value is None:
        return None
    value = {"\\t": "\t", "tab": "\t"}.get(value, value)
    if value == "" and empty_ok:
        return ""
    if len(value) != 1:
        raise UsageError(f"{flag} must be one character, not {value!r}")
    return value


def read_options_from(args: argparse.Namespace) -> ReadOptions:
    import codecs

    from ..inputs import ReadOptions

    try:
        codecs.lookup(args.encoding)
    except LookupError:
        raise UsageError(f"--encoding {args.encoding!r} is not a known encoding") from None
    names = None
    if args.column_names is not None:
        names = tuple(n.strip() for n in args.column_names.split(","))
        if any(not n for n in names) or len(set(names)) != len(names):
            raise UsageError(f"--column-names {args.column_names!r}: empty or repeated names")
    key_delim = None
    if args.key_delimiter is not None:
        if args.key_delimiter == "":
            raise UsageError("-K needs a non-empty delimiter")
        key_delim = args.key_delimiter.encode("utf-8")
    return ReadOptions(
        delimiter=_char("--delimiter", args.delimiter),
        quote_char=_char("--quote-char", args.quote_char, empty_ok=True)
        if args.quote_char is not None
        else '"',
        sniff_quote=args.quote_char is None,
        encoding=args.encoding,
        header=not args.no_header,
        column_names=names,
        null_value=args.null_value,
        csv_types=args.csv_types,
        key_delimiter=key_delim,
        nonfinite=args.nan,
        allow_empty=args.allow_empty,
    )


def fields_from(args: argparse.Namespace) -> Fields:
    from ..inputs import Fields

    headers = tuple(h.strip() for h in args.header_fields.split(",")) if args.header_fields else ()
    if any(not h for h in headers):
        raise UsageError(f"--header-fields {args.header_fields!r} has an empty field name")
    return Fields(
        key=args.key_field,
        value=args.value_field,
        partition=args.partition_field,
        headers=headers,
        timestamp=args.timestamp_field,
        timezone=_timezone(args.timezone, args.timestamp_field),
    )


def _timezone(zone: Optional[str], field: Optional[str]) -> Optional[str]:
    if zone is None:
        return None
    if field is None:
        raise UsageError("--timezone says how --timestamp-field is read: give one")
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"--timezone {zone!r} is not a time zone (UTC, Europe/Paris)") from None
    return zone


def static_headers_from(args: argparse.Namespace) -> list[tuple[str, bytes]]:
    out = []
    for h in args.static_headers:
        name, sep, value = h.partition("=")
        if not sep or not name:
            raise UsageError(f"-H {h!r}: expected NAME=VALUE")
        out.append((name, value.encode("utf-8")))
    return out
