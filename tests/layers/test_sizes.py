"""The package stays readable in pieces: no module of ``src/cykafka`` over 600 lines, no
function body over 100 lines of code (its signature, docstring, blank lines and comment
lines aside; a nested function counts in its parent too, as a reader meets it there)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import cykafka

SRC = Path(cykafka.__file__).resolve().parent
MODULE_LINES = 600
FUNCTION_CODE_LINES = 100


def _code_lines(source: str) -> set[int]:
    """The numbers of the lines that hold code: not blank, not only a comment."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT):
            continue
        if tok.type in (tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def long_functions(source: str, limit: int = FUNCTION_CODE_LINES) -> list[tuple[str, int]]:
    """(name, lines of code) of each function of ``source`` over ``limit``."""
    code = _code_lines(source)
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
            and len(body) > 1
        ):
            body = body[1:]  # the docstring
        span = set(range(body[0].lineno, (node.end_lineno or node.lineno) + 1))
        n = len(span & code)
        if n > limit:
            found.append((f"{node.name} (line {node.lineno})", n))
    return found


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert not long, f"modules over {MODULE_LINES} lines: {long}"


def test_no_function_is_over_100_lines_of_code() -> None:
    long = {
        str(p.relative_to(SRC)): found
        for p in _sources()
        if (found := long_functions(p.read_text()))
    }
    assert not long, f"functions over {FUNCTION_CODE_LINES} lines of code: {long}"


def test_the_function_count_sees_code_and_only_code() -> None:
    body = "".join(f"    x{i} = {i}\n    # a comment\n\n" for i in range(101))
    source = f'def f():\n    """A docstring\n\n    of lines."""\n{body}'
    assert long_functions(source) == [("f (line 1)", 101)]
    assert long_functions(source, limit=101) == []
