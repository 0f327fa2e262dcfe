"""tallyboard.testing: the fixtures plugin authors get, used as they would use them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tallyboard import Kind, SummaryWriter, hookimpl
from tallyboard.plugin import hookspecs
from tallyboard.plugin.registry import get_registry

pytest_plugins = ["tallyboard.testing"]
DOCS = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


class Shout:
    """A tiny in-test plugin: kind ``shout`` (upper-cased text)."""

    @hookimpl
    def register_kinds(self, register: Any) -> None:
        def add_shout(writer: Any, tag: str, text: str, global_step: Any = None) -> None:
            writer.emit("shout", tag, str(text).upper(), global_step)

        register(
            Kind(name="shout", convert=lambda v: str(v).upper(), methods={"add_shout": add_shout})
        )


def test_register_plugin_is_temporary(register_plugin: Any, logdir: Path, memory_sink: Any) -> None:
    reg = register_plugin(Shout(), "shout")
    assert "shout" in reg.kinds and reg is get_registry()
    with SummaryWriter(logdir, sinks=["memory"]) as w:
        w.add_shout("t", "hey", 1)
        w.add_value("shout", "t", "you", 2)
    assert memory_sink.values("t") == [(1, "HEY"), (2, "YOU")]


def test_after_the_test_the_plugin_is_gone(tallyboard_registry: Any) -> None:
    assert "shout" not in tallyboard_registry.kinds and "memory" not in tallyboard_registry.sinks
    assert tallyboard_registry is get_registry()


def test_memory_sink_records_every_kind_as_given(logdir: Path, memory_sink: Any) -> None:
    from tallyboard.testing import Record  # imported late: pytest_plugins must load it first

    with SummaryWriter(logdir, sinks=["memory", "tfevents"]) as w:
        w.add_scalar("loss", 0.5, 3, walltime=100.0)
        w.add_text("notes", "hi", 4, walltime=101.0)
        w.add_scalars("pair", {"a": 1.0, "b": 2.0}, 5, walltime=102.0)
        w.add_image(
            "img", np.zeros((3, 2, 2), dtype=np.uint8), 6
        )  # heavy: reaches the sink deferred
        w.flush()
    main = memory_sink.records_for(str(logdir))
    assert main[:2] == [
        Record("scalar", "loss", 3, 100.0, 0.5),
        Record("text", "notes", 4, 101.0, "hi"),
    ]
    assert memory_sink.records_for(str(logdir / "pair_a")) == [
        Record("scalar", "pair", 5, 102.0, 1.0)
    ]
    assert memory_sink.records_for(str(logdir / "pair_b"))[0].payload == 2.0
    assert [(r.kind, r.tag, r.step) for r in main[2:]] == [("image", "img", 6)]
    assert all(s.closed for s in memory_sink.sinks) and memory_sink.sinks[0].flushes == 1


def test_every_hook_has_a_docstring_and_is_documented() -> None:
    guide = DOCS.read_text()
    names = [n for n in dir(hookspecs) if n.startswith(("register_", "writer_"))]
    assert len(names) == 9
    for name in names:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), name
        assert f"`{name}" in guide, f"docs/plugins.md does not document {name}"


def test_contract_version_is_exposed() -> None:
    import tallyboard

    assert tallyboard.CONTRACT_VERSION == hookspecs.CONTRACT_VERSION == 1
    with pytest.raises(AttributeError):
        tallyboard.not_a_thing  # noqa: B018
