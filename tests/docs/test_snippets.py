"""Every fenced code block of README.md and docs/*.md is proven, as the reader sees it.

- Sphinx directives (``{literalinclude}``, ``{program-output}``, ``{doctest}``, ...) are run
  by ``./run docs`` (warnings as errors): here, the files they name exist.
- ``python``: a block that needs nothing from outside it is executed as it is; one that
  uses names it does not define is a contiguous excerpt of a ``docs/examples`` script that
  a page runs while the site builds; the Spark deployment fragments (a standalone cluster,
  a Spark Connect server, the streaming query: :data:`DEPLOYMENT_FRAGMENTS`) are run by
  tests/spark/test_docs_deployments.py, after their shell blocks; here, without Spark,
  they compile and each call of cykafka's in them binds to the real signature.
- ``bash``/``sh``: every ``cykafka ...`` line is parsed by the real CLI parser (every flag
  exists, every value is accepted), and the README's are run, bounded: into the embedded
  broker when they name no cluster, else into the session's Apache Kafka node, which
  stands in for the reader's ``broker:9092`` (docs/import.md says so); every ``./run X``
  is one of ``./run``'s commands; every ``pip install`` names an extra ``pyproject.toml``
  has and the version being built; every other program is one this list names as not
  cykafka's (:data:`OTHER_PROGRAMS`).
- Blocks without a language, or ``text``: a synopsis (or ``--help``) names only flags its
  command's parser has, and only values among their choices (``test_docs.py`` checks
  that the synopses name every flag); a block of cykafka's output (a summary, a warning,
  an error) has only labels and words that string literals of the source print.  Other
  blocks of the kind are left as they are.
"""

from __future__ import annotations

import ast
import builtins
import functools
import gzip
import inspect
import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.cli import child_env, cykafka_command

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = ROOT / "docs" / "examples"

#: The address the docs write for "your cluster", and what the tests put in its place.
READER_CLUSTER = "broker:9092"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    info: str  # the rest of the opening fence's line: a directive's argument
    body: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    # A fence may be indented (inside a list item): its closing fence is too.
    fence = re.compile(r"^([ \t]*)(`{3,})([^\s`]*)([^\n]*)\n(.*?)^\1\2[ \t]*$", flags=re.S | re.M)
    for page in PAGES:
        text = page.read_text()
        for m in fence.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = str(page.relative_to(ROOT))
            body = textwrap.dedent(m.group(5))
            out.append(Block(where, line, m.group(3), m.group(4).strip(), body))
    return out


BLOCKS = _blocks()

#: Sphinx's and MyST's directives: the docs build runs or renders them, warnings as errors.
DIRECTIVES = {
    "{eval-rst}",
    "{toctree}",
    "{include}",
    "{literalinclude}",
    "{program-output}",
    "{command-output}",
    "{doctest}",
    "{markdown-output}",
}

#: Python fragments that need a Spark deployment the docs cannot start while the site
#: builds (a standalone master and worker, a Spark Connect server):
#: tests/spark/test_docs_deployments.py runs them after their page's shell blocks (it
#: needs Spark, so ``./run tests unit`` leaves it out); here each compiles and its cykafka
#: calls bind.
DEPLOYMENT_FRAGMENTS = {
    'spark = SparkSession.builder.master("spark://127.0.0.1:7077").getOrCreate()',
    'spark = SparkSession.builder.remote("sc://127.0.0.1:15002").getOrCreate()',
    'writer = kafka_batch_writer("events", bootstrap_servers="127.0.0.1:PORT",',
}

#: Programs of shell blocks that are not cykafka's (Spark's launchers, a virtualenv's own
#: tools, Debian's, and the tools of docs/tansu.md's notes on the embedded broker).
OTHER_PROGRAMS = {
    "spark-class",
    "spark-submit",
    "python -m venv",
    "env/bin/venv-pack",
    "openssl",
    "su",
    "psql",
    "D=$(mktemp",
    "-subj",  # the continuation of docs/tansu.md's openssl line
    "-o",  # the continuation of docs/tansu.md's pg_ctl line
    "&&",
}


