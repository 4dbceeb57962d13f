"""``cykafka broker``: the embedded local broker in the foreground."""

from __future__ import annotations

import argparse

from .options import UsageError

__all__ = ["NAME", "setup"]

NAME = "broker"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    from ..broker import serve_forever

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
