"""The README and CONTRIBUTING stay true to the code: what they show is run elsewhere
(the docs build runs docs/examples), and the layout they describe is the tree's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def _lines(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip()]


def test_readme_fits_one_sitting() -> None:
    assert len(README.splitlines()) <= 250


def test_every_python_example_in_the_readme_is_one_the_docs_build_runs() -> None:
    """Each block is a contiguous excerpt of a script in docs/examples, which the docs
    build executes (a failing script fails ./run docs, and so CI)."""
    scripts = {p.name: _lines(p.read_text()) for p in (ROOT / "docs" / "examples").glob("*.py")}
    blocks = _blocks(README, "python")
    assert blocks
    for block in blocks:
        want = _lines(block)
        found = [
            name
            for name, have in scripts.items()
            if any(have[i : i + len(want)] == want for i in range(len(have)))
        ]
        assert found, f"README block not in any docs/examples script:\n{block}"


def test_readme_links_point_at_pages_that_exist() -> None:
    for target in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)\)", README):
        assert (ROOT / target).is_file(), target


def test_every_docs_page_is_in_the_site() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set(re.findall(r"^([a-z][\w-]*)$", index, flags=re.M))
    pages = {p.stem for p in (ROOT / "docs").glob("*.md") if p.stem != "index"}
    assert pages <= listed, f"pages missing from the toctree: {sorted(pages - listed)}"


def test_contributing_describes_the_layout_as_it_is() -> None:
    """Every module, package and extension file the layout section names exists."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    layout = text[text.index("## Layout") :]
    named = set(re.findall(r"`([\w/]+(?:\.(?:py|pyx|pxi|pxd|h))?/?)`", layout))
    src = ROOT / "src" / "cykafka"
    missing = []
    for name in sorted(named):
        if not re.search(r"\.(py|pyx|pxi|pxd|h)$|/$", name):
            continue  # a word in backticks, not a path
        bare = name.rstrip("/")
        candidates = [
            src / bare,
            ROOT / "ext" / bare,
            ROOT / "ext" / "includes" / bare,
            ROOT / bare,
            ROOT / "tests" / bare,
            *src.glob(f"*/{bare}"),
            *src.glob(f"*/*/{bare}"),
        ]
        if not any(c.exists() for c in candidates):
            missing.append(name)
    assert not missing, f"CONTRIBUTING names what the tree does not have: {missing}"


