"""What the tests of a cluster that changes under a load share: a client quota set
and removed with Kafka's own ``kafka-configs`` (the Java AdminClient's
``alterClientQuotas``: confluent_kafka's AdminClient has no client-quota call), and
an input file of keyed rows."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Optional

from cykafka.launchers.jvm import java_executable


def set_client_quota(cluster: Any, client_id: str, producer_byte_rate: Optional[int]) -> None:
    """Give ``client_id`` a ``producer_byte_rate`` quota on ``cluster`` (None: remove
    it), as an operator would with ``kafka-configs --alter --entity-type clients``."""
    change = (
        ["--add-config", f"producer_byte_rate={producer_byte_rate}"]
        if producer_byte_rate is not None
        else ["--delete-config", "producer_byte_rate"]
    )
    proc = subprocess.run(
        [
            java_executable(),
            "-cp",
            cluster.classpath(),
            "org.apache.kafka.tools.ConfigCommand",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            client_id,
            *change,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def keyed_rows(path: Path, n: int, keys: int, width: int = 0) -> Path:
    """``n`` JSON lines ``{"k": "key-<i % keys>", "i": i}`` (padded to ``width``
    characters with a ``pad`` field)."""
    with path.open("w") as f:
        for i in range(n):
            pad = "x" * max(0, width - 30)
            f.write(f'{{"k": "key-{i % keys}", "i": {i}, "pad": "{pad}"}}\n')
    return path


def add_partitions(cluster: Any, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions with AdminClient ``create_partitions``, as
    an operator would, and wait until the cluster reports them."""
    from confluent_kafka.admin import NewPartitions

    fut = cluster.admin.create_partitions([NewPartitions(topic, total)])[topic]
    fut.result(timeout=60)
    cluster.wait_for(
        lambda: len(cluster.partitions(topic)) == total, 60, f"{topic!r} to have {total} partitions"
    )


def keys_split(records: dict[int, list[Any]]) -> dict[bytes, set[int]]:
    """The keys read back from more than one partition, with their partitions."""
    where: dict[bytes, set[int]] = {}
    for part, recs in records.items():
        for r in recs:
            where.setdefault(r.key, set()).add(part)
    return {k: ps for k, ps in where.items() if len(ps) > 1}


def librdkafka_partitions(stats_json: str, topic: str) -> int:
    """How many partitions of ``topic`` a librdkafka statistics emit knows (the
    unassigned pseudo-partition -1 left out)."""
    import json

    parts = json.loads(stats_json).get("topics", {}).get(topic, {}).get("partitions", {})
    return sum(1 for p in parts if p != "-1")
