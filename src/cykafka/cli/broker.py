"""``cykafka broker``: the embedded local broker in the foreground."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterable
from typing import Any, TextIO

from .options import UsageError

__all__ = ["NAME", "serve_forever", "setup"]

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
    p.add_argument(
        "--port",
        type=int,
        help="TCP port (default 9092; 0 = any free); with --kafka the first node's client "
        "port (default: any free)",
    )
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
    p.add_argument(
        "--storage", help="tansu storage engine URL (default memory://tansu/; not with --kafka)"
    )
    p.add_argument(
        "--log-file",
        metavar="FILE",
        help="broker log (default: a temp file; with --kafka each node's log is in its data dir)",
    )
    p.add_argument(
        "--kafka",
        action="store_true",
        help="run Apache Kafka (KRaft, from Maven Central's jars; needs Java 17 and Maven) "
        "instead of the embedded broker",
    )
    p.add_argument(
        "--nodes", type=int, default=1, metavar="N", help="with --kafka: nodes (default 1)"
    )
    p.add_argument(
        "--data-dir", metavar="DIR", help="with --kafka: keep the nodes' data here (default: temp)"
    )
    p.set_defaults(handler=_run_broker)


def _run_broker(args: argparse.Namespace) -> int:
    if args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, not {args.partitions}")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, not {args.port}")
    if args.kafka:
        for flag, given in (("--storage", args.storage), ("--log-file", args.log_file)):
            if given is not None:
                raise UsageError(
                    f"{flag} applies to the embedded broker; Apache Kafka keeps each node's "
                    "data and log in --data-dir"
                )
        return _run_kafka(args)
    if args.nodes != 1 or args.data_dir:
        raise UsageError("--nodes and --data-dir go with --kafka (the embedded broker is one node)")
    port = 9092 if args.port is None else args.port
    return serve_forever(
        port or None,
        args.host,
        storage=args.storage or "memory://tansu/",
        log_file=args.log_file,
        topics=args.topics,
        partitions=args.partitions,
    )


def _run_kafka(args: argparse.Namespace) -> int:
    from ..launchers.kafka import KafkaCluster, KafkaClusterError

    if args.nodes < 1:
        raise UsageError(f"--nodes must be >= 1, not {args.nodes}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    cluster = KafkaCluster(
        nodes=args.nodes, data_dir=args.data_dir, host=args.host, port=args.port or None
    )
    try:
        try:
            cluster.start()
        except (KafkaClusterError, OSError) as exc:
            print(f"cykafka broker: {exc}", file=sys.stderr)
            return 1
        for name in args.topics:
            cluster.create_topic(name, partitions=args.partitions)
        print(
            f"Apache Kafka {cluster.version} ({args.nodes} node{'s' if args.nodes != 1 else ''}, "
            f"KRaft) listening on {cluster.bootstrap_servers}",
            flush=True,
        )
        print(f"  bootstrap.servers={cluster.bootstrap_servers}")
        print(f"  data and logs: {cluster.data_dir}")
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(0.5):
            dead = [n.node_id for n in cluster.nodes if not n.is_running()]
            if dead:
                print(
                    f"cykafka broker: Kafka node(s) {dead} exited; see {cluster.data_dir}",
                    file=sys.stderr,
                )
                return 1
        print("stopping Apache Kafka...", flush=True)
        return 0
    finally:
        cluster.stop()


def serve_forever(
    port: int | None = 9092,
    host: str = "127.0.0.1",
    *,
    storage: str = "memory://tansu/",
    extra_args: Iterable[str] = (),
    log_file: str | os.PathLike[str] | None = None,
    topics: Iterable[str] = (),
    partitions: int = 1,
    out: TextIO | None = None,
) -> int:
    """Run a broker in the foreground until Ctrl-C or SIGTERM; return an exit code.

    Prints where it listens (and the log path), optionally pre-creates ``topics``, and
    returns 0 on a clean stop, 1 if the broker dies or fails to start.
    """
    from ..launchers.tansu import BrokerStartError, LocalBroker

    out = out if out is not None else sys.stdout
    stop = threading.Event()
    restore: list[tuple[int, Any]] = []
    if threading.current_thread() is threading.main_thread():
        # SIGTERM → clean shutdown like Ctrl-C; signal handlers only exist in the main thread.
        for sig in (signal.SIGINT, signal.SIGTERM):
            restore.append((sig, signal.signal(sig, lambda *_: stop.set())))
    broker = LocalBroker(
        port=port, host=host, storage=storage, extra_args=tuple(extra_args), log_file=log_file
    )
    try:
        try:
            broker.start()
        except (BrokerStartError, FileNotFoundError) as exc:
            print(f"cykafka broker: {exc}", file=sys.stderr)
            return 1
        for name in topics:
            broker.create_topic(name, partitions=partitions)
        print(
            f"Kafka-compatible broker (tansu) listening on {broker.bootstrap_servers} "
            f"(pid {broker.pid}, storage {storage})",
            file=out,
        )
        print(f"  bootstrap.servers={broker.bootstrap_servers}", file=out)
        print(f"  log: {broker.log_path}", file=out)
        print("Press Ctrl-C to stop.", file=out, flush=True)
        while not stop.wait(0.25):
            if not broker.is_running():
                print(
                    f"cykafka broker: tansu exited unexpectedly\n{broker.log_tail()}",
                    file=sys.stderr,
                )
                return 1
        print("stopping broker...", file=out, flush=True)
        return 0
    finally:
        broker.stop()
        for signum, handler in restore:
            signal.signal(signum, handler)
