"""The engine of ``cykafka import``: files into a topic through the bulk C path.

* :mod:`cykafka.inputs` (below the import, shared with verify): the input files as
  rows, their sources, formats and encoding into message columns;
* :mod:`.sink`: chunks into ``produce_batch``, every row's outcome into the result
  (``Sink.on_delivered`` sees each chunk once settled, in input order);
* :mod:`.job` decides an import once (``ImportJob.build``); :mod:`.run` runs it
  (``import_files``): the broker, :mod:`.topic_checks` (the cluster answers and the
  topic exists, before input is read), the one producer, then :mod:`.plain` or
  :mod:`.exactly_once` (with :mod:`.exactly_once_options`, :mod:`.progress_records`);
* :mod:`.deadletter`, :mod:`.bar`, :mod:`.signals`, :mod:`.summary`, :mod:`.dryrun`.

Nothing is lost silently: every row is delivered, or counted as failed, listed in the
summary and written to the dead-letter file when one is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inputs import (
    FORMATS,
    READERS,
    Chunk,
    Fields,
    ImportInputError,
    Problem,
    Reader,
    ReadOptions,
    Source,
    SourcePosition,
    detect_format,
    plan_files,
)
from .job import ImportJob
from .pipeline import IMPORT_DEFAULTS, resolve_import
from .run import import_files
from .sink import Sink
from .summary import ImportResult

if TYPE_CHECKING:
    from .exactly_once_options import ExactlyOnce
    from .resume_state import ResumeRefused
    from .sample import write_sample_csv

#: Loaded when first asked for: a plain import needs neither, and every import's
#: start-up paid for them (hashlib, the progress topic, tempfile).
_LAZY = {
    "ExactlyOnce": "exactly_once_options",
    "ResumeRefused": "resume_state",
    "write_sample_csv": "sample",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FORMATS",
    "IMPORT_DEFAULTS",
    "READERS",
    "Chunk",
    "ExactlyOnce",
    "Fields",
    "ImportInputError",
    "ImportJob",
    "ImportResult",
    "Problem",
    "ReadOptions",
    "Reader",
    "ResumeRefused",
    "Sink",
    "Source",
    "SourcePosition",
    "detect_format",
    "import_files",
    "plan_files",
    "resolve_import",
    "write_sample_csv",
]
