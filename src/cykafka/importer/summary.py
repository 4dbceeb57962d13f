"""What an import did (:class:`ImportResult`) and the summary people read."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Optional

from ..inputs.model import Problem, SourcePosition

__all__ = ["ImportResult", "plural"]


def _next_name(path: str) -> str:
    """``dead.jsonl`` -> ``dead.rest.jsonl``: the next run's dead-letter file."""
    root, ext = os.path.splitext(path)
    return f"{root}.rest{ext}"


def plural(n: int, word: str) -> str:
    """``word`` for one, ``word + "s"`` for any other count."""
    return word if n == 1 else word + "s"


# The first N problems are listed on the terminal (all are in the dead-letter file).
SHOW_PROBLEMS = 10

#: Where ``cykafka broker`` listens unless told otherwise (its --host and --port).
STANDALONE_BOOTSTRAP = "127.0.0.1:9092"


def rerun_with_restart(command: list[str]) -> str:
    """``command`` (``cykafka import ... --exactly-once``) with ``--restart`` in place of
    its own ``--resume``/``--restart``: the import done again from the first row."""
    again, i = [], 0
    while i < len(command):
        if command[i] == "--resume":
            i += 2
            continue
        if command[i] != "--restart" and not command[i].startswith("--resume="):
            again.append(command[i])
        i += 1
    return shlex.join([*again, "--restart"])


#: The phases of :attr:`ImportResult.phases`, as ``--timings`` names them.  Reading runs
#: in a thread of its own, beside handing over: "waiting for input" is only the time
#: the producer side had nothing to send.
PHASES = {
    "startup": "start-up (interpreter and imports)",
    "sample": "generating the sample",
    "cluster": "cluster check (metadata)",
    "producer": "producer start",
    "input_wait": "waiting for input",
    "hand_over": "handing over",
    "final_flush": "final flush",
}


