"""Figures a page cannot hold by hand, made while the site builds.

``markdown-output``: run a command and parse what it prints as Markdown (the benchmark
tables are printed from the published run's JSON this way).  A failing command fails the
build.

``{bench}`PATH:FORMAT```: one figure of the published run (``bench/published/results.json``),
``PATH`` a dotted path into it (``etl.spark.exactly_once_vs_default_median``; a list's
item by its index) or two
joined by `` / `` for a ratio, ``FORMAT`` a Python format spec (``.2f``, ``,.0f``), as after the colon of an f-string
(a ``|`` would split a Markdown table's cell).  A
path the run does not have fails the build.  Prose then cannot state a speed the
published run does not show (``tests/docs/test_docs.py`` refuses a figure written by
hand)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst.states import Inliner
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class MarkdownOutput(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        cmd = self.arguments[0].replace("python ", f"{sys.executable} ", 1)
        done = subprocess.run(
            cmd, shell=True, cwd=self.env.srcdir, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            raise self.error(f"{cmd!r} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        return self.parse_text_to_nodes(done.stdout)


PUBLISHED = Path(__file__).resolve().parents[2] / "bench" / "published" / "results.json"


@functools.cache
def _published() -> dict[str, Any]:
    with open(PUBLISHED) as f:
        return dict(json.load(f))


def figure(text: str) -> str:
    """``PATH:FORMAT`` (or ``PATH / PATH:FORMAT``) formatted from the published run."""
    expr, _, spec = text.partition(":")

    def value(path: str) -> float:
        node: Any = _published()
        for part in path.strip().split("."):
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]  # (a list's item by its index)
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise KeyError(f"{path.strip()!r}: no {part!r} in {PUBLISHED.name}")
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise KeyError(f"{path.strip()!r} is not a number in {PUBLISHED.name}")
        return float(node)

    top, _, bottom = expr.partition(" / ")
    number = value(top) / value(bottom) if bottom else value(top)
    return format(number, spec.strip())


def bench_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Inliner,
    options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    try:
        return [nodes.Text(figure(text))], []
    except (KeyError, ValueError) as e:
        msg = inliner.reporter.error(f"bench figure {text!r}: {e}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("markdown-output", MarkdownOutput)
    app.add_role("bench", bench_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