def test_readme_speed_table_is_the_published_run() -> None:
    """Every row of the README's speed table is a row readme_tables.py prints from
    bench/published/results.json."""
    import subprocess
    import sys

    printed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "readme_tables.py"),
            str(ROOT / "bench" / "published" / "results.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    speed = README[README.index("## Speed") :]
    speed = speed[: speed.index("\n## ")]
    rows = [ln for ln in speed.splitlines() if ln.startswith("|")]
    assert len(rows) > 3
    assert [r for r in rows if r not in printed] == []


def test_every_page_pairs_its_code_fences() -> None:
    """A stray fence turns the rest of a page into one raw block, silently; the docs
    build warns on it (docs/_ext/fences.py), and so does this, without Sphinx."""
    import sys

    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from fences import unpaired_fences

    stray = "## API\nout\n```\n\n- `Producer(config)`\n\n```text\nx\n```\n\n## Next\n"
    assert [line for line, _ in unpaired_fences(stray)] == [7]
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = {
        str(p.relative_to(ROOT)): found
        for p in pages
        if "_build" not in p.parts and (found := unpaired_fences(p.read_text()))
    }
    assert not bad, bad


#: A speed written into prose by hand: a ratio (2.5×, 3.8x), a rate (1.2 M rows/s,
#: 71 MB/s), a share (59 %) or CPU-seconds.  Code and the ``{bench}`` role are not prose.
_HAND_FIGURE = re.compile(
    r"\b\d[\d,]*(\.\d+)?\s?(×|x\b)"
    r"|\b\d[\d,]*(\.\d+)?\s?(k|M)?\s?(rows|msgs|messages|MB)/s"
    r"|\b\d+(\.\d+)?\s?%"
    r"|\b\d+(\.\d+)?\s?CPU-s"
)
_BENCH_ROLE = re.compile(r"\{bench\}`([^`]*)`")
#: Figures that are not measurements: an option's example and a formula.
_NOT_MEASURED = ("paces the import to 5,000 rows/s", "partitions × 3 × `batch.size`")


def _prose(page: Path) -> list[tuple[int, str]]:
    out, fence = [], False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~", ":::")):
            fence = not fence
        elif not fence:
            out.append((n, line))
    return out


def test_speeds_on_docs_pages_come_from_the_published_run() -> None:
    """Every speed a page states is printed from bench/published/results.json while the
    site builds (the ``{bench}`` role, docs/_ext/generated.py): a figure typed into
    prose drifts from the run (one page said 27.2 x where another said 41.97 x)."""
    assert _HAND_FIGURE.search("about 3.8x faster") and _HAND_FIGURE.search("1.2 M rows/s")
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for n, line in _prose(page):
            if any(ok in line for ok in _NOT_MEASURED):
                continue
            text = re.sub(r"`[^`]*`", "", _BENCH_ROLE.sub("", line))
            if _HAND_FIGURE.search(text):
                found.append(f"{page.name}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


def test_every_published_figure_a_page_names_exists() -> None:
    """A ``{bench}`` figure names a number the published run has (the build fails on
    one it lacks; this says which without Sphinx)."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from generated import figure

    published = json.loads((ROOT / "bench" / "published" / "results.json").read_text())
    assert figure("args.count:,.0f") == f"{published['args']['count']:,}"
    assert (
        figure("args.count / args.size:.1f")
        == f"{published['args']['count'] / published['args']['size']:.1f}"
    )
    bad = []
    roles = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        for n, line in _prose(page):
            for text in _BENCH_ROLE.findall(line):
                roles += 1
                try:
                    figure(text)
                except (KeyError, ValueError) as e:
                    bad.append(f"{page.name}:{n}: {e}")
    assert roles > 50 and bad == [], bad


def _synopses() -> dict[str, set[str]]:
    """Each command's flags as the pages' synopses list them: a code-block line starting
    ``cykafka CMD`` and the indented lines after it, on every page."""
    out: dict[str, set[str]] = {}
    for page in sorted((ROOT / "docs").glob("*.md")):
        bare, fence, lines = [], None, []
        for line in page.read_text().splitlines():
            if line.startswith("```"):
                if fence is None:
                    fence, lines = line[3:].strip(), []
                else:
                    if fence in ("", "text", "console"):
                        bare.append("\n".join(lines))
                    fence = None
            elif fence is not None:
                lines.append(line)
        for block in bare:
            cmd = None
            for line in block.splitlines():
                m = re.match(r"cykafka (\w+)(?: |$)", line)
                if m:
                    cmd = m[1]
                elif not line.startswith(" "):
                    cmd = None
                if cmd is not None:
                    flags = re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line)
                    out.setdefault(cmd, set()).update(flags)
    return out


def test_every_synopsis_lists_exactly_the_flags_of_its_command() -> None:
    """A flag the parser has and the synopsis leaves out is one a reader never learns of;
    one the synopsis shows and the parser lacks fails when typed."""
    import argparse

    from cykafka.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown = _synopses()
    assert {"import", "verify", "broker"} <= set(shown), sorted(shown)
    wrong = {}
    for cmd, flags in shown.items():
        p = sub.choices[cmd]
        have: set[str] = set()
        need = []
        for a in p._actions:
            if not a.option_strings or isinstance(a, argparse._HelpAction):
                continue
            have.update(a.option_strings)
            if a.help != argparse.SUPPRESS:
                need.append(a.option_strings)
        missing = [opts[-1] for opts in need if not set(opts) & flags]
        unknown = sorted(flags - have)
        if missing or unknown:
            wrong[cmd] = {"not in the synopsis": missing, "not a flag": unknown}
    assert not wrong, wrong


def test_no_heading_is_repeated_as_the_bold_lead_in_under_it() -> None:
    """``## Executor setup`` then ``**Executor setup.**``: the reader reads it twice."""
    repeated = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for m in re.finditer(r"^#+ (.+)\n+\*\*(.+?)\*\*", text, flags=re.M):

            def words(s: str) -> str:
                return re.sub(r"[`*.:,]", "", s).strip().lower()

            head, lead = words(m[1]), words(m[2])
            if head == lead or head.startswith(lead) or lead.startswith(head):
                repeated.append(f"{page.name}: {m[1]!r} / {m[2]!r}")
    assert not repeated, repeated
