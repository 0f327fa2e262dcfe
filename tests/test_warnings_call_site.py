"""SinkWarning and PluginWarning point at the user's line (tallyboard.warn), on both faces."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tallyboard import SummaryRecord, SummaryWriter, hookimpl
from tallyboard import warn as warn_module
from tallyboard.faces.summary_writer import SinkWarning
from tallyboard.plugin.registry import PluginWarning, get_registry
from test_sinks_multi import Flaky

pytest_plugins = ["tallyboard.testing"]


@pytest.fixture(autouse=True)
def fresh_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warn_module, "_once", set())  # "once" is once per process


def _only(rec: Any, category: type[Warning]) -> list[warnings.WarningMessage]:
    return [r for r in rec if issubclass(r.category, category)]


def test_own_prefixes_cover_the_core_and_every_imported_plugin() -> None:
    import tallyboard
    import tallyboard_scalar
    import tallyboard_tfevents

    prefixes = warn_module.own_prefixes()
    for module in (tallyboard, tallyboard_scalar, tallyboard_tfevents):
        assert str(Path(module.__file__).parent) + "/" in prefixes
    assert not any(__file__.startswith(p) for p in prefixes)


def test_cannot_encode_points_at_the_add_call_once_per_sink_and_kind(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path, sinks=["tfevents", "csv"]) as w, pytest.warns(SinkWarning) as rec:
        w.add_text("notes", "a", 0)
        line = _line()
        w.add_text("notes", "b", 1)
        w.add_text("other", "c", 2)
    [warning] = _only(rec, SinkWarning)
    assert "sink 'csv' cannot encode kind 'text'" in str(warning.message)
    assert (warning.filename, warning.lineno) == (__file__, line - 1)


def test_summary_record_face_warns_sinkwarning_once_at_the_add_value_call(tmp_path: Path) -> None:
    """A plugin kind (text) through a SummaryRecord whose only sink, mindspore, cannot hold it
    (with another sink that takes it, nothing is said: docs/plugins.md section 6)."""
    record = SummaryRecord(str(tmp_path))
    with record, pytest.warns(SinkWarning) as rec:
        record.add_value("text", "notes", "hello")
        line = _line()
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(1)
        record.add_value("text", "notes", "again")
        record.record(2)
    [warning] = _only(rec, SinkWarning)
    assert "sink 'mindspore' cannot encode kind 'text'" in str(warning.message)
    assert (warning.filename, warning.lineno) == (__file__, line - 1)


def test_failing_sink_warning_points_at_the_users_line(
    tmp_path: Path, register_plugin: Any, memory_sink: Any
) -> None:
    register_plugin(Flaky(after=0), "flaky")
    w = SummaryWriter(tmp_path, sinks=["flaky", "memory"])
    with pytest.warns(SinkWarning, match="sink 'flaky' failed in write") as rec:
        w.add_scalar("loss", 1.0, 0)
        line = _line()
    w.close()
    [warning] = _only(rec, SinkWarning)
    assert (warning.filename, warning.lineno) == (__file__, line - 1)


class _Broken:
    @hookimpl
    def register_kinds(self, register: Any) -> None:
        raise RuntimeError("broken on purpose")


def test_plugin_warning_points_at_the_users_line(register_plugin: Any) -> None:
    with pytest.warns(PluginWarning, match="broken on purpose") as rec:
        register_plugin(_Broken(), "broken")
        get_registry()
    [warning] = _only(rec, PluginWarning)
    assert warning.filename == __file__


def test_plugin_conversion_warning_points_at_the_users_line(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path) as w, pytest.warns(UserWarning, match="auto clipped") as rec:
        w.add_audio("a", np.full(100, 2.0, np.float32), 0, sample_rate=8000)
        line = _line()
    [warning] = [r for r in rec if "auto clipped" in str(r.message)]
    assert (warning.filename, warning.lineno) == (__file__, line - 1)


def _line() -> int:
    """The caller's line number."""
    import sys

    return sys._getframe(1).f_lineno
