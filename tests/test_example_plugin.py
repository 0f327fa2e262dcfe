"""The example distribution in examples/: pip-installed, discovered, and used through its kind,
its sink and its encoders (SummaryWriter face)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from installed_examples import installed_example
from tallyboard import SummaryWriter
from tallyboard import warn as warn_module
from tallyboard.faces.summary_writer import SinkWarning
from tallyboard.plugin.registry import get_registry

pytest_plugins = ["tallyboard.testing"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tallyboard-example"
DIST = "tallyboard-example"


@pytest.fixture(scope="session")
def example_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The example pip-installed for this session (see :func:`installed_example`)."""
    with installed_example(EXAMPLE, tmp_path_factory.mktemp("example"), "tallyboard_example"):
        yield


def test_example_is_discovered(example_installed: None) -> None:
    reg = get_registry()
    info = next(p for p in reg.plugins if p.name == "example")
    assert (info.distribution, info.version, info.status) == (DIST, "0.1.0", "loaded")
    assert info.kinds == ["interval"] and info.sinks == ["textlog"]
    assert set(info.encoders) == {
        ("interval", "tfevents"),
        ("interval", "textlog"),
        ("scalar", "textlog"),
    }
    assert "tallyboard_example" in sys.modules[reg.kinds["interval"].convert.__module__].__name__


def test_example_kind_reaches_tensorboard(example_installed: None, logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_interval("band", 0.25, 0.75, 1)
        w.add_value("interval", "band", (0.5, 1.5), 2)
        with pytest.raises(ValueError, match="low 2.0 must not exceed high 1.0"):
            w.add_interval("band", 2, 1, 3)
        with pytest.raises(TypeError, match=r"an interval is a \(low, high\) pair"):
            w.add_value("interval", "band", 3.0, 3)
    acc = load_run(logdir)
    assert [(e.step, e.value) for e in acc.Scalars("band/low")] == [(1, 0.25), (2, 0.5)]
    assert [(e.step, e.value) for e in acc.Scalars("band/high")] == [(1, 0.75), (2, 1.5)]


def test_example_sink_with_builtin_sinks(
    example_installed: None, logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warn_module, "_once", set())
    with (
        SummaryWriter(logdir, sinks=["tfevents", "textlog", "jsonl"]) as w,
        pytest.warns(SinkWarning) as rec,
    ):
        w.add_scalar("loss", 0.5, 1)
        w.add_interval("band", 1, 2, 1)  # jsonl has no interval encoder
        w.add_text("note", "hi", 1)  # textlog has no text encoder
        w.add_interval("band", 3, 4, 2)
    assert sorted(str(r.message) for r in rec) == [
        "sink 'jsonl' cannot encode kind 'interval'; those values are not written there",
        "sink 'textlog' cannot encode kind 'text'; those values are not written there",
    ]
    lines = (logdir / "tallyboard.log").read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == [
        "step=1 loss = 0.5",
        "step=1 band in [1.0, 2.0]",
        "step=2 band in [3.0, 4.0]",
    ]
    assert [json.loads(x)["kind"] for x in (logdir / "records.jsonl").read_text().splitlines()] == [
        "scalar",
        "text",
    ]
    assert [e.step for e in load_run(logdir).Scalars("band/high")] == [1, 2]


def test_example_sink_by_url(example_installed: None, tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "tb", sinks=["tfevents", f"textlog://{tmp_path / 'logs'}"]) as w:
        w.add_scalar("x", 1.0, 0)
    assert (tmp_path / "logs" / "tallyboard.log").read_text().endswith("step=0 x = 1.0\n")


def test_example_kind_in_memory_sink(
    example_installed: None, memory_sink: Any, logdir: Path
) -> None:
    with SummaryWriter(logdir, sinks=["memory"]) as w:
        w.add_interval("band", 1, 2, 5)
    [rec] = memory_sink.records
    assert (rec.kind, rec.tag, rec.step, tuple(rec.payload)) == ("interval", "band", 5, (1.0, 2.0))


def test_cli_lists_the_example(example_installed: None) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "plugins"], capture_output=True, text=True, timeout=60
    )
    lines = out.stdout.splitlines()
    i = lines.index("example  (tallyboard-example 0.1.0)  [loaded]")
    assert lines[i + 1 : i + 3] == ["    kinds: interval", "    sinks: textlog"]


def test_example_kind_through_the_summary_record_face(
    example_installed: None, logdir: Path
) -> None:
    import numpy as np
    from tallyboard import SummaryRecord

    with (
        warnings.catch_warnings(),
        SummaryRecord(logdir, sinks=["textlog"], tensorboard=True) as record,
    ):
        # the MindSpore files have no interval, but the other sinks take it: nothing to say
        warnings.simplefilter("error", SinkWarning)
        record.add_value("interval", "band", (0.25, 0.75))
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(4)
    lines = [line.split(" ", 1)[1] for line in (logdir / "tallyboard.log").read_text().splitlines()]
    assert lines == ["step=4 band in [0.25, 0.75]", "step=4 loss = 0.5"]
    acc = load_run(logdir)
    assert [(e.step, e.value) for e in acc.Scalars("band/low")] == [(4, 0.25)]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(4, 0.5)]