def _commands(body: str) -> list[str]:
    """The shell commands of a block: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _free_names(code: str) -> set[str]:
    """Names a block loads and neither binds nor gets from builtins."""
    tree = ast.parse(code)
    bound, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                bound |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound - set(dir(builtins))


def _lines(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip()]


def _run_by_the_docs_build() -> set[str]:
    """docs/examples scripts a page runs while the site builds."""
    return {
        name
        for b in BLOCKS
        if b.lang in ("{program-output}", "{command-output}")
        for name in re.findall(r"examples/([\w.-]+\.(?:py|sh))", b.info)
    }


def _excerpt_of(block: str) -> list[str]:
    want = _lines(block)
    found = []
    for script in sorted(EXAMPLES.glob("*.py")):
        have = _lines(script.read_text())
        if any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)):
            found.append(script.name)
    return found


def _by_kind(*langs: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang in langs]


def test_every_block_is_of_a_kind_this_test_proves() -> None:
    known = DIRECTIVES | {"python", "bash", "sh", "", "text"}
    assert BLOCKS
    strange = [(b.where, b.lang) for b in BLOCKS if b.lang not in known]
    assert not strange, f"a block of a language this test does not prove: {strange}"


def test_the_files_the_directives_name_exist() -> None:
    missing, named = [], 0
    for b in _by_kind("{literalinclude}", "{program-output}", "{command-output}"):
        for name in re.findall(r"examples/[\w.-]+", b.info):
            named += 1
            if not (ROOT / "docs" / name).is_file():
                missing.append((b.where, name))
    assert named and not missing, missing


def _excerpt_run_by_the_docs_build(block: Block) -> list[str]:
    return sorted(set(_excerpt_of(block.body)) & _run_by_the_docs_build())


@pytest.mark.parametrize("block", _by_kind("python"), ids=lambda b: b.where)
def test_every_python_block_is_run_by_the_docs_build_or_runs_alone(block: Block) -> None:
    """An excerpt of a script a page runs is proven by the docs build; a block that
    uses names from outside it must be one (or a Spark deployment's fragment, run by
    tests/spark/test_docs_deployments.py: here compiled, its cykafka calls bound); the
    rest are run by the test below."""
    compile(block.body, block.where, "exec")
    if _excerpt_run_by_the_docs_build(block):
        return
    first = block.body.strip().splitlines()[0]
    if first in DEPLOYMENT_FRAGMENTS:
        _bind_cykafka_calls(block)
        return
    assert not _free_names(block.body), (
        f"{block.where} uses {sorted(_free_names(block.body))} from outside the block and "
        "is no excerpt of a docs/examples script a page runs: make it one, or self-contained"
    )


#: The sections of docs/spark.md whose blocks tests/spark/test_docs_deployments.py runs.
RUN_BY_THE_SPARK_TESTS = ("## Deployments", "## Structured Streaming")


def test_the_deployment_fragments_are_the_ones_the_spark_tests_run() -> None:
    """Each fragment left to tests/spark is in a section that test runs, so it is run."""
    found = {}
    for b in _by_kind("python"):
        first = b.body.strip().splitlines()[0]
        if first in DEPLOYMENT_FRAGMENTS:
            above = (ROOT / b.page).read_text().splitlines()[: b.line]
            found[first] = (b.page, next(ln for ln in reversed(above) if ln.startswith("## ")))
    assert set(found) == DEPLOYMENT_FRAGMENTS, sorted(DEPLOYMENT_FRAGMENTS - set(found))
    wrong = {
        k: v
        for k, v in found.items()
        if v[0] != "docs/spark.md" or v[1] not in RUN_BY_THE_SPARK_TESTS
    }
    assert not wrong, wrong


def _bind_cykafka_calls(block: Block) -> None:
    import cykafka.spark

    calls = 0
    for node in ast.walk(ast.parse(block.body)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        fn = getattr(cykafka.spark, node.func.id, None)
        if fn is None:
            continue
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is not None:
                kwargs[kw.arg] = None
            else:  # **{"kafka.bootstrap.servers": ...}
                assert isinstance(kw.value, ast.Dict), ast.dump(kw.value)
                kwargs.update({ast.literal_eval(k): None for k in kw.value.keys if k})
        inspect.signature(fn).bind(*[None] * len(node.args), **kwargs)
        calls += 1
    assert calls, f"{block.where}: no cykafka call to check"


RUN_HERE = [
    b
    for b in _by_kind("python")
    if not _free_names(b.body) and not _excerpt_run_by_the_docs_build(b)
]


def test_some_python_blocks_run_here() -> None:
    assert RUN_HERE, "every self-contained block became an excerpt: drop the test below"


@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.where)
def test_every_other_python_block_runs(block: Block, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(block.body)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=child_env(),
    )
    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    for name in re.findall(r'pytest_plugins = \["([\w.]+)"\]', block.body):
        __import__(name)  # a conftest's line: the plugin it names imports


SHELL = [(b, c) for b in _by_kind("bash", "sh") for c in _commands(b.body)]


def _run_commands() -> set[str]:
    text = (ROOT / "run").read_text()
    cases = text[text.index('case "$cmd" in') :]
    return {
        w for label in re.findall(r"^  ([\w|]+)\)$", cases, flags=re.M) for w in label.split("|")
    }


def _cli_argv(command: str) -> list[str]:
    argv = shlex.split(command)
    assert argv[0] == "cykafka", command
    return argv[1:]


def test_every_shell_command_is_one_this_test_knows() -> None:
    unknown = []
    for block, command in SHELL:
        if command.startswith(("cykafka ", "./run ", "pip install ", "env/bin/pip install ")):
            continue
        if command.startswith(("sudo apt-get install ", "pytest -p ", "python bench/")):
            continue
        bare = re.sub(r"^(?:[A-Z_]+=[^\s$]+\s+)+(?=\S)", "", command)  # VAR=value program ...
        if any(bare.startswith(p) for p in OTHER_PROGRAMS):
            continue
        unknown.append((block.where, command))
    assert not unknown, unknown


@pytest.mark.parametrize(
    "command", [c for _, c in SHELL if c.startswith("cykafka ")], ids=lambda c: c[:60]
)
def test_every_cykafka_command_parses_with_the_real_cli(command: str) -> None:
    from cykafka.cli.main import build_parser

    try:
        args = build_parser().parse_args(_cli_argv(command))
    except SystemExit as e:
        pytest.fail(f"cykafka refuses {command!r} (exit {e.code})")
    assert getattr(args, "handler", None) is not None, command


def test_every_run_command_is_one_of_runs() -> None:
    have = _run_commands()
    assert {"demo", "tests", "docs", "lint", "wheel", "bench"} <= have, have
    used = [c for _, c in SHELL if c.startswith("./run ")]
    assert used
    for command in used:
        assert shlex.split(command)[1] in have, (command, sorted(have))


def test_every_pip_install_names_what_the_project_builds() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(meta["optional-dependencies"])
    for _, command in SHELL:
        if "pip install" not in command:
            continue
        argv = shlex.split(command)
        for arg in argv[2 : argv.index("&&") if "&&" in argv else None]:
            if arg.startswith("-") or arg == ":all:" or arg.startswith(("pandas", "venv-pack")):
                continue
            m = re.fullmatch(r"(\.|dist/[^\[]+\.whl)(?:\[(\w+)\])?", arg)
            assert m, (command, arg)
            if m.group(1) != ".":
                name, version = Path(m.group(1)).name.split("-")[:2]
                assert (name, version) == (meta["name"], meta["version"]), command
            assert m.group(2) is None or m.group(2) in extras, (command, sorted(extras))


def test_the_apt_packages_are_the_ones_run_installs() -> None:
    run = (ROOT / "run").read_text()
    for _, command in SHELL:
        if command.startswith("sudo apt-get install "):
            for pkg in shlex.split(command)[3:]:
                assert f"apt-get install -y -qq {pkg}" in run, command


def test_the_pytest_plugin_and_bench_scripts_named_exist() -> None:
    import importlib.util

    for _, command in SHELL:
        argv = shlex.split(command)
        if argv[:2] == ["pytest", "-p"]:
            assert importlib.util.find_spec(argv[2]) is not None, command
        if argv[0] == "python" and argv[1].startswith("bench/"):
            assert (ROOT / argv[1]).is_file(), command
            help_text = subprocess.run(
                [sys.executable, str(ROOT / argv[1]), "--help"],
                capture_output=True,
                text=True,
                timeout=120,
                env=child_env(),
            ).stdout
            for flag in (a for a in argv[2:] if a.startswith("--")):
                assert flag in help_text, (command, flag)


# -- the README's commands, run --------------------------------------------------------

README_COMMANDS = [c for b, c in SHELL if b.page == "README.md" and c.startswith("cykafka ")]


def _orders(path: Path) -> int:
    rows = [f"{i},user-{i % 7},{i * 3}" for i in range(300)]
    path.write_text("id,user,amount\n" + "\n".join(rows) + "\n")
    return len(rows)


def _run(command: str, cwd: Path, bootstrap: str = "") -> subprocess.CompletedProcess[str]:
    argv = _cli_argv(command)
    if bootstrap:  # the session's Kafka stands in for the reader's cluster
        argv = [bootstrap if a == READER_CLUSTER else a for a in argv]
    return subprocess.run(
        [*cykafka_command(*argv), *(["--no-progress"] if argv[0] == "import" else [])],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=child_env(),
    )


def test_the_readme_shows_three_commands() -> None:
    assert [shlex.split(c)[:2] for c in README_COMMANDS] == [
        ["cykafka", "import"],
        ["cykafka", "import"],
        ["cykafka", "verify"],
    ], README_COMMANDS


@pytest.mark.broker  # the first starts the embedded broker
def test_the_readmes_import_into_the_embedded_broker_runs(tmp_path: Path) -> None:
    command = README_COMMANDS[0]
    assert READER_CLUSTER not in command and " -b " not in command
    n = _orders(tmp_path / "orders.csv")
    done = _run(command, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"delivered   {n:,}" in done.stdout and "OK: every row was delivered" in done.stdout


def test_the_readmes_exactly_once_import_and_verify_run(kafka: Any, tmp_path: Path) -> None:
    from support.consume import read_back

    exactly_once, verify = README_COMMANDS[1], README_COMMANDS[2]
    (tmp_path / "logs").mkdir()
    want = []
    for month in ("01", "02"):
        rows = [{"month": month, "n": i} for i in range(200)]
        want += rows
        with gzip.open(tmp_path / "logs" / f"2024-{month}.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    topic = shlex.split(exactly_once)[shlex.split(exactly_once).index("-t") + 1]
    # The reader's cluster holds the topic (an import into a cluster creates none
    # unless told to: --partitions N).
    if topic in kafka.list_topics():
        kafka.delete_topic(topic)
    kafka.create_topic(topic, partitions=3)
    done = _run(exactly_once, tmp_path, kafka.bootstrap_servers)
    assert done.returncode == 0, done.stdout + done.stderr
    got = [
        json.loads(r.value)
        for recs in read_back(kafka.bootstrap_servers, topic).values()
        for r in recs
    ]
    assert sorted(got, key=json.dumps) == sorted(want, key=json.dumps)  # each row once

    # verify compares orders.csv with the topic it was imported into: that import is
    # this test's setup (the README's first line names no cluster).
    n = _orders(tmp_path / "orders.csv")
    vtopic = shlex.split(verify)[shlex.split(verify).index("-t") + 1]
    if vtopic in kafka.list_topics():
        kafka.delete_topic(vtopic)
    kafka.create_topic(vtopic, partitions=3)
    setup = _run(
        f"cykafka import orders.csv -t {vtopic} -b {READER_CLUSTER} --key-field user",
        tmp_path,
        kafka.bootstrap_servers,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    checked = _run(verify, tmp_path, kafka.bootstrap_servers)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{n:,}" in checked.stdout, checked.stdout
    assert "OK: the topic holds every record exactly once, in order" in checked.stdout


# -- blocks without a language, or text: synopses and cykafka's output -----------------

#: A line of a synopsis or of ``--help`` (``usage: cykafka import ...``): the command,
#: or a flag of the top-level parser.
SYNOPSIS_LINE = re.compile(r"^(?:usage: )?cykafka (--[\w-]+|[a-z][\w-]*)(?=\s|$)")
#: A line cykafka prints: a command's or the library's messages, an exception of its.
OUTPUT_LINE = re.compile(r"^cykafka(?: [a-z][\w-]*)?:\s|^cykafka\.[\w.]+Error: ")
#: Text in cykafka's output that another program wrote: the check leaves it out.
NOT_CYKAFKAS = {
    "No module named": "Python's ImportError, in the executors' Python, quoted in the error",
}

TEXT_BLOCKS = _by_kind("", "text")


def _synopses_of(block: Block) -> list[tuple[str, str]]:
    """(command, text): each synopsis line with the indented lines after it."""
    out: list[tuple[str, str]] = []
    for line in block.body.splitlines():
        m = SYNOPSIS_LINE.match(line)
        if m:
            out.append((m[1], line))
        elif out and line.startswith((" ", "\t")):
            out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
        elif line.strip():
            out.append(("", ""))  # the synopsis ended
    return [(cmd, text) for cmd, text in out if cmd]


SYNOPSIS_BLOCKS = [b for b in TEXT_BLOCKS if _synopses_of(b)]
OUTPUT_BLOCKS = [
    b
    for b in TEXT_BLOCKS
    if b not in SYNOPSIS_BLOCKS and any(OUTPUT_LINE.match(ln) for ln in b.body.splitlines())
]


def test_some_text_blocks_are_synopses_or_output() -> None:
    assert len(SYNOPSIS_BLOCKS) >= 3 and len(OUTPUT_BLOCKS) >= 3, (
        [b.where for b in SYNOPSIS_BLOCKS],
        [b.where for b in OUTPUT_BLOCKS],
    )


def _flags_of(parser: Any) -> dict[str, Any]:
    return {s: a for a in parser._actions for s in a.option_strings}


@pytest.mark.parametrize("block", SYNOPSIS_BLOCKS, ids=lambda b: b.where)
def test_every_flag_a_synopsis_names_is_the_parsers(block: Block) -> None:
    """Each flag a synopsis names is one its command's parser has, and each value it
    lists as ``a|b|c`` is one of the flag's choices (test_docs.py checks that the pages'
    synopses together name every flag: this checks each block, the README's too)."""
    import argparse

    from cykafka.cli.main import build_parser

    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    wrong = []
    for cmd, text in _synopses_of(block):
        if cmd.startswith("--"):
            parser, text = top, text.replace(f"cykafka {cmd}", "", 1)
            wrong += [] if cmd in _flags_of(top) else [cmd]
        else:
            if cmd not in sub.choices:
                wrong.append(f"cykafka {cmd}: no such command")
                continue
            parser = sub.choices[cmd]
        flags = _flags_of(parser)
        for flag in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text):
            if flag not in flags:
                wrong.append(f"cykafka {cmd} {flag}: no such flag")
        for flag, values in re.findall(r"(--?[\w-]+)[ =]([\w.+-]+(?:\|[\w.+-]+)+)", text):
            choices = getattr(flags.get(flag), "choices", None)
            if choices is not None:
                wrong += [
                    f"cykafka {cmd} {flag} {v}: not a choice {sorted(choices)}"
                    for v in values.split("|")
                    if v not in choices
                ]
    assert not wrong, f"{block.where}: {wrong}"


