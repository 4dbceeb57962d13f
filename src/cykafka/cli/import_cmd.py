"""``cykafka import``: files into a topic, with a summary (see cykafka.importer)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Optional

from .exactly_once import add_exactly_once, exactly_once_from_args
from .input_options import (
    add_input_options,
    fields_from,
    read_options_from,
    static_headers_from,
)
from .options import (
    BOOTSTRAP_ENV,
    UsageError,
    add_bootstrap,
    add_connect_timeout,
    add_overrides,
    add_preset,
    bootstrap_from,
    config_from_args,
    config_refused,
    connect_timeout_from,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from ..importer import ReadOptions

__all__ = ["NAME", "setup"]

NAME = "import"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="import CSV, JSON Lines, Parquet or text files into a topic",
        description=(
            "Stream files into a Kafka topic through cykafka's bulk path and print a summary "
            "(rows, delivered, failed, offsets, rate, guarantees). FILE may be - (standard "
            "input: lines unless --format), a quoted glob, a directory of part files, or a .gz/.zst/"
            ".bz2/.xz file. Without --bootstrap-servers (or "
            f"${BOOTSTRAP_ENV}) an embedded local broker is started for the import. Exit "
            "status 0 only if every row was delivered; 128+signal after Ctrl-C (130), SIGTERM "
            "(143) or SIGHUP (129), and the summary prints the command that finishes the import."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="input files (format from extension)")
    p.add_argument("-t", "--topic", required=True, help="topic to write to")
    add_bootstrap(p, f"Kafka brokers (default ${BOOTSTRAP_ENV}; else an embedded local broker)")
    add_connect_timeout(p)
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
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show librdkafka's own log lines as they come (by default states it recovers "
        "from by itself are not shown, and anything else is said once)",
    )
    p.add_argument(
        "--timings",
        action="store_true",
        help="also show where the time went: start-up, cluster check, producer start, "
        "waiting for input, handing over, final flush",
    )
    add_exactly_once(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..importer.signals import StartSignals, StoppedBeforeReading, signal_name
    from .client_log import presented

    try:
        with StartSignals(), presented("import", args.verbose):
            return _run(args)
    except StoppedBeforeReading as e:
        print(
            f"cykafka import: {signal_name(e.signum)} before any row was read: stopped, "
            "nothing was sent",
            file=sys.stderr,
        )
        return 128 + e.signum


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from ..importer import ImportInputError, ImportJob
    from .import_run import run_import

    config = config_from_args(args, args.config_file)
    bootstrap = bootstrap_from(args, config)
    preset = None if args.preset in ("", "none") else args.preset
    fields = fields_from(args)
    options = read_options_from(args)
    _check_args(args, bootstrap)
    files = list(args.files)
    fmt = args.format
    if args.sample is not None:
        if files:
            raise UsageError("--sample generates its own input; do not also give FILEs")
        if args.sample < 1:
            raise UsageError(f"--sample needs a positive number of rows, not {args.sample}")
        if args.dry_run:
            raise UsageError("--dry-run reads FILEs; --sample has nothing to check")
        if fields.key is None:
            fields = dataclasses.replace(fields, key="user")
        fmt = "csv"
    elif not files:
        raise UsageError("give FILE(s) to import, or --sample N for generated sample data")
    exactly_once = exactly_once_from_args(args, config)
    if bootstrap is not None:
        config["bootstrap.servers"] = bootstrap
    sample: Optional[str] = None
    sample_s: Optional[float] = None
    options, registry = _with_registry(args, fmt, options)
    try:
        if args.sample is not None:
            import time

            from ..importer import write_sample_csv

            print(f"cykafka import: generating {args.sample:,} sample orders...", file=sys.stderr)
            t = time.monotonic()
            sample = write_sample_csv(args.sample)
            sample_s = time.monotonic() - t
            files = [sample]
        try:
            # Every decision of the import, once: bad input and a configuration the
            # resolver refuses fail here, before a broker starts or a topic is made.
            job = ImportJob.build(
                files,
                args.topic,
                config,
                preset=preset,
                fmt=fmt,
                fields=fields,
                options=options,
                static_headers=static_headers_from(args),
                partition=args.partition,
                rate=args.rate,
                exactly_once=exactly_once,
                skip_rows=args.skip_rows,
                dead_letter=args.dead_letter,
                partitions=args.partitions,
                connect_timeout=connect_timeout_from(args),
            )
        except ImportInputError as e:
            raise UsageError(str(e)) from None
        except (ValueError, TypeError) as e:
            from ..config import redact

            raise UsageError(redact(str(e), config)) from None
        if job.refusal is not None:  # librdkafka's verdict on a bad -X, before a broker starts
            raise config_refused(job.refusal, job.resolved.librdkafka())
        if job.explanation.refused:
            raise UsageError(job.guarantees)
        if args.dry_run:
            from ..importer.dryrun import dry_run

            try:
                return dry_run(job, sys.stdout)
            except ImportInputError as e:
                raise UsageError(str(e)) from None
        return run_import(job, args, sample_rows=args.sample, sample_s=sample_s)
    finally:
        if registry is not None:
            registry.close()
        if sample is not None:
            os.unlink(sample)


def _check_args(args: argparse.Namespace, bootstrap: Optional[str]) -> None:
    """The arguments that contradict each other or Kafka's rules, refused by name."""
    from ..importer import ImportInputError
    from ..importer.topic_checks import check_topic_name

    if args.key_delimiter is not None and args.key_field:
        raise UsageError("-K (key from each line) and --key-field cannot be combined")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, not {args.partitions}")
    if args.partition is not None and (args.partition < 0 or args.partition_field):
        raise UsageError("-p N needs N >= 0 and no --partition-field")
    if args.skip_rows < 0:
        raise UsageError(f"--skip-rows must be >= 0, not {args.skip_rows}")
    if args.skip_rows and not bootstrap and not args.dry_run:
        raise UsageError(
            "--skip-rows goes on from an import into a cluster that holds the rows before "
            "it; the embedded broker starts empty, so they would exist nowhere: pass "
            "--bootstrap-servers, or import everything without --skip-rows"
        )
    if args.skip_rows and args.exactly_once:
        raise UsageError(
            "--exactly-once resumes by itself after the rows it committed: run the same "
            "command again, without --skip-rows"
        )
    if args.rate is not None and args.rate <= 0:
        raise UsageError(f"--rate must be > 0, not {args.rate}")
    if args.keep_broker and bootstrap:
        raise UsageError("--keep-broker only applies to the embedded broker")
    if args.connect_timeout is not None and not bootstrap:
        raise UsageError(
            "--connect-timeout applies to a cluster given with --bootstrap-servers (or "
            f"${BOOTSTRAP_ENV}); the embedded broker is started and waited for by cykafka"
        )
    try:
        check_topic_name(args.topic)
    except ImportInputError as e:
        raise UsageError(str(e)) from None


