"""``cykafka registry``: a Confluent-compatible Schema Registry in the foreground."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from .options import UsageError

__all__ = ["NAME", "setup"]

NAME = "registry"


def setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "registry",
        help="run a Confluent-compatible Schema Registry (Apicurio) in the foreground",
        description=(
            "Run Apicurio Registry (from Maven Central, fetched once; needs Java 21+ and "
            "Maven) with in-memory storage on loopback until Ctrl-C, serving Confluent's "
            "Schema Registry API for --schema-registry and SchemaRegistryClient. Schemas "
            "are gone when it stops."
        ),
    )
    p.add_argument("--port", type=int, default=8081, help="TCP port (default 8081; 0 = any free)")
    p.add_argument(
        "--compatibility",
        default="BACKWARD",
        metavar="LEVEL",
        help="global compatibility level (default BACKWARD, as Confluent's)",
    )
    p.add_argument("--log-file", metavar="FILE", help="registry log (default: a temp file)")
    p.set_defaults(handler=_run_registry)


def _run_registry(args: argparse.Namespace) -> int:
    from ..launchers.registry import RegistryError, SchemaRegistry

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, not {args.port}")
    try:
        registry = SchemaRegistry(
            args.port or None, compatibility=args.compatibility, log_file=args.log_file
        )
    except ValueError as exc:
        raise UsageError(f"--compatibility: {exc}") from None
    stop = threading.Event()
    restore: list[tuple[int, Any]] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        restore.append((sig, signal.signal(sig, lambda *_: stop.set())))
    try:
        print("starting Apicurio Registry (the first run fetches it with Maven)...", flush=True)
        try:
            registry.start()
        except RegistryError as exc:
            print(f"cykafka registry: {exc}", file=sys.stderr)
            return 1
        print(
            f"Schema Registry (Apicurio {registry.version}, in memory, compatibility "
            f"{registry.compatibility}) listening on {registry.url} (pid {registry.pid})"
        )
        print(f"  --schema-registry {registry.url}")
        print(f"  log: {registry.log_path}")
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(0.5):
            if not registry.is_running():
                print(
                    f"cykafka registry: Apicurio exited unexpectedly\n{registry.log_tail()}",
                    file=sys.stderr,
                )
                return 1
        print("stopping the registry...", flush=True)
        return 0
    finally:
        registry.stop()
        for signum, handler in restore:
            signal.signal(signum, handler)
