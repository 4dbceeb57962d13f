"""Helpers shared by the ETL benchmarks (topic creation, a broker when none is given)."""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

# The installed package is what is measured (./run bench installs it); src/ only for a
# checkout without an install, which then needs the extension built in place.  Putting
# src/ first unconditionally broke a fresh clone, where src/ has no compiled _native.
_SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("cykafka") is None and _SRC.is_dir():
    sys.path.insert(0, str(_SRC))

__all__ = [
    "bootstrap_or_local",
    "fresh_topic",
    "listener_pid",
    "process_cpu_seconds",
    "wheel_librdkafka",
]


def fresh_topic(bootstrap_servers: str, prefix: str, partitions: int = 3) -> str:
    """Create a new uniquely named topic and wait until it has leaders."""
    from confluent_kafka.admin import AdminClient

    from cykafka.cluster.admin import ensure_topic

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    ensure_topic(AdminClient({"bootstrap.servers": bootstrap_servers}), name, partitions)
    return name


@contextlib.contextmanager
def bootstrap_or_local(argv: list[str]) -> Iterator[str]:
    """argv[0], else $CYKAFKA_BOOTSTRAP_SERVERS, else a LocalBroker for the run."""
    given = (argv[0] if argv else None) or os.environ.get("CYKAFKA_BOOTSTRAP_SERVERS")
    if given:
        yield given
        return
    from cykafka.broker import LocalBroker

    with LocalBroker() as broker:
        yield broker.bootstrap_servers


def wheel_librdkafka() -> str:
    """The librdkafka file inside the confluent-kafka wheel (what cykafka links)."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench: confluent-kafka is not importable")
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    libs = glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))
    if len(libs) != 1:
        raise SystemExit(f"bench: expected one librdkafka in confluent_kafka.libs, found {libs}")
    return libs[0]


def listener_pid(bootstrap_servers: str) -> Optional[int]:
    """The pid of the process listening on the first bootstrap address's port (this
    machine only), found through /proc: the broker whose CPU a comparison counts, be it a
    node we started or one given on the command line.  None when not found."""
    port = int(bootstrap_servers.split(",")[0].rsplit(":", 1)[1])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for row in f.read().splitlines()[1:]:
                cols = row.split()
                # local address "ADDR:PORT" in hex, state 0A is LISTEN
                if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] == "0A":
                    inodes.add(f"socket:[{cols[9]}]")
    for fd_dir in glob.glob("/proc/[0-9]*/fd"):
        with contextlib.suppress(OSError):
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                        return int(fd_dir.split("/")[2])
    return None


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all its threads) from the kernel's own
    accounting (/proc/PID/stat, utime and stime in clock ticks); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the command name (field 2) may hold spaces: count from its closing bracket
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
