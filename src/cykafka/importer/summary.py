"""What an import did (:class:`ImportResult`) and the summary people read."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .model import Problem, SourcePosition

__all__ = ["ImportResult"]

# The first N problems are listed on the terminal (all are in the dead-letter file).
SHOW_PROBLEMS = 10

#: The phases of :attr:`ImportResult.phases`, as ``--timings`` names them.  Reading runs
#: in a thread of its own, beside handing over: "waiting for input" is only the time
#: the producer side had nothing to send.
PHASES = {
    "startup": "start-up (interpreter and imports)",
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
    bytes_read: int = 0
    #: The three fates of the rows handed to the producer (see :mod:`.fates`).
    delivered: int = 0
    not_sent: int = 0  # provably not in the topic: safe to send again
    unknown: int = 0  # handed over, no acknowledgement: may be in the topic
    malformed: int = 0  # rows that could not be parsed (never produced)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    first_offsets: dict[int, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)
    elapsed: float = 0.0
    guarantees: str = ""
    interrupted: bool = False
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
    #: The first row not handed to the producer (a plain import stopped early).
    read_to: Optional[SourcePosition] = None
    #: Where the wall time went, in seconds, in the order it was spent (see
    #: :data:`PHASES`); ``cykafka import --timings`` prints it.
    phases: dict[str, float] = field(default_factory=dict)

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
            and self.delivered == self.rows_read
            and self.dead_letter_error is None
        )

    @property
    def exit_status(self) -> int:
        """The process exit status: 0 all delivered, 130 interrupted, 1 otherwise."""
        if self.interrupted:
            return 130
        return 0 if self.ok else 1

    def _how_to_finish(self) -> list[str]:
        """After Ctrl-C of a plain import: a rerun would duplicate what was delivered."""
        if self.exactly_once or not self.delivered:
            return []
        shown = self.problem_count <= SHOW_PROBLEMS
        where = (
            f"in {self.dead_letter}"
            if self.dead_letter
            else ("listed above" if shown else "not all listed: no --dead-letter FILE was given")
        )
        rest = f"the input after the {self.rows_read:,} rows read"
        at = self.read_to
        if at is not None:
            rest = f"{os.path.basename(at.file)} from row {at.row:,}"
            if at.line is not None:
                rest += f" (line {at.line:,}, byte {at.offset or 0:,})"
            elif at.row_group is not None:
                rest += f" (row group {at.row_group}, row {at.group_row})"
            if at.file != self.files[-1]:
                rest += " and the inputs after it"
        out = [
            f"  to finish   a plain rerun sends the {self.delivered:,} delivered rows again.",
            f"              Without duplicates: import {rest};",
        ]
        if self.not_sent:
            out.append(f"              send again the {self.not_sent:,} rows not sent ({where});")
        if self.unknown:
            out.append(
                f"              the {self.unknown:,} unknown rows ({where}) may be in the topic: "
                "check them first (cykafka verify).",
            )
        out.append(
            "              Or use --exactly-once (into a topic without this run's rows): a run "
            "stopped anywhere resumes without duplicates."
        )
        return out

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
            f"  rows read   {self.rows_read:,}  ({self.bytes_read / 1e6:,.1f} MB)"
            + (f", {self.malformed:,} malformed rows skipped" if self.malformed else ""),
            f"  delivered   {self.delivered:,}",
            f"  not sent    {self.not_sent:,}"
            + ("  (never written: safe to send again)" if self.not_sent else ""),
            f"  unknown     {self.unknown:,}"
            + ("  (sent, never acknowledged: may be in the topic)" if self.unknown else ""),
        ]
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
        if self.problem_count:
            out.append(f"  problems    {self.problem_count:,} rows not delivered:")
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
        for p in self.notes[:SHOW_PROBLEMS]:
            out.append(f"  note        {p.describe()}")
        if self.fatal:
            out.append(f"  stopped     {self.fatal}")
        if self.interrupted:
            out.append("  stopped     interrupted (Ctrl-C) before the end of the input")
            out.extend(self._how_to_finish())
        if self.ok:
            out.append("  result      OK: every row was delivered")
        else:
            out.append(
                "  result      NOT OK: some rows were not delivered "
                f"(exit status {self.exit_status})"
            )
        return out