SOURCES = [
    *sorted((ROOT / "src" / "cykafka").rglob("*.py")),
    *sorted((ROOT / "src" / "cykafka").rglob("*.pyx")),
    *sorted((ROOT / "ext").rglob("*.pyx")),
    *sorted((ROOT / "ext").rglob("*.pxi")),
]
#: A ``%`` conversion or a ``{...}`` field: where a message's values go.
_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdifgrxXeEc]|\{[^{}]*\}")


def _pieces(node: ast.expr) -> list[str | None]:
    """A string literal's text, with None where a value goes in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        out: list[str | None] = []
        at = 0
        for m in _FIELD.finditer(node.value):
            out += [node.value[at : m.start()].replace("%%", "%"), None]
            at = m.end()
        return [*out, node.value[at:].replace("%%", "%")]
    if isinstance(node, ast.JoinedStr):
        return [
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
            for v in node.values
        ]
    return []


@functools.cache
def _literals() -> tuple[list[tuple[str, re.Pattern[str]]], set[str]]:
    """Every string literal of cykafka's source (Python and Cython; adjacent ones joined,
    as the compiler joins them) as (its longest fixed piece in lower case, a pattern of
    its fixed pieces with a group where each value goes), and every fixed piece."""
    patterns, every_piece = [], set()
    todo = [path.read_text() for path in SOURCES]
    while todo:
        for run in _string_runs(todo.pop()):
            try:
                node = ast.parse("(" + " ".join(run) + ")", mode="eval").body
            except SyntaxError:
                continue  # a Cython literal (c"..."), or bytes
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "\ndef " in node.value:
                    todo.append(node.value)  # code shipped as source: its messages too
            pieces = _pieces(node)
            while pieces and not pieces[0]:
                pieces.pop(0)  # a value at either end matches anything: left out
            while pieces and not pieces[-1]:
                pieces.pop()
            fixed = [p for p in pieces if p]
            every_piece.update(fixed)
            if sum(len(p.strip()) for p in fixed) < 3:
                continue  # a comma, a space: it would cover any line
            pattern = "".join("(.+?)" if p is None else re.escape(p) for p in pieces if p != "")
            # A message may start a sentence with a literal's word capitalized.
            patterns.append((max(fixed, key=len).strip().lower(), re.compile(pattern, re.I)))
    return patterns, every_piece


def _string_runs(source: str) -> list[list[str]]:
    """The string literals of ``source`` as written, adjacent ones together."""
    import io
    import tokenize

    lines = source.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12: f-strings
    fstring_end = getattr(tokenize, "FSTRING_END", None)  # are tokens of their own
    runs: list[list[str]] = [[]]
    depth, opened = 0, 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            at = starts[tok.start[0] - 1] + tok.start[1]
            if fstring_start is not None and tok.type == fstring_start:
                depth, opened = depth + 1, at if depth == 0 else opened
            elif fstring_end is not None and tok.type == fstring_end:
                depth -= 1
                if depth == 0:
                    runs[-1].append(source[opened : starts[tok.end[0] - 1] + tok.end[1]])
            elif depth:
                continue
            elif tok.type == tokenize.STRING:
                runs[-1].append(tok.string)
            elif tok.type not in (tokenize.NL, tokenize.COMMENT) and runs[-1]:
                runs.append([])
    except (tokenize.TokenError, SyntaxError):
        pass  # what was read before a Cython construct tokenize refuses still counts
    return [r for r in runs if r]


#: A word of a line that is a value, not text the code wrote: it has a digit, a path's or
#: an address's punctuation, or quotes.
_VALUE = re.compile(r"[\d/.:#=@_'\"…]")


#: A summary line's label: two spaces, the label, two or more spaces, the value.
_LABEL = re.compile(r"^  ([a-z][a-z -]*?) {2,}(?=\S)")


def _not_printed_by_cykafka(
    line: str, patterns: list[Any], pieces: set[str], quoted: frozenset[str] = frozenset()
) -> list[str]:
    """The words of ``line`` that no literal of the source accounts for: each word that is
    not a value must lie in the fixed text of a literal that matches the line there, or
    be a name the block quotes elsewhere (a topic); a summary line's label must begin a
    literal, padded as printed."""
    label = _LABEL.match(line)
    padded = label.group() if label else ""
    if label and not any(p.startswith(padded) and p[len(padded) :][:1] != " " for p in pieces):
        return [label[1]]
    for phrase in NOT_CYKAFKAS:
        line = line.replace(phrase, " " * len(phrase))
    covered, lower = [False] * len(line), line.lower()
    for longest, pattern in patterns:
        if longest not in lower:
            continue
        for m in pattern.finditer(line):
            held = {i for g in range(1, (m.lastindex or 0) + 1) for i in range(*m.span(g))}
            for i in range(*m.span()):
                covered[i] = covered[i] or i not in held
    missing = []
    for w in re.finditer(r"\S+", line):
        word = w.group().strip("()[]{};,.!?`")
        if not word or _VALUE.search(word) or word in quoted:
            continue
        start = w.start() + w.group().index(word)
        if not all(covered[start : start + len(word)]):
            missing.append(word)
    return missing


def test_a_drifted_output_line_is_found() -> None:
    patterns, pieces = _literals()
    same = "  delivered   1,234"
    assert _not_printed_by_cykafka(same, patterns, pieces) == []
    assert _not_printed_by_cykafka("  shipped   1,234", patterns, pieces) == ["shipped"]


@pytest.mark.parametrize("block", OUTPUT_BLOCKS, ids=lambda b: b.where)
def test_every_output_line_is_one_cykafka_prints(block: Block) -> None:
    """A block of cykafka's output (a summary, a warning, an error) says only what the
    code still prints: its labels and words are in the source's string literals, around
    the values of this run."""
    patterns, pieces = _literals()
    quoted = frozenset(re.findall(r"'([^'\s]+)'", block.body))
    wrong = {
        line: missing
        for line in block.body.splitlines()
        if line.strip() and (missing := _not_printed_by_cykafka(line, patterns, pieces, quoted))
    }
    assert not wrong, f"{block.where}: words cykafka does not print: {wrong}"