def _with_registry(
    args: argparse.Namespace, fmt: Optional[str], options: ReadOptions
) -> tuple[ReadOptions, Optional[SchemaRegistryClient]]:
    """ReadOptions with the Schema Registry serializers of --value-format/--key-format,
    and their registry client (None without them), for the caller to close when the
    import ends: ``main()`` may run in a process that goes on."""
    import dataclasses

    if not (args.value_format or args.key_format):
        if args.schema_registry or args.value_schema or args.key_schema:
            raise UsageError("--schema-registry and --*-schema need --value-format/--key-format")
        return options, None
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
        from ..schema_registry import ColumnEncoders, registry_client, serializers_for
    except ImportError as e:  # the registry extra is not installed: say which
        raise UsageError(str(e)) from None

    url = args.schema_registry
    try:
        client = registry_client(url)
    except ValueError as e:  # confluent's client: "Invalid url ..."
        raise UsageError(
            f"--schema-registry {url}: not a registry URL ({e}); give its http:// or "
            "https:// URL, e.g. http://127.0.0.1:8081, or mock://NAME for confluent's "
            "in-process mock"
        ) from None
    try:
        try:
            value, key = serializers_for(
                args.value_format, client, args.value_schema, args.key_format, args.key_schema
            )
        except (ValueError, OSError) as e:
            raise UsageError(str(e)) from None
        _check_registry(url, client)
    except BaseException:
        client.close()
        raise
    return dataclasses.replace(options, encoders=ColumnEncoders(args.topic, value, key)), client


def _check_registry(url: str, client: SchemaRegistryClient) -> None:
    """A registry that does not answer fails here, naming its URL, before a broker
    starts or a row is read (the serializers would meet it at the first row)."""
    if url.startswith("mock://"):
        return
    try:
        client.get_subjects()
    except Exception as e:
        raise UsageError(
            f"--schema-registry {url}: the Schema Registry does not answer "
            f"({type(e).__name__}: {e}); nothing was read or sent"
        ) from None