@dataclass
class ImportResult:
    """What an import did; :meth:`summary_lines` renders it for people."""

    topic: str
    files: list[str]
    fmt: str
    bootstrap_servers: str
    rows_read: int = 0
    #: Bytes of the input rows this run read (a resumed run's, not the skipped ones) ...
    bytes_read: int = 0
    #: ... and the bytes of the inputs before the next row: where the bar is.
    input_at: int = 0
    #: The three fates of the rows handed to the producer (see :mod:`.fates`).
    delivered: int = 0
    not_sent: int = 0  # provably not in the topic: safe to send again
    unknown: int = 0  # handed over, no acknowledgement: may be in the topic
    malformed: int = 0  # rows that could not be parsed (never produced)
    #: rows read whose values a message cannot hold (NaN, a bad timestamp or partition,
    #: not fitting the schema): never produced either
    refused: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    first_offsets: dict[int, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)
    elapsed: float = 0.0
    guarantees: str = ""
    interrupted: bool = False
    #: The signal that stopped the import (SIGINT, SIGTERM, SIGHUP), when one did.
    signal: Optional[int] = None
    #: Every row of the input was read (a stop signal came during the final flush).
    read_all: bool = False
    #: An ``--exactly-once`` import (its rows are committed in transactions).
    exactly_once_run: bool = False
    #: The command line that ran this import, when a command did (``cykafka import``):
    #: the summary then prints the command that finishes an import that stopped.
    command: Optional[list[str]] = None
    #: ... and the ``cykafka verify`` of the same inputs, topic and cluster, which the
    #: advice for unknown rows prints.
    verify_command: Optional[str] = None
    #: An ``--exactly-once`` import stopped because the broker lost its progress log: the
    #: summary prints the verify to read the topic and the rerun with --restart.
    progress_lost: bool = False
    #: The import ran into an embedded broker, started for it and stopped after it: what
    #: it delivered was in that broker's memory, and is gone.
    embedded_broker: bool = False
    fatal: Optional[str] = None
    dead_letter: Optional[str] = None
    #: Things a person should know that lost nothing (a torn last line, a suspicious header).
    notes: list[Problem] = field(default_factory=list)
    #: Rows not delivered whose dead-letter write failed: named here, nowhere else.
    lost: list[Problem] = field(default_factory=list)
    lost_count: int = 0
    dead_letter_error: Optional[str] = None
    #: What an ``--exactly-once`` import did: where it resumed, its transactions.
    exactly_once: list[str] = field(default_factory=list)
    #: The first row not handed to the producer (a plain import stopped early) ...
    read_to: Optional[SourcePosition] = None
    #: ... and the rows of the inputs before it (malformed rows counted): every one
    #: has a fate, and ``--skip-rows`` with this number imports the rest.
    settled_rows: int = 0
    #: Where the wall time went, in seconds, in the order it was spent (see
    #: :data:`PHASES`); ``cykafka import --timings`` prints it.
    phases: dict[str, float] = field(default_factory=dict)
    #: ``{topic: (first, now)}``: partition counts that changed during the run
    #: (:meth:`cykafka.Producer.partition_count_changes`), and whether keyed placement
    #: kept the first count (``keys.partition.count=first``).
    partition_changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    keys_kept: bool = True
    #: The topic was deleted (or deleted and made again) during the import: the rows it
    #: had acknowledged (``lost_with_topic``) are counted not sent (gone) or unknown
    #: (made again: some may be in the new topic), never delivered.
    #: The largest broker throttle per response (a client quota) in the run's last
    #: minute; 0: none.
    throttle_max_ms: float = 0.0
    #: Rows librdkafka failed only because the broker refused another record of their
    #: batch one by one (INVALID_RECORD, INVALID_TIMESTAMP), sent again (counted in their
    #: fates as any row) ...
    resent: int = 0
    #: ... and of them, at most these were written after a later row of their partition.
    resent_out_of_order: int = 0
    topic_lost: bool = False
    #: The brokers stopped letting this principal write mid-run (an ACL deleted, its
    #: password changed): the import stopped at the first refusal, named in ``fatal``.
    rights_lost: bool = False
    #: The rows of the input before the first one not delivered, when every row after
    #: them is not sent or unread (none delivered, none unknown): ``--skip-rows`` with
    #: this number finishes the import, sending each remaining row once.
    resume_at: Optional[int] = None
    topic_made_again: bool = False
    topic_partitions: int = 0
    lost_with_topic: int = 0

    @property
    def rows_seen(self) -> int:
        """Every row read: handed to the producer, malformed or refused."""
        return self.rows_read + self.malformed + self.refused

    @property
    def settled(self) -> int:
        """Rows with a fate: delivered, not sent or unknown."""
        return self.delivered + self.not_sent + self.unknown

    @property
    def failed(self) -> int:
        """Rows handed to the producer and not delivered (not sent + unknown)."""
        return self.not_sent + self.unknown

    @property
    def ok(self) -> bool:
        """Every row read was delivered (and nothing was malformed or cut short)."""
        return (
            not self.interrupted
            and self.fatal is None
            and self.failed == 0
            and self.malformed == 0
            and self.refused == 0
            and self.delivered == self.rows_read
            and self.dead_letter_error is None
        )

    @property
    def exit_status(self) -> int:
        """The process exit status: 0 all delivered, 128+signal when a signal stopped
        the import (130 after Ctrl-C), 1 otherwise."""
        if self.interrupted:
            return 128 + (self.signal or 2)
        return 0 if self.ok else 1

    def _how_to_finish(self) -> list[str]:
        """After a stop: the command that finishes the import, runnable as printed."""
        if self.embedded_broker:
            return self._how_to_finish_embedded()
        if self.exactly_once_run:
            out = [
                "  to finish   run the same command again: it resumes after the last commit, "
                "without duplicates"
            ]
            if self.command:
                out.append(f"                {shlex.join(self.command)}")
            return out
        if self.resume_at is not None:
            n = self.resume_at
            failed = self.not_sent
            out = [
                f"  to finish   import the rest, after the first {n:,} {plural(n, 'row')} of the "
                f"input, all delivered: every row after them was not sent ({failed:,}"
                f"{', in ' + self.dead_letter if self.dead_letter and failed else ''}) or not "
                "read, so this sends each once:",
                f"                {self.finish_command(n)}",
            ]
            return out
        n = self.settled_rows
        if n == 0:
            # Printed, as every other advice's command is: "the same command" is not
            # something to run as printed.
            out = ["  to finish   nothing was handed over: run the same command again"]
            if self.command:
                out.append(f"                {shlex.join(self.command)}")
            return out
        shown = self.problem_count <= SHOW_PROBLEMS
        where = (
            f"in {self.dead_letter}"
            if self.dead_letter
            else ("listed above" if shown else "not all listed: no --dead-letter FILE was given")
        )
        nxt = ""
        at = self.read_to
        if at is not None:
            nxt = f"; the next is {os.path.basename(at.file)} row {at.row:,}"
            if at.line is not None:
                nxt += f" (line {at.line:,}, byte {at.offset or 0:,})"
            elif at.row_group is not None:
                nxt += f" (row group {at.row_group}, row {at.group_row})"
        out = [
            f"  to finish   import the rest, after the {n:,} {plural(n, 'row')} of the input "
            f"that have a fate{nxt}:",
            f"                {self.finish_command()}",
        ]
        if self.not_sent:
            out.append(
                f"              and send again the {self.not_sent:,} {plural(self.not_sent, 'row')} "
                f"not sent ({where});"
            )
        if self.unknown and self.verify_command:
            out.append(
                f"              the {self.unknown:,} unknown {plural(self.unknown, 'row')} "
                f"({where}) may be in the topic: check them first, with what the topic holds "
                "against the input:"
            )
            out.append(f"                {self.verify_command}")
        elif self.unknown:
            out.append(
                f"              the {self.unknown:,} unknown {plural(self.unknown, 'row')} "
                f"({where}) may be in the topic: check them first (cykafka verify)."
            )
        out.append(
            "              (A plain rerun sends the delivered rows again; --exactly-once "
            "imports resume by themselves.)"
        )
        return out

    def _how_to_finish_embedded(self) -> list[str]:
        """After a stop of an import into the embedded broker: that broker stopped with
        it, and its topics were in memory.  Neither ``--skip-rows`` nor an exactly-once
        resume can finish the import (a rerun starts a new, empty broker: the rows
        before the skip, or the committed ones, would exist nowhere); only a full rerun
        does."""
        held = (
            f"the {self.delivered:,} {plural(self.delivered, 'row')} delivered went with it"
            if self.delivered
            else "nothing was delivered"
        )
        out = [
            f"  to finish   the embedded broker stopped with the import and its data was in "
            f"memory ({held}): import everything again",
        ]
        if self.command:
            out.append(f"                {shlex.join(self.command)}")
        out.append(
            "              (add --keep-broker to read the topic afterwards; to keep what an "
            f"import delivered across stops, run `{self.broker_command()}` in another "
            f"terminal and pass --bootstrap-servers {STANDALONE_BOOTSTRAP})"
        )
        return out

    def broker_command(self) -> str:
        """The ``cykafka broker`` that keeps this import's topic across runs, as a person
        runs it in another terminal: with the topic, as the embedded broker had it (an
        import into a cluster creates no topic unless told to)."""
        cmd = ["cykafka", "broker", "--topic", self.topic]
        if self.topic_partitions > 1:
            cmd += ["--partitions", str(self.topic_partitions)]
        return shlex.join(cmd)

    def _how_to_redo(self) -> list[str]:
        """After the topic was lost: the rows it held are gone, so the import is done
        again from the first row, into the topic made again as it was."""
        out = []
        if self.lost_with_topic:
            where = "unknown" if self.topic_made_again else "not sent"
            out.append(
                f"  lost        {self.lost_with_topic:,} {plural(self.lost_with_topic, 'row')} the "
                f"topic had acknowledged went with it (counted {where} above, not delivered)"
            )
        n = self.topic_partitions
        first = (
            "delete the topic made again (it holds only rows of this run), then "
            if self.topic_made_again
            else "if a broker with auto.create.topics.enable has made the topic again "
            "meanwhile, delete it; then "
        )
        out.append(
            f"  to finish   {first}import everything again from the first row; it makes "
            f"the topic with its {n} partitions:"
        )
        out.append(f"                {self.redo_command()}")
        return out

    def redo_command(self) -> str:
        """This run's command from the first row (no ``--skip-rows``), making the topic
        with the partitions it had (``--partitions``)."""
        n = self.topic_partitions
        if not self.command:
            return f"ImportJob.build(..., partitions={n})"
        cmd, i = [], 0
        while i < len(self.command):
            arg = self.command[i]
            if arg in ("--skip-rows", "--partitions"):
                i += 2
                continue
            if not arg.startswith(("--skip-rows=", "--partitions=")):
                cmd.append(arg)
            i += 1
        return shlex.join([*cmd, "--partitions", str(n)] if n else cmd)

    def _partition_lines(self) -> list[str]:
        """Where the guarantee is stated, what a partition count change did to it."""
        out = []
        for topic, (first, now) in sorted(self.partition_changes.items()):
            said = f"  partitions  topic {topic!r} went from {first} to {now} partitions during the import: "
            if self.keys_kept:
                out.append(
                    said + "every key stayed on the partition it started on "
                    "(keys.partition.count), so per-key order holds; the new "
                    "partitions got no keyed rows"
                )
            else:
                out.append(
                    said + "keys written after the producer saw it may be on another "
                    "partition than before (keys.partition.count=current), so per-key "
                    "order does not hold across the change"
                )
        return out

    def finish_command(self, rows: Optional[int] = None) -> str:
        """The command that imports the rows after ``rows`` (default
        :attr:`settled_rows`): this run's command with ``--skip-rows``
        (``ImportJob.build(..., skip_rows=)`` without a command).  A dead-letter file
        this run wrote rows to is never overwritten (:mod:`.deadletter`): the command
        names another beside it."""
        n = self.settled_rows if rows is None else rows
        if not self.command:
            return f"ImportJob.build(..., skip_rows={n})"
        cmd, i = [], 0
        while i < len(self.command):
            arg = self.command[i]
            if arg == "--skip-rows":
                i += 2
                continue
            if arg == "--dead-letter" and i + 1 < len(self.command) and self.problem_count:
                cmd += [arg, _next_name(self.command[i + 1])]
                i += 2
                continue
            if not arg.startswith("--skip-rows="):
                cmd.append(arg)
            i += 1
        return shlex.join([*cmd, "--skip-rows", str(n)])

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes_read / 1e6 / self.elapsed if self.elapsed > 0 else 0.0

    def timing_lines(self) -> list[str]:
        """The ``--timings`` lines: each phase's seconds and share of the total."""
        total = sum(self.phases.values())
        out = [f"  timings     {total:.3f} s until this summary:"]
        for key, took in self.phases.items():
            share = took / total if total > 0 else 0.0
            out.append(f"    {PHASES.get(key, key):<36} {took:7.3f} s  {share:4.0%}")
        return out

    def summary_lines(self, timings: bool = False) -> list[str]:
        names = ", ".join(os.path.basename(f) for f in self.files) or "-"
        out = [
            f"Imported {names} ({self.fmt}) into topic {self.topic!r} on {self.bootstrap_servers}",
            f"  rows read   {self.rows_seen:,}  ({self.bytes_read / 1e6:,.1f} MB)",
            f"  delivered   {self.delivered:,}",
            f"  not sent    {self.not_sent:,}"
            + ("  (never written: safe to send again)" if self.not_sent else ""),
            f"  unknown     {self.unknown:,}"
            + ("  (sent, never acknowledged: may be in the topic)" if self.unknown else ""),
        ]
        if self.malformed or self.refused:
            why = []
            if self.malformed:
                why.append(f"{self.malformed:,} malformed")
            if self.refused:
                why.append(
                    f"{self.refused:,} with a value no message can hold (NaN, a bad "
                    "timestamp or partition, not the schema's)"
                )
            out.append(
                f"  rejected    {self.malformed + self.refused:,}  ({' and '.join(why)}: "
                "never sent)"
            )
        if self.last_offsets:
            ranges = "  ".join(
                f"{p}: {self.first_offsets.get(p, '?')}..{self.last_offsets[p]}"
                for p in sorted(self.last_offsets)
            )
            out.append(f"  offsets     {ranges}")
        out.append(
            f"  elapsed     {self.elapsed:.2f} s  ({self.rows_per_second:,.0f} rows/s, "
            f"{self.mb_per_second:,.1f} MB/s)"
        )
        if timings and self.phases:
            out.extend(self.timing_lines())
        if self.guarantees:
            out.append(f"  guarantees  {self.guarantees}")
        for line in self.exactly_once:
            out.append(f"  exactly-once {line}")
        out.extend(self._partition_lines())
        if self.resent:
            line = (
                f"  re-sent     {self.resent:,} {plural(self.resent, 'row')} librdkafka failed "
                "with a record the broker refused one by one (their batch was not written)"
            )
            if self.resent_out_of_order:
                line += (
                    f"; {self.resent_out_of_order:,} of them reached the topic after later rows "
                    "of their partition: per-partition order does not hold for those"
                )
            out.append(line)
        if self.throttle_max_ms:
            out.append(
                f"  throttled   by the broker up to {self.throttle_max_ms:,.0f} ms per response "
                "(a client quota): the import went on at the quota's rate"
            )
        out.extend(self._problem_lines())
        for p in self.notes[:SHOW_PROBLEMS]:
            out.append(f"  note        {p.describe()}")
        if self.fatal:
            out.append(f"  stopped     {self.fatal}")
        if self.progress_lost and self.command:
            if self.verify_command:
                out.append("  to finish   read the topic first:")
                out.append(f"                {self.verify_command}")
                out.append("              if its rows are gone, import everything again:")
            else:
                out.append("  to finish   if the topic's rows are gone, import everything again:")
            out.append(f"                {rerun_with_restart(self.command)}")
        if self.topic_lost:
            out.extend(self._how_to_redo())
        elif self.rights_lost:
            out.append(
                "  rights      once the right is given back (an ACL, the password in the "
                "client's settings), finish the import:"
            )
            out.extend(self._how_to_finish())
        if self.interrupted:
            from .signals import signal_name

            by = signal_name(self.signal or 2)
            by = "interrupted (Ctrl-C)" if by == "Ctrl-C" else by
            when = (
                "while the last rows were delivered"
                if self.read_all
                else "before the end of the input"
            )
            out.append(f"  stopped     {by} {when}")
            out.extend(self._how_to_finish())
        out.append(self._result_line())
        return out

    def _problem_lines(self) -> list[str]:
        """The rows not delivered, a few by name, and where the rest are."""
        out: list[str] = []
        if self.problem_count:
            out.append(
                f"  problems    {self.problem_count:,} {plural(self.problem_count, 'row')} "
                "not delivered:"
            )
            for p in self.problems[:SHOW_PROBLEMS]:
                out.append(f"    {p.describe()}")
            if self.problem_count > SHOW_PROBLEMS:
                more = self.problem_count - SHOW_PROBLEMS
                out.append(
                    f"    ... and {more:,} more"
                    + (f" (all in {self.dead_letter})" if self.dead_letter else "")
                )
            elif self.dead_letter:
                out.append(f"    written to {self.dead_letter}")
        if self.dead_letter_error:
            out.append(f"  stopped     {self.dead_letter_error}")
            out.append(
                f"  unaccounted {self.lost_count:,} rows not delivered and not in the "
                "dead-letter file:"
            )
            for p in self.lost[:SHOW_PROBLEMS]:
                out.append(f"    {p.describe()}")
            if self.lost_count > SHOW_PROBLEMS:
                out.append(f"    ... and {self.lost_count - SHOW_PROBLEMS:,} more")
        return out

    def _result_line(self) -> str:
        """The last line: OK, or why not, with the exit status."""
        if self.ok and self.rows_seen == 0:  # only with --allow-empty (inputs/check.py)
            return "  result      OK: the input holds no rows; nothing to deliver"
        if self.ok:
            return "  result      OK: every row was delivered"
        if self.interrupted:
            return f"  result      NOT OK: stopped before the end (exit status {self.exit_status})"
        return (
            f"  result      NOT OK: some rows were not delivered (exit status {self.exit_status})"
        )
