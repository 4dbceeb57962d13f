"""The ``--exactly-once`` options of ``cykafka import`` (see cykafka.importer.exactly_once)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from ..importer import ExactlyOnce

from .options import UsageError

__all__ = ["add_exactly_once", "exactly_once_from_args"]


#: The defaults as --help shows them, written out so that ``cykafka --help`` does not
#: import the importer (tests check them against cykafka.importer.exactly_once_options and
#: cykafka.importer.progress_records).
HELP_COMMIT_EVERY = "1000000,10s"
HELP_PROGRESS_TOPIC = "cykafka-import-progress"


def add_exactly_once(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "exactly once (resumable: a rerun after a crash goes on from the last commit)"
    )
    g.add_argument(
        "--exactly-once",
        action="store_true",
        help="send in transactions that also commit the input position; rerun the same "
        "command after any failure",
    )
    g.add_argument(
        "--transactional-id",
        metavar="ID",
        help="transactional.id (default: derived from the topic and the inputs as given)",
    )
    g.add_argument(
        "--commit-every",
        metavar="N[,Ts]",
        help=f"commit every N rows and/or T seconds (default {HELP_COMMIT_EVERY})",
    )
    g.add_argument(
        "--progress-topic",
        metavar="TOPIC",
        default=HELP_PROGRESS_TOPIC,
        help=f"compacted topic holding each import's position (default {HELP_PROGRESS_TOPIC})",
    )
    g.add_argument(
        "--resume",
        choices=["yes", "no"],
        default="yes",
        help="go on from the saved position (yes, default) or ignore it (no)",
    )
    g.add_argument(
        "--restart",
        action="store_true",
        help="begin at the first row even though progress is saved (changed input, "
        "standard input, compressed files)",
    )


def exactly_once_from_args(
    args: argparse.Namespace, config: Mapping[str, Any]
) -> Optional[ExactlyOnce]:
    """The :class:`~cykafka.importer.ExactlyOnce` options, or None without
    ``--exactly-once`` (then its other options are refused)."""
    if not args.exactly_once:
        for flag, given in (
            ("--transactional-id", args.transactional_id is not None),
            ("--commit-every", args.commit_every is not None),
            ("--restart", args.restart),
            ("--resume=no", args.resume == "no"),
        ):
            if given:
                raise UsageError(f"{flag} needs --exactly-once")
        return None
    from ..importer.exactly_once_options import ExactlyOnce, parse_commit_every

    if config.get("transactional.id"):
        raise UsageError("--exactly-once sets transactional.id; use --transactional-id")
    rows, seconds = None, None
    if args.commit_every is not None:
        try:
            rows, seconds = parse_commit_every(args.commit_every)
        except ValueError as e:
            raise UsageError(str(e)) from None
    # Transactions are committed and aborted within transaction.timeout.ms, or fail.
    timeout = float(config.get("transaction.timeout.ms", 60000)) / 1000
    kw: dict[str, Any] = {}
    if rows is not None:
        kw.update(commit_rows=rows, commit_seconds=seconds)
    return ExactlyOnce(
        transactional_id=args.transactional_id,
        progress_topic=args.progress_topic,
        restart=args.restart or args.resume == "no",
        timeout=max(timeout, 5.0),
        **kw,
    )
