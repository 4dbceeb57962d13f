"""What an exactly-once import resumes from: the inputs as it reads them, the checks
that a saved position still fits them, and the dead-letter file kept in step."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .identity import FileIdentity, block_digest, file_identity, same_file_problem
from .model import ImportInputError
from .progress_topic import FileProgress, Progress

__all__ = ["Input", "Outcome", "ResumeRefused"]


class ResumeRefused(ImportInputError):
    """The saved progress cannot be resumed (changed input, other options, or an input
    that cannot be read from a position); the message says why and what to pass."""


@dataclass
class Input:
    """One input as the import reads it: ``rows(start, report)`` yields its chunks from
    ``start`` (a :class:`~cykafka.importer.model.SourcePosition`, None: the beginning),
    handing problems to ``report``;
    ``on_rows(n, bytes_done)`` is called as its rows are sent.  ``path`` is None for
    standard input; ``seekable`` False for standard input and pipes (an input that cannot
    be read again)."""

    name: str
    path: Optional[str]
    seekable: bool
    rows: Callable[[Any, Callable[[Any], None]], Iterator[Any]]
    on_rows: Callable[[int, int], None] = lambda n, done: None


@dataclass
class Outcome:
    """What the exactly-once run adds to the import's result."""

    transactional_id: str = ""
    committed: int = 0  # rows committed by this run
    earlier: int = 0  # rows committed by earlier runs
    transactions: int = 0
    retries: int = 0
    notes: list[str] = field(default_factory=list)


def identity_of(inp: Input) -> FileIdentity:
    if inp.path is None:
        return FileIdentity(inp.name, 0, 0, "")
    return file_identity(inp.path)


def fresh_state(topic: str, fmt: str, fields: dict[str, Any], inputs: Sequence[Input]) -> Progress:
    return Progress(topic, fmt, fields, [FileProgress(identity_of(i)) for i in inputs])


def check_saved(
    saved: Progress, topic: str, fmt: str, fields: dict[str, Any], inputs: Sequence[Input]
) -> None:
    """Refuse a resume that would not continue the same import of the same data."""
    again = "; pass --restart to import everything again from the first row"
    if saved.topic != topic:
        raise ResumeRefused(
            f"the saved progress of this transactional.id is an import into topic "
            f"{saved.topic!r}, not {topic!r}; use another --transactional-id"
        )
    paths = [f.identity.path for f in saved.files]
    now = [identity_of(i).path for i in inputs]
    if paths != now:
        raise ResumeRefused(f"the saved progress is for the inputs {paths}, not {now}{again}")
    if (saved.fmt, saved.fields) != (fmt, fields):
        raise ResumeRefused(
            f"the saved progress was made with format {saved.fmt} and fields "
            f"{saved.fields}, now format {fmt} and fields {fields}{again}"
        )
    for f, inp in zip(saved.files, inputs):
        if not f.started:
            continue
        if not inp.seekable:
            raise ResumeRefused(
                f"{inp.name}: cannot resume from row {f.row:,}: "
                f"{unseekable(inp)} cannot be read from a position{again}"
            )
        why = same_file_problem(f.identity, identity_of(inp))
        if why is None and not f.done and block_digest(inp.path or "", f.offset) != f.before:
            why = f"the bytes before byte {f.offset:,} (where it resumes) changed"
        if why is not None:
            raise ResumeRefused(
                f"{inp.name} changed since row {f.row - 1:,} was committed: {why}{again}"
            )


def start_position(fp: FileProgress) -> Any:
    from .model import SourcePosition

    return SourcePosition(
        fp.identity.path,
        fp.row,
        offset=fp.offset,
        line=fp.line,
        row_group=fp.row_group,
        group_row=fp.group_row,
    )


def sync_dead_letter(dl: Any, state: Progress, saved: bool, outcome: Outcome) -> None:
    """Cut the dead-letter file back to what the committed rows put there (rows of a
    transaction that did not commit are reported again)."""
    if dl is None:
        return
    path = os.path.abspath(dl.path)
    if saved and state.dead_letter == path:
        if dl.size() >= state.dead_letter_bytes:
            dl.truncate(state.dead_letter_bytes)
        elif not any("dead-letter" in n for n in outcome.notes):
            outcome.notes.append(
                f"{dl.path} is shorter than when the last transaction committed: rows "
                f"rejected before row {state.files[-1].row:,} may be missing from it"
            )
    else:
        if saved and state.dead_letter and not any(state.dead_letter in n for n in outcome.notes):
            outcome.notes.append(f"rows rejected by earlier runs are in {state.dead_letter}")
        dl.truncate(0)
        state.dead_letter_bytes = 0
    state.dead_letter = path


def unseekable(inp: Input) -> str:
    return "standard input" if inp.path is None else "a pipe"


def note_start(state: Progress, inputs: Sequence[Input], restart: bool, out: Outcome) -> None:
    if restart:
        out.notes.append("started from the first row (--restart: saved progress ignored)")
        return
    if state.done:
        out.notes.append(
            f"nothing to do: an earlier run committed all {state.rows:,} rows "
            f"(--restart imports them again)"
        )
        return
    earlier_done = False
    for f, inp in zip(state.files, inputs):
        if f.done:
            out.notes.append(f"{inp.name}: already committed by an earlier run")
            earlier_done = True
            continue
        # A run stopped between one file's last commit and the next file's first
        # resumes at that next file's first row: say so too.
        if f.started or earlier_done:
            out.notes.append(f"resumed at row {f.row:,} of {inp.name}")
        break
