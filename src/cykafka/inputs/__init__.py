"""Input files as rows: what ``cykafka import`` sends and ``cykafka verify`` checks a
topic against, read by the same code so that both sides parse a row alike.

* :mod:`.sources`: what the arguments name (files, ``-``, globs, directories of part
  files, compressed files);
* :mod:`.readers`: one module per format behind one interface (``readers/base.py``),
  registered in ``readers/__init__.py``; every row carries its source position
  (:class:`SourcePosition`), every chunk the position after it (``Chunk.end``), and a
  reader can start at such a position;
* :mod:`.encode`: rows -> key, value, partition, timestamp and headers;
* :mod:`.check`: the check of the inputs before anything is read for sending (each
  file's format, its fields), as :func:`plan_files`.
"""

from __future__ import annotations

from .check import DEFAULT_OPTIONS, NO_FIELDS, plan_files
from .model import Chunk, Fields, ImportInputError, Problem, Report, SourcePosition
from .readers import FORMATS, READERS, Reader, ReadOptions, check_columns, detect_format
from .sources import Source, expand

__all__ = [
    "DEFAULT_OPTIONS",
    "FORMATS",
    "NO_FIELDS",
    "READERS",
    "Chunk",
    "Fields",
    "ImportInputError",
    "Problem",
    "ReadOptions",
    "Reader",
    "Report",
    "Source",
    "SourcePosition",
    "check_columns",
    "detect_format",
    "expand",
    "plan_files",
]
