"""``cykafka import`` once its arguments are checked: the broker (embedded, or the
cluster checked before any input is read), the producer, the import and its summary."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from .options import UsageError

if TYPE_CHECKING:
    from ..importer import ExactlyOnce, Fields, ReadOptions
    from ..presets import PresetSpec

__all__ = ["run_import"]


def _load_arrow() -> None:
    """pyarrow and NumPy take about 0.1 s to load, which this thread spends while the
    cluster check waits on the network.  A failure here is left to the reader's own
    import to report."""
    try:
        import cykafka._arrow  # noqa: F401
    except Exception:
        pass


def _uses_arrow(files: list[str], fmt: Optional[str], options: ReadOptions) -> bool:
    """Whether some input's reader loads pyarrow (all but plain lines do); True when
    a format is unknown (the import itself says so)."""
    from ..importer.readers import READERS, detect_format

    try:
        return any(READERS[fmt or detect_format(f)].uses_arrow(options) for f in files)
    except Exception:
        return True


def run_import(
    args: argparse.Namespace,
    config: dict[str, Any],
    bootstrap: Optional[str],
    preset: PresetSpec,
    fields: Fields,
    options: ReadOptions,
    fmt: Optional[str],
    files: list[str],
    static_headers: list[tuple[str, bytes]],
    exactly_once: Optional[ExactlyOnce] = None,
) -> int:
    if args.sample is not None or _uses_arrow(files, fmt, options):
        threading.Thread(target=_load_arrow, name="cykafka-load-arrow").start()
    from ..importer import ImportInputError, import_files, open_producer
    from ..importer.cluster import ClusterError, check_partition, prepare_topic
    from ..importer.summary import plural

    broker = None
    producer = None
    result = None
    sample: Optional[str] = None
    topic_partitions: Optional[int] = None
    phases: dict[str, float] = {}
    startup = _process_age()
    if startup is not None:
        phases["startup"] = startup
    t = time.monotonic()
    try:
        if bootstrap is None:
            from ..broker import LocalBroker

            partitions = args.partitions or 3
            try:
                check_partition(args.topic, args.partition, partitions)
            except ClusterError as e:
                raise UsageError(str(e)) from None
            broker = LocalBroker()
            broker.start()
            broker.create_topic(args.topic, partitions=partitions)
            topic_partitions = partitions
            bootstrap = broker.bootstrap_servers
            print(
                f"cykafka import: embedded broker (tansu, in-memory) listening on {bootstrap}; "
                f"topic {args.topic!r} created with {partitions} "
                f"{plural(partitions, 'partition')}",
                file=sys.stderr,
            )
        else:
            try:
                # A plain rerun into a topic with records duplicates them: say so.
                found = prepare_topic(
                    bootstrap,
                    config,
                    args.topic,
                    args.partitions,
                    partition=args.partition,
                    count_records=exactly_once is None,
                )
                topic_partitions = found.partitions
                if found.created:
                    print(
                        f"cykafka import: created topic {args.topic!r} with {args.partitions} "
                        f"{plural(args.partitions or 0, 'partition')}",
                        file=sys.stderr,
                    )
                elif found.records and not args.skip_rows:  # (--skip-rows: resuming)
                    print(
                        f"cykafka import: note: topic {args.topic!r} already holds "
                        "records; if an earlier run of this import delivered "
                        "some of them, this run sends them again (--exactly-once resumes "
                        "without duplicates)",
                        file=sys.stderr,
                    )
            except ClusterError as e:
                if e.usage:
                    raise UsageError(str(e)) from None
                print(f"cykafka import: error: {e}", file=sys.stderr)
                return 1
        config["bootstrap.servers"] = bootstrap
        phases["cluster"] = time.monotonic() - t
        t = time.monotonic()
        # The producer starts now, so its set-up (connection, metadata and, when
        # idempotent, the producer id) overlaps generating the sample.
        if exactly_once is None:  # (an exactly-once import makes transactional producers)
            producer = open_producer(config, preset, topic_partitions)
            phases["producer"] = time.monotonic() - t
        if args.sample is not None:
            print(f"cykafka import: generating {args.sample:,} sample orders...", file=sys.stderr)
            from ..importer import write_sample_csv

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
                options=options,
                dead_letter=args.dead_letter,
                progress=False if args.no_progress else None,
                inspect=args.inspect,
                producer=producer,
                partition=args.partition,
                rate=args.rate,
                static_headers=static_headers,
                exactly_once=exactly_once,
                topic_partitions=topic_partitions,
                skip_rows=args.skip_rows,
                replace_stuck=True,
            )
        except ImportInputError as e:
            raise UsageError(str(e)) from None
        if sample is not None:
            result.files = [f"sample of {args.sample:,} orders"]
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
