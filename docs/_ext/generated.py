"""``markdown-output``: run a command while the site builds and parse what it prints as
Markdown (the benchmark tables are printed from the published run's JSON this way, so the
page cannot drift from the file).  A failing command fails the build."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from docutils import nodes
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


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("markdown-output", MarkdownOutput)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
