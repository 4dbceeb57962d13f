"""The ``cykafka`` command.

Subcommands live in ``SUBCOMMANDS`` (name -> setup function). A setup function adds its
parser to the subparsers and sets ``handler`` (``args -> exit code``); add one with the
``subcommand`` decorator. Imports of cykafka modules happen inside handlers so that
``cykafka --help`` stays fast and never loads the extension.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any, Callable, Optional

__all__ = [
    "SUBCOMMANDS",
    "check_config",
    "load_config_file",
    "main",
    "parse_assignments",
    "subcommand",
]

SetupFn = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Subcommand name -> function that registers it on the subparsers.
SUBCOMMANDS: dict[str, SetupFn] = {}


def subcommand(name: str) -> Callable[[SetupFn], SetupFn]:
    """Register a subcommand setup function under ``name``."""

    def register(fn: SetupFn) -> SetupFn:
        SUBCOMMANDS[name] = fn
        return fn

    return register


class UsageError(Exception):
    """Bad input from the user: printed without a traceback, exit code 2."""


# --------------------------------------------------------------------------- helpers


def parse_assignments(lines: list[str], origin: str = "-X") -> dict[str, str]:
    """``key=value`` lines (librdkafka .properties style; ``#``/``!`` comments, blanks)."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            where = f"{origin}:{lineno}" if origin != "-X" else "-X"
            raise UsageError(f"{where}: expected key=value, got {line!r}")
        out[key.strip()] = value.strip()
    return out


def load_config_file(path: str) -> dict[str, Any]:
    """A config file: JSON object if it ends with .json, else key=value lines."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if path.endswith(".json"):
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: invalid JSON: {e}") from None
        if not isinstance(data, Mapping):
            raise UsageError(f"{path}: expected a JSON object of properties")
        return dict(data)
    return dict(parse_assignments(text.splitlines(), origin=path))


def check_config(config: Mapping[str, Any], preset: Any = None) -> None:
    """librdkafka's own verdict on every property (unknown keys, bad values), given
    before anything starts: a :class:`UsageError` naming the property, with the values
    of secret-like keys redacted.  Builds (and at once closes) a producer that is
    never connected: librdkafka checks properties only when a client is made."""
    from ._native import KafkaConfigError
    from .config import redact
    from .producer import Producer

    probe = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    probe.setdefault("log_level", 0)  # no "no bootstrap.servers" warning
    try:
        Producer(probe, preset=preset).close(0)
    except KafkaConfigError as e:
        # "config property 'KEY': reason": the key name is shown as is (redact() would
        # take "secret': No" for an assignment), the reason with secret values masked.
        head, sep, reason = e.message.partition("': ")
        text = head + sep + redact(reason, config) if sep else redact(e.message, config)
        raise UsageError(f"{text} (from -X or the config file)") from None
    except (ValueError, TypeError) as e:
        raise UsageError(redact(str(e), config)) from None


# --------------------------------------------------------------------------- presets


@subcommand("presets")
def _setup_presets(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "presets",
        help="list config presets with their settings and guarantees",
        description="List cykafka's config presets (combine with '+', e.g. ordered+java_compatible).",
    )
    p.add_argument("name", nargs="?", help="show only this preset")
    p.set_defaults(handler=_run_presets)


def _run_presets(args: argparse.Namespace) -> int:
    import textwrap

    from . import presets

    try:
        chosen = [args.name] if args.name else presets.names()
        described = [presets.describe(n) for n in chosen]
    except ValueError as e:
        raise UsageError(str(e)) from None
    for i, p in enumerate(described):
        if i:
            print()
        print(f"{p.name}: {p.summary}")
        for key, value in p.settings.items():
            print(f"    {key}={value}")
        for key in p.requires:
            print(f"    {key}=<you must supply this>")
        print(textwrap.fill(p.guarantees, 100, initial_indent="  ", subsequent_indent="  "))
    return 0


# --------------------------------------------------------------------------- explain


@subcommand("explain")
def _setup_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "explain",
        help="explain the delivery guarantees of a producer config",
        description=(
            "Explain what a producer config guarantees on librdkafka (ordering, duplicates, "
            "loss, partitioning) and warn about risky settings. Java property names are "
            "translated first."
        ),
    )
    p.add_argument(
        "config_file",
        nargs="?",
        metavar="CONFIG_FILE",
        help="key=value .properties file (# comments), or JSON if it ends with .json",
    )
    p.add_argument(
        "-X",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a property (repeatable; wins over the file)",
    )
    p.add_argument(
        "--preset",
        action="append",
        default=[],
        metavar="P",
        help="apply preset(s) first (repeatable, or joined with '+')",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_explain)


def _run_explain(args: argparse.Namespace) -> int:
    from .explain import explain

    config: dict[str, Any] = load_config_file(args.config_file) if args.config_file else {}
    config.update(parse_assignments(args.overrides))
    try:
        report = explain(config, preset=args.preset or None)
    except (ValueError, TypeError) as e:
        from .config import redact

        raise UsageError(redact(str(e), config)) from None
    if not report.refused:  # a refused config is explained, not just rejected
        check_config(config, args.preset or None)
    if args.json:
        import json

        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report)
    return 0


# --------------------------------------------------------------------------- top


@subcommand("top")
def _setup_top(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "top",
        help="run a Python script with a live view of every Producer it creates",
        description=(
            "Run SCRIPT (or -m MODULE) in this process, as 'python SCRIPT ARGS...' would, "
            "with the accumulator inspector attached to every cykafka Producer it creates: "
            "a live table of partitions, brokers and queue fill refreshing every --interval "
            "seconds on a terminal, or one plain line per producer every --log-interval "
            "seconds when stdout is not a terminal. Producers that do not choose their own "
            "inspect_interval_ms get --stats-interval-ms. Exits with the script's exit code."
        ),
    )
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module instead")
    p.add_argument("--interval", type=float, default=0.25, help="refresh period (s)")
    p.add_argument(
        "--log-interval",
        type=float,
        default=5.0,
        help="period of plain lines when stdout is not a terminal (s)",
    )
    p.add_argument(
        "--stats-interval-ms",
        type=int,
        default=250,
        help="statistics.interval.ms for the producers (ms)",
    )
    p.add_argument("script", nargs="?", metavar="SCRIPT")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    p.set_defaults(handler=_run_top)


def _run_top(args: argparse.Namespace) -> int:
    import runpy

    from .inspector import watch_new_producers

    if (args.module is None) == (args.script is None):
        raise UsageError("give exactly one of SCRIPT or -m MODULE")
    if args.interval <= 0 or args.stats_interval_ms < 0:
        raise UsageError("--interval must be > 0 and --stats-interval-ms >= 0")
    target = args.module or args.script
    saved_argv = sys.argv
    sys.argv = [target, *args.args]
    code = 0
    try:
        with watch_new_producers(
            args.interval, args.stats_interval_ms, log_interval=args.log_interval
        ):
            try:
                if args.module:
                    runpy.run_module(args.module, run_name="__main__", alter_sys=True)
                else:
                    runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if e.code is not None and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
            except FileNotFoundError as e:
                if args.script and e.filename == args.script:
                    raise UsageError(f"cannot open {args.script}: {e.strerror}") from None
                raise
    finally:
        sys.argv = saved_argv
    return code


# --------------------------------------------------------------------------- import

#: Environment variable naming the brokers when --bootstrap-servers is not given.
BOOTSTRAP_ENV = "CYKAFKA_BOOTSTRAP_SERVERS"


@subcommand("import")
def _setup_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="import CSV, JSON Lines, Parquet or text files into a topic",
        description=(
            "Stream files into a Kafka topic through cykafka's bulk path and print a summary "
            "(rows, delivered, failed, offsets, rate, guarantees). Without "
            f"--bootstrap-servers (or ${BOOTSTRAP_ENV}) an embedded local broker is "
            "started for the import. Exit status 0 only if every row was delivered."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="input files (format from extension)")
    p.add_argument("-t", "--topic", required=True, help="topic to write to")
    p.add_argument(
        "-b",
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help=f"Kafka brokers (default ${BOOTSTRAP_ENV}; else an embedded local broker)",
    )
    p.add_argument(
        "--preset",
        default="ordered",
        metavar="P",
        help="config preset(s), joined with '+' (default: ordered; 'none' for none)",
    )
    p.add_argument("--format", choices=["csv", "jsonl", "parquet", "lines"], help="input format")
    p.add_argument("--key-field", metavar="F", help="field that becomes the message key")
    p.add_argument(
        "--value-field", metavar="F", help="field that becomes the value (default: record as JSON)"
    )
    p.add_argument(
        "--partition-field", metavar="F", help="integer field with the partition to write to"
    )
    p.add_argument(
        "--header-fields", metavar="F,G", help="comma-separated fields sent as message headers"
    )
    p.add_argument(
        "-X",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer property (repeatable)",
    )
    p.add_argument(
        "-F", "--config-file", metavar="FILE", help="producer properties file (or .json)"
    )
    p.add_argument(
        "--dead-letter", metavar="FILE", help="write rows not delivered, with the error, as JSONL"
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
    p.set_defaults(handler=_run_import)


def _ensure_topic(bootstrap: str, config: Mapping[str, Any], topic: str, partitions: int) -> bool:
    """Create ``topic`` on an external cluster if it is missing; True if it was created."""
    from confluent_kafka.admin import AdminClient, NewTopic

    passthrough = {
        k: v
        for k, v in config.items()
        if k.startswith(("security.", "sasl.", "ssl.")) and isinstance(v, (str, int))
    }
    admin = AdminClient({**passthrough, "bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=15)
    if topic in md.topics and md.topics[topic].error is None:
        return False
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic]
    fut.result(30)
    return True


def _run_import(args: argparse.Namespace) -> int:
    import os

    from .importer import (
        Fields,
        ImportInputError,
        import_files,
        open_producer,
        plan_files,
        write_sample_csv,
    )

    config: dict[str, Any] = load_config_file(args.config_file) if args.config_file else {}
    config.update(parse_assignments(args.overrides))
    bootstrap = (
        args.bootstrap_servers
        or config.get("bootstrap.servers")
        or os.environ.get(BOOTSTRAP_ENV)
        or None
    )
    preset = None if args.preset in ("", "none") else args.preset
    headers = tuple(h.strip() for h in args.header_fields.split(",")) if args.header_fields else ()
    if any(not h for h in headers):
        raise UsageError(f"--header-fields {args.header_fields!r} has an empty field name")
    fields = Fields(
        key=args.key_field,
        value=args.value_field,
        partition=args.partition_field,
        headers=headers,
    )
    if args.partitions is not None and args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, not {args.partitions}")
    if args.keep_broker and bootstrap:
        raise UsageError("--keep-broker only applies to the embedded broker")
    files = list(args.files)
    fmt = args.format
    sample: Optional[str] = None
    if args.sample is not None:
        if files:
            raise UsageError("--sample generates its own input; do not also give FILEs")
        if args.sample < 1:
            raise UsageError(f"--sample needs a positive number of rows, not {args.sample}")
        if fields.key is None:
            fields = Fields(
                key="user", value=fields.value, partition=fields.partition, headers=fields.headers
            )
        fmt = "csv"
    elif not files:
        raise UsageError("give FILE(s) to import, or --sample N for generated sample data")
    try:
        from .explain import explain

        guarantees = explain(config, preset=preset)
        if guarantees.refused:
            raise UsageError(guarantees.summary())
    except (ValueError, TypeError) as e:
        from .config import redact

        raise UsageError(redact(str(e), config)) from None
    check_config(config, preset)  # a bad -X fails before a broker starts

    broker = None
    producer = None
    try:
        if args.sample is None:
            try:
                plan_files(files, fmt, fields)  # bad input fails before a broker starts
            except ImportInputError as e:
                raise UsageError(str(e)) from None
        if bootstrap is None:
            from .broker import LocalBroker

            broker = LocalBroker()
            broker.start()
            partitions = args.partitions or 3
            broker.create_topic(args.topic, partitions=partitions)
            bootstrap = broker.bootstrap_servers
            print(
                f"cykafka import: embedded broker (tansu, in-memory) listening on {bootstrap}; "
                f"topic {args.topic!r} created with {partitions} partitions",
                file=sys.stderr,
            )
        elif args.partitions is not None:
            if _ensure_topic(bootstrap, config, args.topic, args.partitions):
                print(
                    f"cykafka import: created topic {args.topic!r} with {args.partitions} "
                    f"partitions",
                    file=sys.stderr,
                )
        config["bootstrap.servers"] = bootstrap
        # The producer starts now, so its set-up (connection, metadata and, when
        # idempotent, the producer id: up to a second on the embedded broker) overlaps
        # generating the sample.
        producer = open_producer(config, preset)
        if args.sample is not None:
            print(f"cykafka import: generating {args.sample:,} sample orders...", file=sys.stderr)
            sample = write_sample_csv(args.sample)
            files = [sample]
        try:
            result = import_files(
                files,
                args.topic,
                config,
                preset=preset,
                fmt=fmt,
                fields=fields,
                dead_letter=args.dead_letter,
                progress=False if args.no_progress else None,
                inspect=args.inspect,
                producer=producer,
            )
        except ImportInputError as e:
            raise UsageError(str(e)) from None
        if sample is not None:
            result.files = [f"sample of {args.sample:,} orders"]
        for line in result.summary_lines():
            print(line)
        if broker is not None:
            if args.keep_broker:
                print(
                    f"Embedded broker still running: bootstrap.servers={bootstrap} "
                    f"(pid {broker.pid}). Press Ctrl-C to stop it.",
                    flush=True,
                )
                _wait_for_ctrl_c(broker)
            else:
                print(
                    f"Embedded broker on {bootstrap} stopped (its data was in memory); use "
                    f"--keep-broker to read the topic afterwards, or run `cykafka broker` and "
                    f"pass --bootstrap-servers."
                )
        if result.interrupted:
            return 130
        return 0 if result.ok else 1
    finally:
        if producer is not None:
            producer.close(10.0)
        if broker is not None:
            broker.stop()
        if sample is not None:
            os.unlink(sample)


def _wait_for_ctrl_c(broker: Any) -> None:
    """Block until Ctrl-C or SIGTERM (or the broker exits)."""
    import signal
    import threading

    stop = threading.Event()
    restore = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            restore.append((sig, signal.signal(sig, lambda *_: stop.set())))
    try:
        while not stop.wait(0.25):
            if not broker.is_running():
                print("cykafka import: the embedded broker exited", file=sys.stderr)
                return
        print("stopping broker...", file=sys.stderr)
    finally:
        for sig, handler in restore:
            signal.signal(sig, handler)


# --------------------------------------------------------------------------- broker


@subcommand("broker")
def _setup_broker(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "broker",
        help="run the embedded local Kafka-compatible broker in the foreground",
        description=(
            "Run the bundled Tansu broker (Kafka protocol, in-memory by default) until "
            "Ctrl-C, for other tools to use. Data is gone when it stops."
        ),
    )
    p.add_argument("--port", type=int, default=9092, help="TCP port (default 9092; 0 = any free)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument(
        "--topic",
        dest="topics",
        action="append",
        default=[],
        metavar="T",
        help="create this topic at start (repeatable)",
    )
    p.add_argument("--partitions", type=int, default=1, metavar="N", help="for --topic (default 1)")
    p.add_argument("--storage", default="memory://tansu/", help="tansu storage engine URL")
    p.add_argument("--log-file", metavar="FILE", help="broker log (default: a temp file)")
    p.set_defaults(handler=_run_broker)


def _run_broker(args: argparse.Namespace) -> int:
    from .broker import serve_forever

    if args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, not {args.partitions}")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, not {args.port}")
    return serve_forever(
        args.port or None,
        args.host,
        storage=args.storage,
        log_file=args.log_file,
        topics=args.topics,
        partitions=args.partitions,
    )


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cykafka", description="cykafka: a fast Kafka producer for Python."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for setup in SUBCOMMANDS.values():
        setup(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of the ``cykafka`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except UsageError as e:
        print(f"cykafka {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
