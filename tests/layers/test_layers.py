"""The package's imports point one way: front doors -> producer -> core -> native.

Every import statement of ``src/cykafka`` is read with ``ast`` (module level and inside
functions), so a lazy import inside a function cannot hide a circle.  Imports under
``if TYPE_CHECKING:`` never run, but they are dependencies all the same (the module
cannot be read, typed or moved without the other): the import graph counts them (for
circles, layers, front doors and the C codecs' one face), and messages mark them
``(type-only)``.  Importing ``a.b.c`` runs ``a`` and ``a.b``
too, so an import of a module counts as one of each package above it, except the
importer's own ancestors (Python has those initialised first).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import cykafka

SRC = Path(cykafka.__file__).resolve().parent

# Lower number = lower layer.  A module may import its own layer or lower ones.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("cykafka._native", "cykafka._codecs", "cykafka._load")),
    (
        1,
        (
            "cykafka.config",
            "cykafka.presets",
            "cykafka.partitioning",
            "cykafka.cluster",
        ),
    ),
    (2, ("cykafka.explain", "cykafka.inspector", "cykafka._arrow")),
    # A layer of its own, beside the core: what it may import and who may import it are
    # narrower than a rank says (test_the_launchers_stand_apart).
    (2, ("cykafka.launchers", "cykafka.broker")),
    (3, ("cykafka.producer", "cykafka.serialized")),
    (4, ("cykafka.testing", "cykafka.schema_registry", "cykafka.inputs")),
    (5, ("cykafka.importer", "cykafka.spark", "cykafka.verify")),
    (6, ("cykafka.cli",)),
]


def _modules(root: Path = SRC, package: str = "cykafka") -> dict[str, Path]:
    mods = {}
    # The compiled modules count through their stubs (_native.pyi, _codecs.pyi).
    for p in [*root.rglob("*.py"), *root.rglob("*.pyi")]:
        if p.suffix == ".pyi" and p.with_suffix(".py").exists():
            continue
        parts = [package, *p.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


class _Imports(ast.NodeVisitor):
    """Every import statement of a module, each with whether only a type checker runs
    it (it sits under ``if TYPE_CHECKING:``)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
        self._type_only = False

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            outer, self._type_only = self._type_only, True
            for n in node.body:
                self.visit(n)
            self._type_only = outer
            for n in node.orelse:
                self.visit(n)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.nodes.append((node, self._type_only))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.nodes.append((node, self._type_only))


#: module -> {module it imports: True when every such import is type-only}
Graph = dict[str, dict[str, bool]]


def _graph(mods: dict[str, Path] | None = None) -> Graph:
    mods = _modules() if mods is None else mods
    graph: Graph = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        ancestors = {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)}
        if is_pkg:
            ancestors.add(mod)
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        out: dict[str, bool] = {}
        for node, type_only in visitor.nodes:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    pkg = ".".join(base + ([node.module] if node.module else []))
                else:
                    pkg = node.module or ""
                names = [
                    f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in mods else pkg for a in node.names
                ]
            for name in names:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):
                    target = ".".join(parts[:i])
                    if target in mods and target not in ancestors and target != mod:
                        out[target] = out.get(target, True) and type_only
        graph[mod] = out
    return graph


def _edge(graph: Graph, mod: str, dep: str) -> str:
    return f"{mod} imports {dep}" + (" (type-only)" if graph[mod][dep] else "")


def _layer(mod: str) -> int:
    if mod == "cykafka":
        return 3  # the package's face hands out the producer and what is under it
    best = None
    for rank, prefixes in LAYERS:
        for p in prefixes:
            if mod == p or mod.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (rank, len(p))
    assert best is not None, f"{mod} is in no layer: add it to LAYERS"
    return best[0]


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _circles(graph: Graph) -> list[str]:
    """Each circle as its modules and the imports that tie them."""
    return [
        " <-> ".join(c)
        + ": "
        + "; ".join(_edge(graph, m, d) for m in c for d in sorted(graph[m]) if d in c)
        for c in _cycles(graph)
    ]


def test_no_import_circle() -> None:
    circles = _circles(_graph())
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_imports_only_point_down() -> None:
    graph = _graph()
    upward = sorted(
        f"{_edge(graph, mod, dep)}: layer {_layer(mod)} -> {_layer(dep)}"
        for mod, deps in graph.items()
        for dep in deps
        if _layer(dep) > _layer(mod)
    )
    assert not upward, "\n".join(upward)


#: The front doors: each stands on the layers below, never on another front door.
FRONT_DOORS = ("cykafka.importer", "cykafka.spark", "cykafka.verify")


def _door(mod: str) -> str | None:
    return next((d for d in FRONT_DOORS if mod == d or mod.startswith(d + ".")), None)


