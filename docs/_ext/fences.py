"""A page whose code fences do not pair up renders the rest of the page, headings and
all, as one raw block, and Sphinx says nothing: MyST takes the stray fence for the start
of a block that ends at the next fence.  This check warns (``-W``: fails the build) on a
section heading or an opening fence (one with a language) inside a plain code block, and
on a block still open at the end."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}|:{3,})(.*)$")
_HEADING = re.compile(r"^#{2,6} \S")


def unpaired_fences(text: str) -> list[tuple[int, str]]:
    """(line, what) for each heading or opening fence inside a plain code block, and for a
    block left open."""
    found: list[tuple[int, str]] = []
    fence, info, start = "", "", 0
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if not fence:
            if m:
                fence, info, start = m.group(1), m.group(2).strip(), n
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not m.group(2).strip()
        ):
            fence = ""
        elif not info and m:
            found.append(
                (n, f"a ```{m.group(2).strip()} fence inside the code block opened at line {start}")
            )
        elif not info and _HEADING.match(line):
            found.append((n, f"a heading inside the code block opened at line {start}"))
    if fence:
        found.append((start, "a code block opened here is never closed"))
    return found


def _check(app: Sphinx, docname: str, source: list[str]) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for line, what in unpaired_fences(source[0]):
        logger.warning(f"{what}: an unpaired fence?", location=(docname, line))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
