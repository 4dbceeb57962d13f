"""``cykafka verify``: check that a topic holds exactly what importing the files gives
(see cykafka.verify)."""

from __future__ import annotations

import argparse
import sys

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
    bootstrap_from,
    config_from_args,
    connect_timeout_from,
)

__all__ = ["NAME", "setup"]

NAME = "verify"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:

    p = sub.add_parser(
        "verify",
        help="check that a topic holds exactly the records an import of FILEs sends",
        description=(
            "Read the topic's committed records (as a read_committed consumer on Kafka sees "
            "them, also on brokers that do not hide aborted transactions) and compare them "
            "with what `cykafka import` makes of FILEs with the same options: counts, "
            "content, copies and per-key order across the topic. Prints what is missing, extra, "
            "duplicated, split over partitions or reordered, with examples. Exit status 0 only "
            "on an exact match, 1 on a mismatch, 2 on bad input."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="the files that were imported")
    p.add_argument("-t", "--topic", required=True, help="topic to check")
    add_bootstrap(p, f"Kafka brokers (default ${BOOTSTRAP_ENV})")
    add_connect_timeout(p)
    add_input_options(p)
    add_overrides(p, help="client property, e.g. security settings (repeatable)")
    p.add_argument("-F", "--config-file", metavar="FILE", help="client properties file (or .json)")
    p.add_argument("--tmp-dir", metavar="DIR", help="where the comparison spills to disk")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..inputs import ImportInputError
    from ..verify import verify_files

    _refuse_import_only(args)
    config = config_from_args(args, args.config_file)
    bootstrap = bootstrap_from(args, config)
    if not bootstrap:
        raise UsageError(f"give the brokers with -b or ${BOOTSTRAP_ENV}")
    config["bootstrap.servers"] = bootstrap
    try:
        report = verify_files(
            args.files,
            args.topic,
            config,
            fmt=args.format,
            fields=fields_from(args),
            options=read_options_from(args),
            partition=args.partition,
            static_headers=static_headers_from(args),
            tmp_dir=args.tmp_dir,
            connect_timeout=connect_timeout_from(args),
        )
    except (ImportInputError, LookupError) as e:
        raise UsageError(str(e).strip("'\"")) from None
    for line in report.lines():
        print(line)
    sys.stdout.flush()
    return 0 if report.ok else 1


def _refuse_import_only(args: argparse.Namespace) -> None:
    """The input options verify shares with the import but cannot honour, refused by
    name rather than ignored (an ignored one would report every record missing)."""
    if args.skip_rows:
        raise UsageError(
            "--skip-rows: verify compares the topic with the whole input (an import and the "
            "run that finished it with --skip-rows together hold every row): drop it"
        )
    for flag, given in (
        ("--value-format", args.value_format),
        ("--key-format", args.key_format),
        ("--schema-registry", args.schema_registry),
        ("--value-schema", args.value_schema),
        ("--key-schema", args.key_schema),
    ):
        if given:
            raise UsageError(
                f"{flag}: verify compares records as the import sends them without a Schema "
                "Registry; records serialized through one cannot be verified yet"
            )
