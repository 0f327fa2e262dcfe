"""The MindSpore face's public API has torch-grade docstrings, and every Example in them runs.

Each public method of ``SummaryRecord``, ``SummaryCollector`` and the operator classes: one
summary line, Google-style sections (``Args:`` naming every parameter of the signature,
``Raises:`` where the call checks its input, ``Example:`` with ``>>>`` lines), and the examples
run as doctests in a fresh directory with their output compared. ``SummaryCollector``'s need
MindSpore: they run in the MindSpore child (``mindspore_support``), the class example first
(its ``model`` and ``dataset`` serve the methods' examples), and come back as notes.
"""

from __future__ import annotations

import doctest
import inspect
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mindspore_support import Results, note, run_scenarios, scenario
from tallyboard import SummaryRecord, ops
from tallyboard.faces import ops as face_ops

#: (object whose signature is documented, docstring) by name; no MindSpore needed.
RECORD_METHODS = ["set_mode", "add_value", "record", "flush", "close", "__enter__"]
RECORD_PROPERTIES = ["log_dir", "file_info", "closed"]
OPERATORS = ["ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary"]
COLLECTOR_METHODS = ["__enter__", "begin", "step_end", "epoch_end", "end"]
#: Documented calls that check nothing they could raise about.
NO_RAISES = {
    "SummaryRecord.log_dir",
    "SummaryRecord.file_info",
    "SummaryRecord.closed",
    *OPERATORS,  # the classes (their __call__ raises)
    "SummaryCollector.step_end",
    "SummaryCollector.epoch_end",
    "SummaryCollector.end",
}


def _targets() -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {"SummaryRecord": (SummaryRecord, SummaryRecord.__doc__)}
    for name in RECORD_METHODS:
        fn = getattr(SummaryRecord, name)
        out[f"SummaryRecord.{name}"] = (fn, fn.__doc__)
    for name in RECORD_PROPERTIES:
        prop = getattr(SummaryRecord, name)
        out[f"SummaryRecord.{name}"] = (None, prop.__doc__)
    for name in OPERATORS:
        cls = getattr(ops, name)
        out[name] = (None, cls.__doc__)
        out[f"{name}.__call__"] = (cls.__call__, cls.__call__.__doc__)
    return out


TARGETS = _targets()


def _parameters(obj: Any) -> list[str]:
    if obj is None:
        return []
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        p.name
        for p in inspect.signature(obj).parameters.values()
        if p.name != "self" and p.kind not in skip
    ]


def _section(doc: str, title: str) -> str | None:
    found = re.search(rf"^{title}:\n((?:    .*\n|\n)+)", doc + "\n", re.MULTILINE)
    return None if found is None else found.group(1)


def check_docstring(name: str, doc: str | None, params: list[str]) -> None:
    """The shape every public docstring of the face has (see the module docstring)."""
    assert doc, f"{name} has no docstring"
    doc = inspect.cleandoc(doc)
    lines = doc.splitlines()
    assert len(lines) > 3 and not lines[1].strip(), f"{name}: one summary line, then a blank"
    assert len(lines[0]) <= 96, f"{name}: summary too long"
    assert all(len(line) <= 96 for line in lines), f"{name}: a line over 96 characters"
    if params:
        args = _section(doc, "Args")
        assert args is not None, f"{name}: no Args: section"
        assert re.findall(r"^    (\w+):", args, re.MULTILINE) == params, f"{name}: Args"
    if name not in NO_RAISES:
        raises = _section(doc, "Raises")
        assert raises and re.search(r"^    [\w.]+:", raises, re.MULTILINE), f"{name}: no Raises"
    example = _section(doc, "Example")
    assert example and ">>> " in example, f"{name}: no Example: with >>> lines"


def run_examples(name: str, doc: str, globs: dict[str, Any]) -> str:
    """Run the ``>>>`` lines of ``doc`` with ``globs``; the failures' report ('' if none)."""
    test = doctest.DocTestParser().get_doctest(inspect.cleandoc(doc), globs, name, None, 0)
    assert test.examples, f"{name}: no example to run"
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=out.append, clear_globs=False)
    globs.update(test.globs)  # DocTest ran on a copy: what the example defined, for the next
    return "".join(out) if runner.failures else ""


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_docstring_has_a_summary_args_raises_and_example(name: str) -> None:
    obj, doc = TARGETS[name]
    check_docstring(name, doc, _parameters(obj))


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    globs: dict[str, Any] = {}
    try:
        assert not run_examples(name, TARGETS[name][1], globs)
    finally:
        for value in globs.values():  # an example stopping before close(): close it here
            if isinstance(value, SummaryRecord):
                value.close()
        face_ops.take()  # an operator called with no record after it: its value goes too


def test_help_opens_on_what_a_user_does_most() -> None:
    first = inspect.getdoc(SummaryRecord).split("Args:")[0]
    assert 'add_value("scalar", "loss", loss)' in first and "record.record(step)" in first


# -- SummaryCollector, in the MindSpore child ---------------------------------------------------


@scenario
def collector_docstrings(out: Path) -> None:
    from tallyboard import SummaryCollector

    os.chdir(out)
    docs = {"SummaryCollector": SummaryCollector.__doc__}
    params = {"SummaryCollector": _parameters(SummaryCollector.__init__)}
    for method in COLLECTOR_METHODS:
        fn = getattr(SummaryCollector, method)
        docs[f"SummaryCollector.{method}"] = fn.__doc__
        params[f"SummaryCollector.{method}"] = _parameters(fn)
    note("docs", docs)
    note("params", params)
    globs: dict[str, Any] = {}
    failures = {}
    for name, doc in docs.items():  # the class's example first: the methods' use its model
        failures[name] = run_examples(name, doc or "", globs)
    note("failures", failures)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_scenarios(__file__, tmp_path_factory.mktemp("ms_docstrings"))


def test_collector_docstrings_and_their_examples(runs: Results) -> None:
    notes = runs["collector_docstrings"].notes
    assert sorted(notes["docs"]) == sorted(
        ["SummaryCollector", *(f"SummaryCollector.{m}" for m in COLLECTOR_METHODS)]
    )
    for name, doc in notes["docs"].items():
        check_docstring(name, doc, notes["params"][name])
    assert notes["failures"] == dict.fromkeys(notes["docs"], "")
