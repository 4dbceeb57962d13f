"""What ``--exactly-once`` asks of an import, below both the job that holds it and the
loop that runs it (:mod:`.exactly_once`): :class:`ExactlyOnce`, the transactional id
that names an import across reruns, and the inputs it refuses before anything is made."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .progress_records import DEFAULT_PROGRESS_TOPIC
from .resume_state import ResumeRefused

if TYPE_CHECKING:
    from ..inputs.sources import Source

__all__ = [
    "DEFAULT_COMMIT_ROWS",
    "DEFAULT_COMMIT_SECONDS",
    "ExactlyOnce",
    "cannot_resume",
    "check_resumable",
    "derive_transactional_id",
    "parse_commit_every",
]

#: Rows per transaction unless ``--commit-every`` says otherwise ...
DEFAULT_COMMIT_ROWS = 1_000_000
#: ... or seconds, whichever comes first (well under librdkafka's default
#: transaction.timeout.ms of 60 s).
DEFAULT_COMMIT_SECONDS = 10.0


@dataclass(frozen=True)
class ExactlyOnce:
    """The ``--exactly-once`` options."""

    transactional_id: Optional[str] = None  # None: derived from topic + inputs
    progress_topic: str = DEFAULT_PROGRESS_TOPIC
    commit_rows: int = DEFAULT_COMMIT_ROWS
    commit_seconds: float = DEFAULT_COMMIT_SECONDS
    restart: bool = False  # ignore saved progress, begin at the first row
    timeout: float = 60.0  # init/commit/abort and reading the progress topic


def parse_commit_every(text: str) -> tuple[int, float]:
    """``"100000"``, ``"5s"``, ``"100000,5s"`` -> (rows, seconds); a part not given
    keeps its default."""
    rows, secs = DEFAULT_COMMIT_ROWS, DEFAULT_COMMIT_SECONDS
    for part in (p.strip() for p in text.split(",")):
        try:
            if part.endswith(("ms", "s")):
                n = float(part[:-2]) / 1000 if part.endswith("ms") else float(part[:-1])
                if not n > 0:
                    raise ValueError
                secs = n
            else:
                rows = int(part.replace("_", ""))
                if rows < 1:
                    raise ValueError
        except ValueError:
            raise ValueError(
                f"--commit-every {text!r}: give rows (100000), seconds (5s) or both "
                f"(100000,5s), each > 0"
            ) from None
    return rows, secs


def derive_transactional_id(topic: str, names: Sequence[str]) -> str:
    """Stable across reruns of the same import, different for other topics or inputs.
    ``names``: the inputs as given (a glob or a directory, not the files found in it:
    a file that appears there later continues the same import)."""
    ident = "\0".join([topic] + [os.path.abspath(n) if n != "<stdin>" else n for n in names])
    return f"cykafka-import-{hashlib.sha256(ident.encode()).hexdigest()[:20]}"


def cannot_resume(name: str, what: str) -> str:
    return (
        f"{name}: --exactly-once resumes by reading the input again from a position, and "
        f"{what} cannot be read from a position; pass --restart to import it in "
        f"transactions from the first row (a rerun then starts over)"
    )


def check_resumable(plan: Sequence[tuple[Source, str]], eo: ExactlyOnce) -> None:
    """Refuse, before anything is created (a topic, a progress record), inputs an
    ``--exactly-once`` import cannot read again: standard input and pipes."""
    if eo.restart:
        return
    for source, _ in plan:
        if not source.is_regular:
            what = "standard input" if source.path is None else "a pipe"
            raise ResumeRefused(cannot_resume(source.name, what))