def test_front_doors_do_not_import_each_other() -> None:
    """What the import, Spark and verify share lives below them: about a cluster (topics,
    the progress topic, reading a log back, the committed view) in ``cykafka.cluster``;
    the input files as rows, which verify reads as the import does, in
    ``cykafka.inputs``."""
    graph = _graph()
    sideways = sorted(
        _edge(graph, mod, dep)
        for mod, deps in graph.items()
        for dep in deps
        if (a := _door(mod)) and (b := _door(dep)) and a != b
    )
    assert not sideways, "\n".join(sideways)


def test_the_c_codecs_have_one_python_face() -> None:
    """``cykafka._arrow`` is the one module that imports the C codecs; the rest take
    them from it, so a change to the compiled interface is met in one place."""
    through = sorted(
        mod
        for mod, deps in _graph().items()
        if "cykafka._codecs" in deps and mod != "cykafka._arrow"
    )
    assert not through, f"import cykafka._codecs directly: {through}"


def test_an_error_class_name_means_one_class() -> None:
    """``except KafkaError`` must not catch one thing or another by which module the
    name came from: each public exception class is defined once in the package."""
    where: dict[str, list[str]] = {}
    for mod, path in _modules().items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exception")):
                if not node.name.startswith("_"):
                    where.setdefault(node.name, []).append(mod)
    twice = {name: mods for name, mods in where.items() if len(mods) > 1}
    assert not twice, twice


def test_no_private_names_from_other_modules() -> None:
    """A module's ``_private`` names are its own: reaching into another module's privates
    is how circles start.  A private support module (``_native``, ``_codecs``, ``_arrow``,
    ``_admin`` ...) is private to the package, not to itself: what it shares it names
    without an underscore.  (Type-checking-only imports of a stub's aliases are not
    imports at run time and are not counted.)"""
    mods = _modules()
    reach = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for node, type_only in visitor.nodes:
            if type_only or not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = here[: len(here) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and f"{source}.{a.name}" not in mods:
                    reach.append(f"{mod}: from {source} import {a.name}")
    assert not reach, "\n".join(sorted(reach))


#: The launchers (and ``cykafka.broker``, the public face of the embedded one) stand on
#: the base alone; only the front doors, the CLI and the test kit start them.
LAUNCHERS = ("cykafka.launchers", "cykafka.broker")
LAUNCHERS_USE = (*LAUNCHERS, "cykafka.config", "cykafka.cluster")
LAUNCHERS_USED_BY = (*LAUNCHERS, *FRONT_DOORS, "cykafka.cli", "cykafka.testing")


def _within(mod: str, prefixes: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _launcher_breaches(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{mod} imports {dep}"
        for mod, deps in graph.items()
        for dep in deps
        if (_within(mod, LAUNCHERS) and not _within(dep, LAUNCHERS_USE))
        or (_within(dep, LAUNCHERS) and not _within(mod, LAUNCHERS_USED_BY))
    )


def test_the_launchers_stand_apart() -> None:
    """A launcher starts a process: it needs no producer, inspector or front door, and
    the producer and the core need no launcher (a broker to run is the caller's
    choice)."""
    breaches = _launcher_breaches(_graph())
    assert not breaches, "\n".join(breaches)


def test_the_launchers_check_sees_a_breach() -> None:
    """The checker itself: a launcher importing the producer or a front door, and the
    producer importing a launcher, are each found."""
    g = {
        "cykafka.launchers.tansu": {"cykafka.cluster.admin", "cykafka.producer"},
        "cykafka.launchers.kafka.cluster": {"cykafka.importer.job"},
        "cykafka.producer": {"cykafka.launchers.tansu"},
        "cykafka.cli.broker": {"cykafka.launchers.tansu"},
    }
    assert _launcher_breaches(g) == [
        "cykafka.launchers.kafka.cluster imports cykafka.importer.job",
        "cykafka.launchers.tansu imports cykafka.producer",
        "cykafka.producer imports cykafka.launchers.tansu",
    ]


def test_the_graph_sees_a_real_circle() -> None:
    """The checker itself: a circle through a lazy import is found."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(g) == [["a", "b", "c"]]


def test_the_graph_counts_type_only_imports(tmp_path: Path) -> None:
    """The checker itself: a circle closed by an import under ``if TYPE_CHECKING:`` is
    found and its message says which import is type-only; a run-time import of the
    same module elsewhere makes the edge a run-time one."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n"
    )
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from . import a\nelse:\n    from . import b\n"
        "def f():\n    from . import a\n"
    )
    graph = _graph(_modules(pkg, "pkg"))
    assert graph["pkg.b"] == {"pkg.a": True}
    assert graph["pkg.c"] == {"pkg.a": False, "pkg.b": False}
    assert _circles(graph) == [
        "pkg.a <-> pkg.b: pkg.a imports pkg.b; pkg.b imports pkg.a (type-only)"
    ]
