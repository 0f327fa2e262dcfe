"""The public surface a plugin may import (``tallyboard.plugin.public.PUBLIC``): the built-in
plugins and the example plugins import nothing else from tallyboard, every listed name exists
and has reference docs, and docs/plugins.md lists exactly these names."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from tallyboard.plugin.public import PUBLIC, is_public

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = sorted((ROOT / "plugins").glob("*/tallyboard_*/**/*.py"))
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/tallyboard_*/**/*.py"))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _core(module: str) -> bool:
    return module == "tallyboard" or module.startswith("tallyboard.")


def imports_outside(source: str, *, plugin_modules: bool) -> list[str]:
    """The names ``source`` takes from tallyboard that :data:`PUBLIC` does not list, as
    ``module.name`` (``plugin_modules``: also those from other ``tallyboard_*`` packages, as a
    third-party plugin would see them). Attribute uses of a public module count too
    (``paths.join`` after ``from tallyboard import paths``)."""

    def checked(module: str) -> bool:
        top = module.split(".")[0]
        return _core(module) or (plugin_modules and top.startswith("tallyboard_"))

    tree = ast.parse(source)
    bad: list[str] = []
    aliases: dict[str, str] = {}  # local name -> module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not checked(alias.name):
                    continue
                if not is_public(alias.name) and alias.name != "tallyboard":
                    bad.append(alias.name)
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not checked(node.module):
                continue
            for alias in node.names:
                if not is_public(node.module, alias.name):
                    bad.append(f"{node.module}.{alias.name}")
                full = f"{node.module}.{alias.name}"
                if _is_module(full):
                    aliases[alias.asname or alias.name] = full
    for node in ast.walk(tree):  # alias.attr(.attr...) chains on imported modules
        if not isinstance(node, ast.Attribute):
            continue
        chain: list[str] = []
        head: ast.expr = node
        while isinstance(head, ast.Attribute):
            chain.insert(0, head.attr)
            head = head.value
        if not isinstance(head, ast.Name) or head.id not in aliases:
            continue
        base = aliases[head.id]
        for cut in range(len(chain), -1, -1):  # the longest prefix that is a module
            module = ".".join([base, *chain[:cut]])
            if _is_module(module):
                if cut < len(chain) and not is_public(module, chain[cut]):
                    bad.append(f"{module}.{chain[cut]}")
                elif cut == len(chain) and not is_public(module) and module != "tallyboard":
                    bad.append(module)
                break
    return sorted(set(bad))


def test_the_import_check_finds_a_private_name_in_every_form() -> None:
    source = (
        "import tallyboard.records.lifecycle\n"
        "import tallyboard\n"
        "from tallyboard.faces.summary_writer import parse_sinks\n"
        "from tallyboard import paths, SummaryWriter\n"
        "from tallyboard.records import storage\n"
        "from tallyboard_tfevents.sink import TfeventsSink\n"
        "paths.join('a', 'b')\n"
        "paths.encodable('x')\n"
        "storage.create_unique\n"
        "tallyboard.values.type_name(3)\n"
        "tallyboard.values.to_float(3)\n"
    )
    assert imports_outside(source, plugin_modules=False) == [
        "tallyboard.faces.summary_writer.parse_sinks",
        "tallyboard.paths.encodable",
        "tallyboard.records.lifecycle",
        "tallyboard.values.type_name",
    ]
    assert "tallyboard_tfevents.sink.TfeventsSink" in imports_outside(source, plugin_modules=True)


@pytest.mark.parametrize("path", BUILTIN, ids=lambda p: str(p.relative_to(ROOT / "plugins")))
def test_builtin_plugins_import_only_public_core_names(path: Path) -> None:
    assert imports_outside(path.read_text(), plugin_modules=False) == [], (
        f"{path.relative_to(ROOT)} imports core names that tallyboard.plugin.public.PUBLIC "
        "does not list: make them public (and document them) or use a public twin"
    )


def test_example_plugins_import_only_public_names() -> None:
    assert len({p.parts[len(ROOT.parts) + 1] for p in EXAMPLES}) >= 2  # both examples
    for path in EXAMPLES:
        assert imports_outside(path.read_text(), plugin_modules=True) == [], path


def _documented(obj: object) -> bool:
    if hasattr(obj, "DESCRIPTOR"):  # a protobuf message class: TensorBoard's own, field for field
        return True
    if not (inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj)):
        return True  # a constant: documented by its module
    doc = getattr(obj, "__doc__", None) or ""
    name = getattr(obj, "__name__", "")
    return bool(doc.strip()) and not doc.startswith(f"{name}(")  # not a dataclass's signature


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_exists_and_has_a_docstring(module: str) -> None:
    mod = importlib.import_module(module)
    assert (mod.__doc__ or "").strip(), f"module {module} has no docstring"
    undocumented = []
    for name in PUBLIC[module]:
        assert hasattr(mod, name), f"{module}.{name} is listed as public but does not exist"
        if not _documented(getattr(mod, name)):
            undocumented.append(name)
    assert undocumented == [], f"{module}: public names without a docstring: {undocumented}"


def test_the_guide_lists_the_public_surface_as_the_code_does() -> None:
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text.split("## 12. What a plugin may import", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, re.M)
    listed = {module: tuple(re.findall(r"`(\w+)`", names)) for module, names in rows}
    assert listed == PUBLIC
