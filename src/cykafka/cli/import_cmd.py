"""``cykafka import``: files into a topic, with a summary (see cykafka.importer)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

from .exactly_once import add_exactly_once, exactly_once_from_args
from .options import (
    BOOTSTRAP_ENV,
    UsageError,
    add_bootstrap,
    add_overrides,
    add_preset,
    bootstrap_from,
    check_config,
    config_from_args,
)

__all__ = ["NAME", "setup"]

NAME = "import"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="import CSV, JSON Lines, Parquet or text files into a topic",
        description=(
            "Stream files into a Kafka topic through cykafka's bulk path and print a summary "
            "(rows, delivered, failed, offsets, rate, guarantees). FILE may be - (standard "
            "input, with --format), a quoted glob, a directory of part files, or a .gz/.zst/"
            ".bz2/.xz file. Without --bootstrap-servers (or "
            f"${BOOTSTRAP_ENV}) an embedded local broker is started for the import. Exit "
            "status 0 only if every row was delivered; 130 after Ctrl-C."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="input files (format from extension)")
    p.add_argument("-t", "--topic", required=True, help="topic to write to")
    add_bootstrap(p, f"Kafka brokers (default ${BOOTSTRAP_ENV}; else an embedded local broker)")
    add_preset(
        p, "ordered", "config preset(s), joined with '+' (default: ordered; 'none' for none)"
    )
    add_input_options(p)
    m = p.add_argument_group("pace")
    m.add_argument("--rate", type=float, metavar="ROWS_PER_S", help="at most this many rows/s")
    add_overrides(p)
    p.add_argument(
        "-F", "--config-file", metavar="FILE", help="producer properties file (or .json)"
    )
    p.add_argument(
        "--dead-letter", metavar="FILE", help="write rows not delivered, with the error, as JSONL"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="read and check the input, show it; send nothing"
    )
    p.add_argument(
        "--inspect", action="store_true", help="also show where messages wait (accumulator view)"
    )
    p.add_argument(
        "--partitions",
        type=int,
        metavar="N",
        help="create the topic with N partitions if it does not exist (embedded default: 3)",
    )
    p.add_argument(
        "--keep-broker",
        action="store_true",
        help="keep the embedded broker running after the import until Ctrl-C",
    )
    p.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="import N generated sample orders (id,user,amount,ts; key field user) instead of FILEs",
    )
    p.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    add_exactly_once(p)
    p.set_defaults(handler=run)


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


def _read_options(args: argparse.Namespace) -> Any:
    import codecs

    from ..importer import ReadOptions

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
    )


def _fields(args: argparse.Namespace) -> Any:
    from ..importer import Fields

    headers = tuple(h.strip() for h in args.header_fields.split(",")) if args.header_fields else ()
    if any(not h for h in headers):
        raise UsageError(f"--header-fields {args.header_fields!r} has an empty field name")
    return Fields(
        key=args.key_field,
        value=args.value_field,
        partition=args.partition_field,
        headers=headers,
        timestamp=args.timestamp_field,
    )


def _static_headers(args: argparse.Namespace) -> list[tuple[str, bytes]]:
    out = []
    for h in args.static_headers:
        name, sep, value = h.partition("=")
        if not sep or not name:
            raise UsageError(f"-H {h!r}: expected NAME=VALUE")
        out.append((name, value.encode("utf-8")))
    return out


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from ..importer import ImportInputError, plan_files
    from ..importer.cluster import check_topic_name

    config = config_from_args(args, args.config_file)
    bootstrap = bootstrap_from(args, config)
    preset = None if args.preset in ("", "none") else args.preset
    fields = _fields(args)
    options = _read_options(args)
    if args.key_delimiter is not None and args.key_field:
        raise UsageError("-K (key from each line) and --key-field cannot be combined")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, not {args.partitions}")
    if args.partition is not None and (args.partition < 0 or args.partition_field):
        raise UsageError("-p N needs N >= 0 and no --partition-field")
    if args.rate is not None and args.rate <= 0:
        raise UsageError(f"--rate must be > 0, not {args.rate}")
    if args.keep_broker and bootstrap:
        raise UsageError("--keep-broker only applies to the embedded broker")
    try:
        check_topic_name(args.topic)
    except ImportInputError as e:
        raise UsageError(str(e)) from None
    files = list(args.files)
    fmt = args.format
    if args.sample is not None:
        if files:
            raise UsageError("--sample generates its own input; do not also give FILEs")
        if args.sample < 1:
            raise UsageError(f"--sample needs a positive number of rows, not {args.sample}")
        if fields.key is None:
            fields = dataclasses.replace(fields, key="user")
        fmt = "csv"
    elif not files:
        raise UsageError("give FILE(s) to import, or --sample N for generated sample data")
    exactly_once = exactly_once_from_args(args, config)
    options = _with_registry(args, fmt, options)
    guarantees = _guarantees(config, preset)
    check_config(config, preset)  # a bad -X fails before a broker starts
    if args.sample is None:
        try:
            plan_files(files, fmt, fields, options)  # bad input fails before a broker starts
        except ImportInputError as e:
            raise UsageError(str(e)) from None
    if args.dry_run:
        from ..importer.dryrun import dry_run

        if args.sample is not None:
            raise UsageError("--dry-run reads FILEs; --sample has nothing to check")
        try:
            return dry_run(
                files,
                sys.stdout,
                fmt=fmt,
                fields=fields,
                options=options,
                guarantees=guarantees,
                partition=args.partition,
                static_headers=_static_headers(args),
            )
        except ImportInputError as e:
            raise UsageError(str(e)) from None
    from .import_run import run_import

    return run_import(
        args,
        config,
        bootstrap,
        preset,
        fields,
        options,
        fmt,
        files,
        _static_headers(args),
        exactly_once,
    )


def _with_registry(args: argparse.Namespace, fmt: Optional[str], options: Any) -> Any:
    """ReadOptions with the Schema Registry serializers of --value-format/--key-format."""
    import dataclasses

    if not (args.value_format or args.key_format):
        if args.schema_registry or args.value_schema or args.key_schema:
            raise UsageError("--schema-registry and --*-schema need --value-format/--key-format")
        return options
    if not args.schema_registry:
        raise UsageError("--value-format/--key-format need --schema-registry URL")
    if args.key_format and not args.key_field:
        raise UsageError("--key-format serializes the --key-field: give one")
    if fmt == "lines" or any(str(f).endswith((".txt", ".log")) for f in args.files):
        raise UsageError("--value-format/--key-format need records: csv, jsonl or parquet")
    jsonl = fmt == "jsonl" or any(".jsonl" in str(f) or ".ndjson" in str(f) for f in args.files)
    if jsonl and args.value_field:
        raise UsageError(
            "JSON Lines: --value-format serializes whole records; --value-field with it "
            "is not supported yet"
        )
    try:
        from ..schema_registry import ColumnEncoders, serializers_for
    except ImportError as e:  # the registry extra is not installed: say which
        raise UsageError(str(e)) from None

    try:
        value, key = serializers_for(
            args.value_format,
            args.schema_registry,
            args.value_schema,
            args.key_format,
            args.key_schema,
        )
    except (ValueError, OSError) as e:
        raise UsageError(str(e)) from None
    return dataclasses.replace(options, encoders=ColumnEncoders(args.topic, value, key))


def _guarantees(config: dict[str, Any], preset: Any) -> str:
    try:
        from ..explain import explain

        report = explain(config, preset=preset)
    except (ValueError, TypeError) as e:
        from ..config import redact

        raise UsageError(redact(str(e), config)) from None
    if report.refused:
        raise UsageError(report.summary())
    return str(report.summary())
