"""What an exactly-once import resumes from: the inputs as it reads them, the checks
that a saved position still fits them, and the dead-letter file kept in step."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from ..config.types import JSONValue
from ..inputs.model import Chunk, ImportInputError, Report, SourcePosition
from .identity import FileIdentity, block_digest, file_identity, same_file_problem
from .progress_records import FileProgress, Progress

if TYPE_CHECKING:
    from .deadletter import DeadLetter

__all__ = ["Input", "Outcome", "ResumeRefused"]


class ResumeRefused(ImportInputError):
    """The saved progress cannot be resumed (changed input, other options, or an input
    that cannot be read from a position); the message says why and what to pass."""


@dataclass
class Input:
    """One input as the import reads it: ``rows(start, report)`` yields its chunks from
    ``start`` (a :class:`~cykafka.inputs.model.SourcePosition`, None: the beginning),
    handing problems to ``report``;
    ``on_rows(n, bytes_done)`` is called as its rows are sent.  ``path`` is None for
    standard input; ``seekable`` False for standard input and pipes (an input that cannot
    be read again)."""

    name: str
    path: Optional[str]
    seekable: bool
    rows: Callable[[Optional[SourcePosition], Report], Iterator[Chunk]]
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


def fresh_state(
    topic: str, fmt: str, fields: dict[str, JSONValue], inputs: Sequence[Input]
) -> Progress:
    return Progress(topic, fmt, fields, [FileProgress(identity_of(i)) for i in inputs])


def check_saved(
    saved: Progress, topic: str, fmt: str, fields: dict[str, JSONValue], inputs: Sequence[Input]
) -> tuple[Progress, list[str]]:
    """The saved progress lined up with ``inputs`` (a file new since the earlier run
    starts at its first row; a committed one is matched by its path and checked to be
    the same file) and the names of the new files, or :class:`ResumeRefused` when resuming would not continue the same
    import of the same data the same way."""
    choices = (
        "; rerun with the earlier settings, pass --restart to import everything again "
        "from the first row (the rows committed so far stay in the topic), or import into "
        "another topic"
    )
    if saved.topic != topic:
        raise ResumeRefused(
            f"the saved progress of this transactional.id is an import into topic "
            f"{saved.topic!r}, not {topic!r}; use another --transactional-id"
        )
    changed = _changes({"format": saved.fmt, **saved.fields}, {"format": fmt, **fields})
    if changed:
        raise ResumeRefused(
            "the settings that decide each record's key, value or partition changed since "
            "the earlier run of this import: " + "; ".join(changed) + ".  Resuming would "
            "mix two imports in one topic (a key's rows split over partitions, or encoded "
            "two ways)" + choices
        )
    by_path = {f.identity.path: f for f in saved.files}
    now = {identity_of(i).path: i for i in inputs}
    gone = [p for p, f in by_path.items() if p not in now]
    if gone:
        raise ResumeRefused(
            f"the saved progress of this import covers {', '.join(gone)}, which "
            f"{'is' if len(gone) == 1 else 'are'} no longer among its inputs; put "
            f"{'it' if len(gone) == 1 else 'them'} back" + choices.replace("; rerun", ", rerun")
        )
    again = "; pass --restart to import everything again from the first row"
    files = []
    for inp in inputs:
        f = by_path.get(identity_of(inp).path)
        if f is None or not f.started:  # new, or not begun: read from its first row as it is
            files.append(FileProgress(identity_of(inp)))
            continue
        files.append(f)
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
    new = [i.name for i, f in zip(inputs, files) if f.identity.path not in by_path]
    return dataclasses.replace(saved, files=files, done=saved.done and not new), new


def _changes(old: JSONValue, new: JSONValue, path: str = "") -> list[str]:
    """What differs between two settings trees, one ``name: old -> new`` per leaf."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            out += _changes(old.get(k), new.get(k), f"{path}.{k}" if path else str(k))
        return out
    return [] if old == new else [f"{path} changed from {old!r} to {new!r}"]


def start_position(fp: FileProgress) -> SourcePosition:
    return SourcePosition(
        fp.identity.path,
        fp.row,
        offset=fp.offset,
        line=fp.line,
        row_group=fp.row_group,
        group_row=fp.group_row,
    )


def sync_dead_letter(
    dl: Optional[DeadLetter], state: Progress, saved: bool, outcome: Outcome
) -> None:
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
