"""The one runner of an import, from an :class:`~cykafka.importer.ImportJob` to its
:class:`~cykafka.importer.ImportResult`: the broker (an embedded one when the job names
none), the topic checks before any input is read, the one place a producer is made
(and a stuck one replaced), then one of the two loops, :mod:`.plain` or
:mod:`.exactly_once`.  ``cykafka import`` and a Python caller run the same.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional, TextIO, Union

from ..inputs.model import ImportInputError, Problem
from ..inspector import inspector_of
from .bar import PlainBar, RichBar, isatty
from .deadletter import DeadLetter
from .signals import StopSignals
from .sink import RIGHTS_REFUSED, Sink
from .summary import SHOW_PROBLEMS, STANDALONE_BOOTSTRAP, ImportResult, plural

if TYPE_CHECKING:
    from rich.console import Console

    from ..launchers.tansu import LocalBroker
    from ..producer import Producer
    from .job import ImportJob

__all__ = ["import_files"]

#: After a stop signal, how long to wait in all for the delivery reports of queued
#: batches (and then for the producer to close): the import stops within 5 s.
INTERRUPT_WAIT_S = 2.0
#: The partitions of the embedded broker's topic unless the job says.
EMBEDDED_PARTITIONS = 3


def import_files(
    job: ImportJob,
    *,
    producer: Optional[Producer] = None,
    sink: Optional[Sink] = None,
    progress: Optional[bool] = None,
    inspect: bool = False,
    log: Optional[TextIO] = None,
    console: Optional[Console] = None,
    replace_stuck: bool = False,
    keep_broker: bool = False,
    notify: Optional[Callable[[str], None]] = None,
    on_result: Optional[Callable[[ImportResult, list[str]], None]] = None,
) -> ImportResult:
    """Run ``job`` (an :class:`~cykafka.importer.ImportJob`: what to import, where, and
    how, decided once); return the :class:`ImportResult`.

    Before any input is read: without brokers in the job (and no ``producer``) an
    embedded broker is started for the import and stopped after it (``keep_broker``:
    once the result is out, kept until Ctrl-C); else the cluster must answer and the
    topic exist (or be created with the job's ``partitions``), and ``-p`` name one of
    its partitions: :class:`~cykafka.importer.topic_checks.TopicCheckError` otherwise
    (:class:`~cykafka.cluster.reach.ClusterUnreachable` when no broker answers within
    the job's ``connect_timeout``).

    ``producer``: an open :class:`cykafka.Producer` to use (and leave open, except after
    Ctrl-C: then it is closed, which purges what it still holds so that every row gets
    its fate) instead of a new one made from the job's configuration.  ``sink``: a
    :class:`Sink` (subclass) to send through, e.g. one that records progress as batches
    are delivered.  An exactly-once job makes its own transactional producers (no
    ``producer``).  ``progress``: a bar (True), log lines (False) or a bar only when
    ``log`` is a terminal (None); ``inspect``: also show the producer's accumulator view.

    A producer whose rows time out (a broker stall longer than ``message.timeout.ms``)
    is closed (what it still holds is reported not sent, or unknown when in flight)
    and replaced by a new one made from the job's configuration: the import's own
    producer always, a ``producer`` passed in when ``replace_stuck`` (the import then
    closes the replacement).

    ``notify(line)``: what the runner says about the run as it goes (the broker, the
    topic; default: a line to ``log``).  ``on_result(result, lines)``: called with the
    result while an embedded broker still runs, with what to say about the broker after
    the summary.
    """
    if job.exactly_once is not None and (producer is not None or sink is not None):
        raise ValueError(
            "an exactly-once job makes its own transactional producers, each with its own "
            "sink: pass no producer or sink"
        )
    log = log if log is not None else sys.stderr
    say = notify if notify is not None else (lambda line: print(line, file=log))
    t = time.monotonic()
    with contextlib.ExitStack() as stack:
        broker = None
        if job.bootstrap_servers is None and producer is None:
            broker = _embedded_broker(job, say)
            stack.callback(broker.stop)
            job = job.on_cluster(broker.bootstrap_servers, job.partitions or EMBEDDED_PARTITIONS)
        elif job.bootstrap_servers is not None:
            job = _check_topic(job, say)
        run = _Run(job, producer, sink, log, replace_stuck, cluster_s=time.monotonic() - t)
        try:
            run.start(progress, inspect, console)
            run.run()
        finally:
            run.close()  # the producer closed or drained, the dead letters written
        result = run.result
        result.embedded_broker = broker is not None
        if broker is not None and not result.topic_partitions:
            # The embedded broker's topic, as this run made it: what a broker of one's own
            # is advised to be given (ImportResult.broker_command).
            result.topic_partitions = job.topic_partitions or 0
        lines = (
            _broker_lines(broker, keep_broker, result.broker_command())
            if broker and not result.interrupted
            else []
        )
        if on_result is not None:
            on_result(result, lines)  # while an embedded broker still runs
        if broker is not None and keep_broker and not result.interrupted:
            _wait_for_stop(broker, say)
    return result


def _embedded_broker(job: ImportJob, say: Callable[[str], None]) -> LocalBroker:
    """An in-memory Tansu broker with the job's topic, started for this import."""
    from ..launchers.tansu import LocalBroker
    from .topic_checks import check_partition

    partitions = job.partitions or EMBEDDED_PARTITIONS
    check_partition(job.topic, job.partition, partitions)  # before anything starts
    broker = LocalBroker()
    broker.start()
    try:
        broker.create_topic(job.topic, partitions=partitions)
    except BaseException:
        broker.stop()
        raise
    say(
        f"cykafka import: embedded broker (tansu, in-memory) listening on "
        f"{broker.bootstrap_servers}; topic {job.topic!r} created with {partitions} "
        f"{plural(partitions, 'partition')}"
    )
    return broker


def _check_topic(job: ImportJob, say: Callable[[str], None]) -> ImportJob:
    """The cluster answers and the topic exists (created when the job says how): the
    job on it, with its partition count and batches sized for its max.message.bytes."""
    from ..config import batch_sizing
    from .topic_checks import prepare_topic

    assert job.bootstrap_servers is not None
    found = prepare_topic(
        job.bootstrap_servers,
        job.config,
        job.topic,
        job.partitions,
        partition=job.partition,
        timeout=job.connect_timeout,
        # A plain rerun into a topic with records duplicates them: say so.
        count_records=job.exactly_once is None,
    )
    if found.created:
        count = job.partitions or 0
        say(
            f"cykafka import: created topic {job.topic!r} with {count} {plural(count, 'partition')}"
        )
    elif found.records and not job.skip_rows:  # (--skip-rows: resuming)
        say(
            f"cykafka import: note: topic {job.topic!r} already holds records; if an "
            "earlier run of this import delivered some of them, this run sends them again "
            "(--exactly-once resumes without duplicates)"
        )
    on = job.on_cluster(job.bootstrap_servers, found.partitions, found.max_message_bytes)
    sized = batch_sizing(on.resolved)
    if sized is not None and sized != batch_sizing(job.resolved):
        say(f"cykafka import: {sized}")
    return on


def _broker_lines(broker: LocalBroker, keep: bool, broker_command: str) -> list[str]:
    bootstrap = broker.bootstrap_servers
    if keep:
        return [
            f"Embedded broker still running: bootstrap.servers={bootstrap} (pid {broker.pid}). "
            "Press Ctrl-C to stop it."
        ]
    # The broker of one's own is given the topic: an import into a cluster creates none
    # unless told to, and a bare `cykafka broker` left the next run refused.
    return [
        f"Embedded broker on {bootstrap} stopped (its data was in memory); use --keep-broker "
        f"to read the topic afterwards, or run `{broker_command}` and pass "
        f"--bootstrap-servers {STANDALONE_BOOTSTRAP}."
    ]


def _wait_for_stop(broker: LocalBroker, say: Callable[[str], None]) -> None:
    """Block until Ctrl-C or SIGTERM (or the broker exits)."""
    import signal

    stop = threading.Event()
    restore = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            restore.append((sig, signal.signal(sig, lambda *_: stop.set())))
    try:
        while not stop.wait(0.25):
            if not broker.is_running():
                say("cykafka import: the embedded broker exited")
                return
        say("stopping broker...")
    finally:
        for sig, handler in restore:
            signal.signal(sig, handler)


class _Run:
    """One import's moving parts: its result, dead letters, bar, stop signals and the
    producer (the one place it is made)."""

    def __init__(
        self,
        job: ImportJob,
        producer: Optional[Producer],
        sink: Optional[Sink],
        log: TextIO,
        replace_stuck: bool,
        cluster_s: float,
    ) -> None:
        plan, eo = job.plan, job.exactly_once
        self.job, self.log = job, log
        self.result = ImportResult(
            topic=job.topic,
            files=[s.name for s, _ in plan],
            fmt=job.fmt,
            bootstrap_servers=job.bootstrap_servers or "?",
            dead_letter=job.dead_letter,
            guarantees=job.guarantees,
            exactly_once_run=eo is not None,
        )
        self.result.phases["cluster"] = cluster_s
        resuming = eo is not None and not eo.restart
        self.dead_letter = (
            DeadLetter(job.dead_letter, [s for s, _ in plan], append=resuming)
            if job.dead_letter
            else None
        )
        self._lock = threading.Lock()  # the reader thread reports too
        self.bar: Union[PlainBar, RichBar] = PlainBar(log, 0)
        #: Whether the import closes the producer: its own, or one replacing the caller's.
        self.owns = producer is None and eo is None
        self.producer = producer
        self.sink: Optional[Sink] = None  # the plain import's
        if eo is None:
            t = time.monotonic()
            self.producer = producer if producer is not None else self.new_producer()
            if producer is None:
                self.result.phases["producer"] = time.monotonic() - t
            self.sink = self._plain_sink(sink, replace_stuck)
        self.signals = (
            StopSignals(log, self.purge, INTERRUPT_WAIT_S)
            if eo is None
            else StopSignals(log, what="the rows handed over are committed")
        )
        if self.sink is not None:
            self.sink.stop = self.signals.requested
        #: The producer whose accumulator view is drawn beside log lines (``inspect``).
        self.live_view: Optional[Producer] = None
        #: Why the topic is no longer the one the import started writing to (deleted,
        #: or deleted and made again), from the :class:`~.topic_watch.TopicWatch`.
        self.topic_lost: Optional[str] = None
        #: Why the brokers no longer let this principal write (an ACL deleted, its
        #: password changed): the first refusal stops the import.
        self.rights_lost: Optional[str] = None

    def new_producer(self) -> Producer:
        """A producer of the job's one resolution: the only place an import makes one."""
        from ..producer import Producer

        made = Producer(self.job.resolved, on_error=self._client_error)
        self.bar.watch(made)  # its broker throttle (a client quota) shows on the bar
        return made

    def _plain_sink(self, sink: Optional[Sink], replace_stuck: bool) -> Sink:
        assert self.producer is not None
        job, result = self.job, self.result
        plain = sink if sink is not None else Sink(self.producer, job.topic, result, self.report)
        plain.producer, plain.topic, plain.result, plain.report = (
            self.producer,
            job.topic,
            result,
            self.report,
        )
        plain.static_headers = list(job.static_headers)
        if self.owns or replace_stuck:
            plain.on_timed_out = self.replace_producer
        plain.on_right_refused = self._right_refused
        return plain

    def start(self, progress: Optional[bool], inspect: bool, console: Optional[Console]) -> None:
        """The bar, and (``inspect``) the accumulator view, in one live display on a
        terminal."""
        total = sum(s.size for s, _ in self.job.plan)
        # (a caller's producer-like object may have no view)
        live_view = self.producer if inspect and hasattr(self.producer, "inspect_live") else None
        if progress if progress is not None else isatty(self.log):
            self.bar = RichBar(self.log, total, console, live_view)
        else:
            self.bar = PlainBar(self.log, total)
            self.live_view = live_view
        self.bar.watch(self.producer)

    def report(self, p: Problem) -> None:
        result = self.result
        with self._lock:
            if p.stage == "note":
                result.notes.append(p)
                return
            result.problem_count += 1
            if p.stage == "parse":
                result.malformed += 1
            elif p.stage == "refused":
                result.refused += 1
            if len(result.problems) < SHOW_PROBLEMS:
                result.problems.append(p)
            dl = self.dead_letter
            if dl is not None and not dl.write(p):
                result.dead_letter_error = dl.error
                result.lost, result.lost_count = dl.lost, dl.lost_count

    def replace_producer(self) -> None:
        """A broker stall left the producer stuck: a new one takes over."""
        assert self.sink is not None  # (set on the plain import's sink only)
        old, self.producer = self.producer, self.new_producer()
        self.sink.producer = self.producer
        self.owns = True
        if old is not None:
            old.close(0)  # purged: each row it still holds comes back with its fate
        self.report(
            Problem(
                "producer",
                "note",
                "rows timed out (message.timeout.ms) after the broker stalled: the producer "
                "was replaced by a new one, and the rows it still held are reported",
            )
        )

    def purge(self) -> None:
        """After a stop signal: the plain producer purged, every row it holds settled."""
        if self.producer is not None and self.job.exactly_once is None:
            self.producer.close(0)

    def run(self) -> None:
        """One of the two loops, then every row handed over gets its fate."""
        result, signals = self.result, self.signals
        t0 = time.monotonic()
        input_done = False  # every row read and handed over (a later signal stops nothing)
        with contextlib.ExitStack() as stack:
            stack.enter_context(signals)
            self._watch_topic(stack)
            if self.live_view is not None:
                stack.enter_context(self.live_view.inspect_live(0.25, file=self.log))
            try:
                input_done = self._loop(t0)
            except KeyboardInterrupt:
                result.interrupted = True
            except ImportInputError as e:
                from .resume_state import ResumeRefused
                from .txn_sink import ProgressLost

                if isinstance(e, ResumeRefused):
                    raise
                result.fatal = str(e)
                result.progress_lost = isinstance(e, ProgressLost)
            except Exception as e:  # a fatal producer error: report what happened so far
                if signals.requested.is_set():
                    result.interrupted = True  # the producer was closed after the signal
                else:
                    result.fatal = f"{type(e).__name__}: {e}"
            self._settle(input_done)
        result.elapsed = time.monotonic() - t0
        self.bar.update(
            result.rows_seen, result.bytes_read, result.delivered, True, result.input_at
        )

    def _watch_topic(self, stack: contextlib.ExitStack) -> None:
        """On a cluster the import did not start (its topic outlives the run): stop at
        once when the topic is deleted, or deleted and made again, with the cause."""
        if self.job.bootstrap_servers is None:
            return  # the embedded broker's topic: nobody else deletes it
        from .topic_watch import TopicWatch

        try:
            watch = TopicWatch(
                {**self.job.config, "bootstrap.servers": self.job.bootstrap_servers},
                self.job.topic,
                self.topic_lost_at_once,
            )
        except Exception:  # (the topic checks already said what the cluster answers)
            return
        self.topic_partitions = watch.first[1] if watch.first else 0
        stack.callback(watch.stop)

    def topic_lost_at_once(self, why: str, made_again: bool) -> None:
        """The topic went (the watch's thread): stop reading at the next safe point and
        purge the producer, so that what it still holds comes back at once - not sent
        (never handed to a broker) or unknown (in flight) - instead of waiting out
        message.timeout.ms."""
        self.topic_lost = why
        self.result.topic_made_again = made_again
        print(f"cykafka import: {why}: stopping", file=self.log, flush=True)
        self.signals.requested.set()
        try:
            self.purge()
        except Exception:  # closed already: its rows have their fates
            pass

    def _client_error(self, exc: Exception) -> None:
        """The producer's client-level errors (its event thread: kept short).  The
        brokers refusing this principal's credentials mid-run (its SCRAM password
        changed) is met when a connection logs in again: KIP-368 re-authentication, or
        any reconnect.  librdkafka keeps the rows queued and logs in again and again,
        each attempt refused, until message.timeout.ms (300 s): stop at the first.
        An exactly-once import meets these in its transaction calls, which stop it with
        the cause named (a refused transactional id fails init_transactions, exit 1):
        a stop here would be taken for a signal."""
        if self.job.exactly_once is not None:
            return
        name = getattr(exc, "name", "")
        if name in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"):
            from .._native import principal

            conf = self.job.config
            mech = conf.get("sasl.mechanisms") or conf.get("sasl.mechanism") or "SASL"
            self._rights_gone(
                f"the brokers refused {principal(dict(conf))}'s {mech} credentials during "
                f"the import (its password was changed or removed after the import logged "
                f"in): {getattr(exc, 'message', exc)}"
            )
        elif name in RIGHTS_REFUSED and getattr(exc, "fatal", False):
            self._right_refused(exc)

    def _right_refused(self, exc: BaseException) -> None:
        """A delivery refused for a right the import had when it started (its WRITE ACL
        deleted): every row after it would be refused too."""
        text = f"{getattr(exc, 'name', type(exc).__name__)}: {getattr(exc, 'message', exc)}"
        self._rights_gone(f"the brokers refused a right this import started with ({text})")

    def _rights_gone(self, why: str) -> None:
        """Stop reading at the next safe point.  Not purged at once, unlike a lost
        topic: what the producer holds comes back refused (not sent) within moments,
        and the settling waits INTERRUPT_WAIT_S for it before purging what is left."""
        if self.rights_lost is not None:
            return
        self.rights_lost = why
        print(f"cykafka import: {why}: stopping", file=self.log, flush=True)
        self.signals.requested.set()

    def _loop(self, t0: float) -> bool:
        """Whether every row was read and handed over."""
        job, result = self.job, self.result
        if self.sink is not None:
            from .plain import send_all

            return send_all(job, self.sink, result, self.report, self.bar, self.signals, t0)
        from .exactly_once import import_plan

        import_plan(
            job,
            result=result,
            report=self.report,
            dead_letter=self.dead_letter,
            bar=self.bar,
            t0=t0,
            new_producer=self.new_producer,
            log=lambda line: print(f"cykafka import: {line}", file=self.log),
            stop=self.signals.requested,
        )
        return True

    def _settle(self, input_done: bool) -> None:
        # Every row handed over gets its fate: delivered, not sent, or unknown.  After
        # Ctrl-C the producer (the caller's too) is purged once INTERRUPT_WAIT_S is
        # up: what it still holds comes back _PURGE_QUEUE (not sent) or
        # _PURGE_INFLIGHT (unknown) instead of all being unknown.
        result, signals = self.result, self.signals
        if signals.requested.is_set() and not input_done:
            result.interrupted = True
        flush_t = time.monotonic()
        if self.sink is not None:
            self.sink.finish(
                INTERRUPT_WAIT_S if result.interrupted else None,
                purge=self.purge,
                stop=None if result.interrupted else signals.requested,
                stop_wait_s=INTERRUPT_WAIT_S,
            )
        self._partition_changes()
        result.signal = signals.signum
        result.read_all = input_done
        if input_done and result.delivered == result.rows_read and not result.fatal:
            result.interrupted = False  # the signal came once every row was delivered
        if self.job.exactly_once is not None and (result.interrupted or result.fatal):
            # Rows of a transaction whose commit a second signal or an error cut
            # short: the broker commits or aborts it, the rerun knows which.
            result.unknown += max(0, result.rows_read - result.settled)
        result.phases["final_flush"] = time.monotonic() - flush_t
        if self.topic_lost is not None:
            self._topic_lost(self.topic_lost)
        elif self.rights_lost is not None and self.sink is not None:
            result.interrupted = False  # not a signal: the cause is named instead
            result.fatal = self.rights_lost
            result.rights_lost = True
            result.resume_at = self.sink.clean_cut()

    def _topic_lost(self, why: str) -> None:
        """The rows the lost topic acknowledged are not in the topic now: never
        reported delivered.  Deleted (no topic by that name): provably gone, not sent.
        Made again: some may have reached the new topic after it was made, unknown."""
        result = self.result
        result.interrupted = False  # not a signal: the cause is named instead
        result.fatal = why
        result.topic_lost = True
        result.topic_partitions = getattr(self, "topic_partitions", 0)
        gone, result.delivered = result.delivered, 0
        result.lost_with_topic = gone
        if result.topic_made_again:
            result.unknown += gone
        else:
            result.not_sent += gone

    def _partition_changes(self) -> None:
        """Partitions added while the producer wrote: the summary says what became of
        per-key order (a caller's producer-like object may not know)."""
        p = self.producer
        if p is None or not hasattr(p, "partition_count_changes"):
            return
        try:
            self.result.partition_changes.update(p.partition_count_changes())
            self.result.keys_kept = p.keys_partition_count != "current"
            # A client quota: the broker's throttle over the last minute (Java's
            # produce-throttle-time-max), said in the summary as on the progress lines.
            # From the statistics emits already received: waiting for the next one
            # held every import shorter than statistics.interval.ms to a whole second.
            throttle = inspector_of(p).metrics(wait=False).get("produce-throttle-time-max", 0.0)
            if throttle == throttle and throttle > 0:  # (NaN: no sample)
                self.result.throttle_max_ms = throttle
        except Exception:  # closed after a stop signal: nothing more to say
            pass

    def close(self) -> None:
        """The bar closed; the producer closed (the import's own) or drained (the
        caller's); the dead letters written."""
        result = self.result
        self.bar.close()
        # After Ctrl-C the queued batches were already given INTERRUPT_WAIT_S: what is
        # left is reported unconfirmed, so do not wait for it again.
        if self.producer is None:  # (exactly-once: its producers are closed as it goes)
            pass
        elif self.owns:
            self.producer.close(0.5 if result.interrupted else None)
        elif not result.interrupted:  # the caller's, drained
            self.producer.flush(None)
        dl = self.dead_letter
        if dl is not None:
            dl.close()
            if dl.error and not result.dead_letter_error:
                result.dead_letter_error = dl.error
