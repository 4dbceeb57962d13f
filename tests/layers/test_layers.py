"""The package's imports point one way: front doors -> producer -> core -> native.

Every import statement of ``src/cykafka`` is read with ``ast`` (module level and inside
functions; ``if TYPE_CHECKING:`` blocks aside, since they never run), so a lazy import
inside a function cannot hide a circle.  Importing ``a.b.c`` runs ``a`` and ``a.b`` too,
so an import of a module counts as one of each package above it, except the importer's
own ancestors (Python has those initialised first).
"""

from __future__ import annotations

import ast
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
    (3, ("cykafka.producer", "cykafka.serialized", "cykafka.broker", "cykafka.kafka_cluster")),
    (4, ("cykafka.testing", "cykafka.schema_registry", "cykafka.inputs")),
    (5, ("cykafka.importer", "cykafka.spark", "cykafka.verify")),
    (6, ("cykafka.cli",)),
]


def _modules() -> dict[str, Path]:
    mods = {}
    # The compiled modules count through their stubs (_native.pyi, _codecs.pyi).
    for p in [*SRC.rglob("*.py"), *SRC.rglob("*.pyi")]:
        if p.suffix == ".pyi" and p.with_suffix(".py").exists():
            continue
        parts = ["cykafka", *p.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


class _Imports(ast.NodeVisitor):
    def __init__(self) -> None:
        self.nodes: list[ast.Import | ast.ImportFrom] = []

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for n in node.orelse:
                self.visit(n)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.nodes.append(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.nodes.append(node)


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        ancestors = {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)}
        if is_pkg:
            ancestors.add(mod)
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        out: set[str] = set()
        for node in visitor.nodes:
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
                        out.add(target)
        graph[mod] = out
    return graph


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


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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


def test_no_import_circle() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_imports_only_point_down() -> None:
    graph = _graph()
    upward = sorted(
        f"{mod} (layer {_layer(mod)}) imports {dep} (layer {_layer(dep)})"
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
    sideways = sorted(
        f"{mod} imports {dep}"
        for mod, deps in _graph().items()
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
        for node in visitor.nodes:
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = here[: len(here) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and f"{source}.{a.name}" not in mods:
                    reach.append(f"{mod}: from {source} import {a.name}")
    assert not reach, "\n".join(sorted(reach))


def test_the_graph_sees_a_real_circle() -> None:
    """The checker itself: a circle through a lazy import is found."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(g) == [["a", "b", "c"]]
