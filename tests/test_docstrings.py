"""The faces' public methods have torch-grade docstrings, and every Example in them runs.

"Torch-grade": a one-line summary, then Google-style sections that a Sphinx site with napoleon
renders: ``Args:`` naming every parameter, ``Raises:`` where the call checks its input, and an
``Example:`` whose ``>>>`` lines run here as doctests, in a fresh directory (so ``runs/...``
lands there) and with their printed output compared.
"""

from __future__ import annotations

import doctest
import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from monitor_support import clean_registry  # noqa: F401 - autouse fixture
from plugin_methods import builtin_methods
from tallyboard import SummaryWriter, convert, monitor, read
from tallyboard.faces.summary_writer import FileWriter

WRITER_METHODS = [
    "get_logdir",
    "rank_sync",
    "sync",
    "export_scalars_to_json",
    "flush",
    "close",
    "emit",
    "add_value",
    "child",
]
#: Documented objects whose call checks nothing it could raise about.
NO_RAISES = {
    "SummaryWriter.get_logdir",
    "SummaryWriter.rank_sync",
    "FileWriter",
    "Aggregation",
    "Stat.get",
}


def _targets() -> dict[str, tuple[Any, str]]:
    """name -> (the object whose signature is documented, its docstring)."""
    out: dict[str, tuple[Any, str]] = {
        "SummaryWriter": (SummaryWriter, inspect.getdoc(SummaryWriter))
    }
    for name in [*sorted(builtin_methods()), *WRITER_METHODS]:
        fn = getattr(SummaryWriter, name)
        out[f"SummaryWriter.{name}"] = (fn, inspect.getdoc(fn))
    out["FileWriter"] = (FileWriter, inspect.getdoc(FileWriter))
    stat_add = monitor.Stat.__slots__["add"]  # a per-instance closure: documented in the slot
    out["Stat.add"] = (lambda v: None, stat_add)
    for name in ["Stat.get", "Stat.close"]:
        fn = getattr(monitor.Stat, name.split(".")[1])
        out[name] = (fn, inspect.getdoc(fn))
    for name in [
        "Stat",
        "Aggregation",
        "Event",
        "log_event",
        "register_event_handler",
        "unregister_event_handler",
        "TensorboardEventHandler",
    ]:
        obj = getattr(monitor, name)
        out[name] = (obj, inspect.getdoc(obj))
    out["read"] = (read, inspect.getdoc(read))
    out["convert"] = (convert, inspect.getdoc(convert))
    return out


TARGETS = _targets()
PLUGIN_FUNCTIONS = list(builtin_methods().values())


def _parameters(obj: Any) -> list[str]:
    if inspect.isclass(obj) and issubclass(obj, monitor.Aggregation):
        return []
    params = list(inspect.signature(obj).parameters.values())
    if obj in PLUGIN_FUNCTIONS:  # a plugin's function set as a method: its first is the writer
        params = params[1:]
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in params if p.name != "self" and p.kind not in kinds]


def _section(doc: str, title: str) -> str | None:
    found = re.search(rf"^{title}:\n((?:    .*\n|\n)+)", doc + "\n", re.MULTILINE)
    return None if found is None else found.group(1)


def test_every_face_method_is_covered():
    assert len(TARGETS) >= 45
    assert {f"SummaryWriter.{n}" for n in builtin_methods()} <= set(TARGETS)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_docstring_has_a_summary_args_raises_and_example(name):
    obj, doc = TARGETS[name]
    assert doc, f"{name} has no docstring"
    lines = doc.splitlines()
    assert len(lines) > 3 and not lines[1].strip(), f"{name}: one summary line, then a blank"
    assert len(lines[0]) <= 100, f"{name}: summary too long"
    params = _parameters(obj)
    if params:
        args = _section(doc, "Args")
        assert args is not None, f"{name}: no Args: section"
        listed = re.findall(r"^    (\w+):", args, re.MULTILINE)
        assert listed == params, f"{name}: Args lists {listed}, the signature has {params}"
    if name not in NO_RAISES:
        raises = _section(doc, "Raises")
        assert raises and re.search(r"^    [\w.]+:", raises, re.MULTILINE), f"{name}: no Raises"
    example = _section(doc, "Example")
    assert example and ">>> " in example, f"{name}: no Example: with >>> lines"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    _, doc = TARGETS[name]
    monkeypatch.chdir(tmp_path)
    test = doctest.DocTestParser().get_doctest(doc, {}, name, None, 0)
    assert test.examples, f"{name}: no example to run"
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner.run(test, out=out.append)
        _close_writers(test.globs)
    assert not runner.failures, f"{name}'s example failed:\n" + "".join(out)
    assert not [str(w.message) for w in caught], f"{name}'s example warns"


def _close_writers(globs: dict[str, Any]) -> None:
    """An example that stops before close() leaves its writer to the exit hook: close it here."""
    for value in globs.values():
        close: Callable[[], None] | None = getattr(value, "close", None)
        if isinstance(value, (SummaryWriter, monitor.Stat)) and close is not None:
            close()
