"""``cykafka import`` once its arguments are checked: the broker (embedded, or the
cluster checked before any input is read), the producer, the import and its summary."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Optional

from .options import UsageError

if TYPE_CHECKING:
    from ..broker import LocalBroker
    from ..importer import ImportJob

__all__ = ["run_import"]


def _load_arrow() -> None:
    """pyarrow and NumPy take about 0.1 s to load, which this thread spends while the
    cluster check waits on the network.  A failure here is left to the reader's own
    import to report."""
    try:
        import cykafka._arrow  # noqa: F401
    except Exception:
        pass


def _uses_arrow(job: ImportJob) -> bool:
    """Whether some input's reader loads pyarrow (all but plain lines do)."""
    from ..inputs.readers import READERS

    return any(READERS[f].uses_arrow(job.options) for _, f in job.plan)


def run_import(
    job: ImportJob,
    args: argparse.Namespace,
    *,
    sample_rows: Optional[int] = None,
    sample_s: Optional[float] = None,
) -> int:
    """Run ``job`` on its cluster (or an embedded broker), printing the summary;
    ``args``: how to run it (embedded broker, progress, timings); returns the exit
    status.  ``sample_rows``: the job imports that many generated sample orders,
    which took ``sample_s`` seconds to write (a phase of its own in ``--timings``)."""
    if _uses_arrow(job):
        threading.Thread(target=_load_arrow, name="cykafka-load-arrow").start()
    from ..importer import ImportInputError, import_files
    from ..importer.topic_checks import TopicCheckError, check_partition, prepare_topic
    from ..importer.summary import plural
    from ..producer import Producer

    broker = None
    producer = None
    result = None
    topic = job.topic
    topic_partitions: Optional[int] = None
    bootstrap = job.bootstrap_servers
    phases: dict[str, float] = {}
    startup = _process_age()  # (the checks and the job's decisions included)
    if startup is not None:
        phases["startup"] = startup - (sample_s or 0.0)
    if sample_s is not None:
        phases["sample"] = sample_s
    t = time.monotonic()
    try:
        if bootstrap is None:
            from ..broker import LocalBroker

            partitions = args.partitions or 3
            try:
                check_partition(topic, job.partition, partitions)
            except TopicCheckError as e:
                raise UsageError(str(e)) from None
            broker = LocalBroker()
            broker.start()
            broker.create_topic(topic, partitions=partitions)
            topic_partitions = partitions
            bootstrap = broker.bootstrap_servers
            print(
                f"cykafka import: embedded broker (tansu, in-memory) listening on {bootstrap}; "
                f"topic {topic!r} created with {partitions} "
                f"{plural(partitions, 'partition')}",
                file=sys.stderr,
            )
        else:
            try:
                # A plain rerun into a topic with records duplicates them: say so.
                found = prepare_topic(
                    bootstrap,
                    job.config,
                    topic,
                    args.partitions,
                    partition=job.partition,
                    count_records=job.exactly_once is None,
                )
                topic_partitions = found.partitions
                if found.created:
                    print(
                        f"cykafka import: created topic {topic!r} with {args.partitions} "
                        f"{plural(args.partitions or 0, 'partition')}",
                        file=sys.stderr,
                    )
                elif found.records and not job.skip_rows:  # (--skip-rows: resuming)
                    print(
                        f"cykafka import: note: topic {topic!r} already holds "
                        "records; if an earlier run of this import delivered "
                        "some of them, this run sends them again (--exactly-once resumes "
                        "without duplicates)",
                        file=sys.stderr,
                    )
            except TopicCheckError as e:
                if e.usage:
                    raise UsageError(str(e)) from None
                print(f"cykafka import: error: {e}", file=sys.stderr)
                return 1
        job = job.on_cluster(bootstrap, topic_partitions)
        phases["cluster"] = time.monotonic() - t
        t = time.monotonic()
        if job.exactly_once is None:  # (an exactly-once import makes transactional producers)
            producer = Producer(job.resolved)
            phases["producer"] = time.monotonic() - t
        try:
            result = import_files(
                job,
                producer=producer,
                progress=False if args.no_progress else None,
                inspect=args.inspect,
                replace_stuck=True,
            )
        except ImportInputError as e:
            raise UsageError(str(e)) from None
        if sample_rows is not None:
            result.files = [f"sample of {sample_rows:,} orders"]
        result.command = ["cykafka", *getattr(args, "argv", [])] or None
        result.phases = {**phases, **result.phases}
        for line in result.summary_lines(timings=args.timings):
            print(line, flush=True)
        if broker is not None and not result.interrupted:
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
        return result.exit_status
    finally:
        if producer is not None:
            # The import drained the queue, or (Ctrl-C) already waited: do not wait again.
            producer.close(0.5 if result is None or result.interrupted else 10.0)
        if broker is not None:
            broker.stop()


def _wait_for_ctrl_c(broker: LocalBroker) -> None:
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


def _process_age() -> Optional[float]:
    """Seconds since this process started (the interpreter's start-up and imports,
    when called first thing), from Linux's /proc; None elsewhere.  /proc gives the
    start in clock ticks since boot (proc(5), field 22 of /proc/self/stat), the
    same clock as CLOCK_BOOTTIME, so the resolution is one tick (10 ms)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        start_ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return age if 0.0 <= age < 3600.0 else None
