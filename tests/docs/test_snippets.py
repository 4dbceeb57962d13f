"""Every fenced code block of README.md and docs/*.md is proven, as the reader sees it.

- Sphinx directives (``{literalinclude}``, ``{program-output}``, ``{doctest}``, ...) are run
  by ``./run docs`` (warnings as errors): here, the files they name exist.
- ``python``: a block that needs nothing from outside it is executed as it is; one that
  uses names it does not define is a contiguous excerpt of a ``docs/examples`` script that
  a page runs while the site builds; the Spark deployment fragments (a standalone cluster,
  a Spark Connect server: :data:`DEPLOYMENT_FRAGMENTS`) compile, and each call of
  cykafka's in them binds to the real signature.
- ``bash``/``sh``: every ``cykafka ...`` line is parsed by the real CLI parser (every flag
  exists, every value is accepted), and the README's are run, bounded: into the embedded
  broker when they name no cluster, else into the session's Apache Kafka node, which
  stands in for the reader's ``broker:9092`` (docs/import.md says so); every ``./run X``
  is one of ``./run``'s commands; every ``pip install`` names an extra ``pyproject.toml``
  has and the version being built; every other program is one this list names as not
  cykafka's (:data:`OTHER_PROGRAMS`).
- Blocks without a language, or ``text``, are synopses (``test_docs.py`` checks their flags)
  or output, nothing to run.
"""

from __future__ import annotations

import ast
import builtins
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
#: builds (a standalone master and worker, a Spark Connect server): tests/spark runs those
#: deployments; here the fragment compiles and its cykafka calls bind.
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
    uses names from outside it must be one (or a Spark deployment's fragment: compiled,
    its cykafka calls bound); the rest are run by the test below."""
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
