"""The core package's map: subpackages by role, imports pointing down only, no import circle.

Every import inside core/tallyboard counts, those inside functions too (a lazy import is still a
dependency). The top-level ``tallyboard/__init__.py`` is the public facade over everything below
the CLI, and ``__main__`` runs the CLI: only the CLI imports the facade (for ``__version__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core" / "tallyboard"

# Floors, lowest first: a module imports only from lower floors or from its own subpackage.
FLOORS = {
    "values": 0,
    "paths": 0,
    "warn": 0,
    "extras": 0,
    "plugin": 1,
    "ranks": 1,
    "records": 2,
    "testing": 3,
    "reading": 3,
    "faces": 3,
    "monitor": 3,
    "board": 4,
    "cli": 5,
    "ops": 4,  # tallyboard.ops: MindSpore's import path for the operators of faces/ops.py
}
FACADE = {"tallyboard", "tallyboard.__main__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> set[str]:
    """Modules of the package that ``path`` imports (``from X import y`` counts ``X.y`` when
    that is a module, else ``X``)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out.update(t for t in targets if t == "tallyboard" or t.startswith("tallyboard."))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in CORE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for target in _imports(path, name):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]  # an attribute of a module: the module
            if target in modules and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


def _floor(module: str) -> int:
    return FLOORS[module.split(".")[1]]


def test_every_core_module_sits_on_a_floor():
    assert {m.split(".")[1] for m in _graph() if m not in FACADE} == set(FLOORS)


def test_imports_point_down_or_stay_within_their_subpackage():
    wrong = []
    for module, deps in _graph().items():
        if module in FACADE:
            continue
        for dep in deps:
            if dep in FACADE:
                if _floor(module) < max(FLOORS.values()):  # only the CLI stands above it
                    wrong.append(f"{module} imports the facade {dep}")
            elif dep.split(".")[1] != module.split(".")[1] and _floor(dep) >= _floor(module):
                wrong.append(f"{module} (floor {_floor(module)}) -> {dep} (floor {_floor(dep)})")
    assert not wrong, "\n".join(sorted(wrong))


def test_the_import_graph_has_no_circle():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    circles = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                circles.append(" -> ".join([*path[path.index(dep) :], dep]))
            elif dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not circles, "\n".join(circles)


def test_the_top_of_the_package_holds_few_modules():
    top = [p.name for p in CORE.iterdir() if p.suffix == ".py"]
    assert len(top) <= 12, sorted(top)


def test_the_graph_sees_a_circle_when_there_is_one(tmp_path, monkeypatch):
    # The walker itself: two modules importing each other inside functions form a circle.
    pkg = tmp_path / "tallyboard"
    (pkg / "values").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "values" / "__init__.py").write_text("")
    (pkg / "values" / "a.py").write_text("def f():\n    from tallyboard.values import b\n")
    (pkg / "values" / "b.py").write_text("from . import a\n")
    monkeypatch.setattr(__import__(__name__), "CORE", pkg)
    try:
        test_the_import_graph_has_no_circle()
    except AssertionError as exc:
        assert "tallyboard.values.a -> tallyboard.values.b -> tallyboard.values.a" in str(exc)
    else:
        raise AssertionError("a circle went unseen")
