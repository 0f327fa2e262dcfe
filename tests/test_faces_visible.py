"""What the faces offer is visible to help(), inspect.signature, editors and type checkers."""

from __future__ import annotations

import inspect
import pydoc
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from make_writer_methods import builtin_methods, visible_signature
from tallyboard import SummaryWriter
from tallyboard.faces.writer_methods import WriterMethods

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = builtin_methods()
FIX = "run `python tests/make_writer_methods.py` to regenerate core/tallyboard/faces/writer_methods.py"


def test_every_builtin_method_has_a_visible_twin_and_nothing_else_does():
    visible = {n for n in vars(WriterMethods) if n.startswith("add_")}
    assert visible == set(BUILTIN), FIX


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_visible_signature_and_docstring_equal_the_plugins(name):
    twin = getattr(SummaryWriter, name)
    assert inspect.signature(twin) == visible_signature(BUILTIN[name]), FIX
    assert inspect.getdoc(twin) == inspect.getdoc(BUILTIN[name]), FIX


def test_a_writer_calls_the_plugin_directly(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for name, fn in BUILTIN.items():
            assert getattr(writer, name).__func__ is fn


def test_a_subclass_override_and_super_still_reach_the_plugin(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    seen = []

    class Counting(SummaryWriter):
        def add_scalar(self, tag, scalar_value, global_step=None, *args, **kwargs):  # type: ignore[override]
            seen.append(tag)
            super().add_scalar(tag, scalar_value * 2, global_step, *args, **kwargs)

    with Counting(tmp_path) as writer:
        writer.add_scalar("loss", 1.5, 3)
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert seen == ["loss"]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(3, 3.0)]


def test_help_shows_the_methods_and_no_private_parameter():
    text = pydoc.render_doc(SummaryWriter, renderer=pydoc.plaintext)
    for name in BUILTIN:
        assert f"{name}(self" in text
    assert "add_scalar(self, tag: 'str', scalar_value: 'Any', global_step: 'Any' = None" in text
    assert "_targets" not in text and "_plan" not in text
    assert "_targets" not in str(inspect.signature(SummaryWriter))


def test_a_missing_plugin_says_which_method_needs_it(tmp_path):
    with (
        SummaryWriter(tmp_path) as writer,
        pytest.raises(AttributeError, match="add_nothing needs"),
    ):
        WriterMethods._plugin_method(writer, "add_nothing")


def test_mypy_checks_calls_against_the_real_signatures(tmp_path):
    snippet = tmp_path / "use.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from tallyboard import SummaryWriter

            w = SummaryWriter("runs/x")
            w.add_scalar("loss", 0.5, 1)
            w.add_histogram("h", [1, 2], 0, bins="auto")
            w.add_scalar("loss", 0.5, 1, wrong_keyword=True)
            w.add_image()
            """
        )
    )
    # the project's own settings; its cache (the test command runs mypy first) copied, so the
    # project's modules are not checked again and the checkout's cache is left as it was
    cache = tmp_path / "mypy_cache"
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", cache)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), str(snippet)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    lines = [line for line in result.stdout.splitlines() if "error:" in line]
    assert any(":7:" in line and "wrong_keyword" in line for line in lines), result.stdout
    assert any(":8:" in line and "Missing positional arguments" in line for line in lines), (
        result.stdout
    )
    assert len(lines) == 2, result.stdout
