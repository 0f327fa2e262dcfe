"""What the faces offer is visible to help(), dir(), inspect.signature, editors and type checkers:
every plugin's ``add_*`` method is a class attribute of SummaryWriter, the plugin's own function,
and ``tallyboard stubs`` shows type checkers the same functions."""

from __future__ import annotations

import inspect
import os
import pydoc
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from installed_examples import installed_example
from plugin_methods import builtin_methods
from tallyboard import SummaryWriter
from tallyboard.faces.writer_methods import WriterMethods
from tallyboard.plugin.registry import get_registry

pytest_plugins = ["tallyboard.testing"]

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = builtin_methods()


def test_every_plugin_method_is_a_class_attribute_and_nothing_else_is():
    visible = {n for n in vars(WriterMethods) if n.startswith("add_")}
    assert visible == set(get_registry().methods)
    assert set(BUILTIN) <= visible


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_visible_signature_and_docstring_are_the_plugins(name):
    method = getattr(SummaryWriter, name)
    assert method is BUILTIN[name]  # the plugin's function itself: no copy anywhere
    assert inspect.signature(method) == inspect.signature(BUILTIN[name])
    assert inspect.getdoc(method) == inspect.getdoc(BUILTIN[name])


def test_a_writer_calls_the_plugin_directly(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for name, fn in BUILTIN.items():
            assert getattr(writer, name).__func__ is fn
            assert name not in vars(writer)  # one road: the class attribute, nothing per writer


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
        assert f"{name}(writer" in text
    assert (
        "add_scalar(writer: 'Any', tag: 'str', scalar_value: 'Any', global_step: 'Any' = None"
        in text
    )
    assert "_targets" not in text and "_plan" not in text
    assert "_targets" not in str(inspect.signature(SummaryWriter))


def _in_fresh_process(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_class_shows_its_methods_before_any_writer_and_import_builds_no_registry():
    out = _in_fresh_process(
        """
        import pydoc
        import tallyboard
        from tallyboard import SummaryWriter
        from tallyboard.plugin import registry

        print(registry._registry is None)  # import tallyboard stays cheap
        print(hasattr(SummaryWriter, "add_histogram"), "add_image" in dir(SummaryWriter))
        print("add_histogram(writer" in pydoc.render_doc(SummaryWriter, renderer=pydoc.plaintext))
        """
    )
    assert out.split() == ["True", "True", "True", "True"]


def test_a_missing_plugin_says_which_method_needs_it(tmp_path):
    with (
        SummaryWriter(tmp_path) as writer,
        pytest.raises(AttributeError, match="add_nothing needs"),
    ):
        writer.add_nothing("tag", 1)
    assert not hasattr(SummaryWriter, "add_nothing")


def test_a_plugin_added_or_removed_later_appears_and_goes(register_plugin, tmp_path):
    from tallyboard import Kind, hookimpl

    def add_note(writer, tag: str, note: str, global_step: int | None = None) -> None:
        """Log a note."""
        writer.emit("note", tag, note, global_step)

    class Notes:
        @hookimpl
        def register_kinds(self, register):
            register(Kind(name="note", convert=str, methods={"add_note": add_note}))

    assert not hasattr(SummaryWriter, "add_note")
    register_plugin(Notes(), "notes")
    assert SummaryWriter.add_note is add_note and "add_note" in dir(SummaryWriter)
    assert "add_note(writer, tag: 'str', note: 'str'" in pydoc.render_doc(
        SummaryWriter, renderer=pydoc.plaintext
    )


def _mypy(
    tmp_path: Path, snippet: str, stubs: Path, env: dict[str, str] | None = None
) -> list[str]:
    """mypy's errors for ``snippet`` with the project's settings and the stub under ``stubs``
    first on MYPYPATH; its cache (the test command runs mypy first) copied, so the project's
    modules are not checked again and the checkout's cache is left as it was."""
    use = tmp_path / "use.py"
    use.write_text(textwrap.dedent(snippet))
    cache = tmp_path / "mypy_cache"
    if (ROOT / ".mypy_cache").is_dir() and not cache.exists():
        shutil.copytree(ROOT / ".mypy_cache", cache)
    environ = {**os.environ, **(env or {}), "MYPYPATH": str(stubs)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), str(use)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=environ,
    )
    # the snippet's errors only: a module of the project mid-edit may have errors of its own
    lines = result.stdout.splitlines()
    return [line for line in lines if line.startswith(f"{use}:") and " error: " in line]


def _stubs(tmp_path: Path, env: dict[str, str] | None = None) -> Path:
    out = tmp_path / "stubs"
    done = subprocess.run(
        [sys.executable, "-m", "tallyboard", "stubs", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_mypy_checks_calls_against_the_real_signatures(tmp_path):
    lines = _mypy(
        tmp_path,
        """
        from tallyboard import SummaryWriter

        w = SummaryWriter("runs/x")
        w.add_scalar("loss", 0.5, 1)
        w.add_histogram("h", [1, 2], 0, bins="auto")
        w.add_scalar("loss", 0.5, 1, wrong_keyword=True)
        w.add_image()
        """,
        _stubs(tmp_path),
    )
    assert any(":7:" in line and "wrong_keyword" in line for line in lines), lines
    # mypy words it "Missing positional arguments" or, for a function bound as a method,
    # "Too few arguments": either way it checked the plugin's signature
    assert any(
        ":8:" in line and ("Missing positional arguments" in line or "Too few arguments" in line)
        for line in lines
    ), lines
    assert len(lines) == 2, lines


def test_stubs_check_says_whether_the_stub_is_current(tmp_path):
    out = _stubs(tmp_path)
    cmd = [sys.executable, "-m", "tallyboard", "stubs", "--check", "--output", str(out)]
    assert subprocess.run(cmd, capture_output=True, timeout=120).returncode == 0
    stub = out / "_tallyboard_methods" / "__init__.pyi"
    stub.write_text(stub.read_text().replace("    add_scalar = ", "    add_scalar_old = "))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "out of date" in done.stdout


def test_mypy_sees_the_methods_of_a_plugin_installed_after_tallyboard(tmp_path):
    """The example distribution pip-installed (into a folder of this test), ``tallyboard stubs``
    run in an environment that has it: mypy checks ``add_interval`` calls against the example's
    own function, and still refuses a method no plugin gives."""
    example = ROOT / "examples" / "tallyboard-example"
    with installed_example(example, tmp_path, "tallyboard_example") as site:
        stubs = _stubs(tmp_path)  # a process that finds the example's entry point
    assert "add_interval = " in (stubs / "_tallyboard_methods" / "__init__.pyi").read_text()
    lines = _mypy(
        tmp_path,
        """
        from tallyboard import SummaryWriter

        w = SummaryWriter("runs/x")
        w.add_interval("band", 0.5, 1.5, 2)
        w.add_interval("band", 0.5)
        w.add_interval("band", 0.5, 1.5, 2, wrong_keyword=1)
        w.add_quantiles("q", [1.0])
        reveal_type(w.add_interval)
        """,
        Path(f"{stubs}{os.pathsep}{site}"),
    )
    assert any(":6:" in line for line in lines), lines
    assert any(":7:" in line and "wrong_keyword" in line for line in lines), lines
    assert any(":8:" in line and "add_quantiles" in line for line in lines), lines
    assert len(lines) == 3, lines
