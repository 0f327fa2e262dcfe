"""Several sinks at once: selection by name or URL, the same data everywhere, failing sinks."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from tallyboard import SinkSpec, SummaryWriter, hookimpl
from tallyboard import warn as warn_module
from tallyboard.faces.summary_writer import SinkWarning

pytest_plugins = ["tallyboard.testing"]


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class Flaky:
    """A plugin whose sink ``flaky`` fails in ``method`` after ``after`` successful calls."""

    def __init__(
        self, method: str = "write", after: int = 0, error: Exception | None = None
    ) -> None:
        self.method, self.after = method, after
        self.error = error or OSError(28, "No space left on device")
        self.calls = 0
        self.received: list[Any] = []
        self.closed = 0

    def _open(self, options: Any) -> Any:
        if self.method == "open":
            raise self.error
        plugin = self

        class FlakySink:
            def _maybe_fail(self, method: str) -> None:
                if method == plugin.method:
                    plugin.calls += 1
                    if plugin.calls > plugin.after:
                        raise plugin.error

            def write(self, data: Any) -> None:
                self._maybe_fail("write")
                plugin.received.append(data)

            def flush(self) -> None:
                self._maybe_fail("flush")

            def close(self) -> None:
                plugin.closed += 1
                self._maybe_fail("close")

        return FlakySink()

    @hookimpl
    def register_sinks(self, register: Any) -> None:
        register(SinkSpec(name="flaky", open=self._open))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        register("scalar", "flaky", lambda tag, step, wall_time, value: (tag, step, value))


def test_tfevents_csv_jsonl_get_the_same_run(logdir: Path) -> None:
    with SummaryWriter(logdir, sinks=["tfevents", "csv", "jsonl"]) as w:
        for step in range(50):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("acc, top-1", step / 50, step)
        w.add_text("notes", "hello *world*", 7)
    acc = load_run(logdir)
    assert [e.step for e in acc.Scalars("acc, top-1")] == list(range(50))
    assert acc.Tags()["tensors"] == ["notes/text_summary"]

    rows = read_csv(logdir / "scalars.csv")
    assert list(rows[0]) == ["wall_time", "step", "tag", "value"]
    loss = [(int(r["step"]), float(r["value"])) for r in rows if r["tag"] == "loss"]
    assert loss == [(s, 1.0 / (s + 1)) for s in range(50)]
    assert sum(r["tag"] == "acc, top-1" for r in rows) == 50
    tb_loss = [(e.step, e.value) for e in acc.Scalars("loss")]
    assert [(s, pytest.approx(v, rel=1e-6)) for s, v in loss] == tb_loss  # float32 in tfevents

    lines = read_jsonl(logdir / "records.jsonl")
    assert [(r["step"], r["value"]) for r in lines if r["tag"] == "loss"] == loss
    text = [r for r in lines if r["kind"] == "text"]
    assert text == [
        {
            "wall_time": text[0]["wall_time"],
            "step": 7,
            "tag": "notes",
            "kind": "text",
            "value": "hello *world*",
        }
    ]
    # the three sinks saw the same wall times
    assert [float(r["wall_time"]) for r in rows] == [
        r["wall_time"] for r in lines if r["kind"] == "scalar"
    ]


def test_sink_without_encoder_warns_once_and_others_go_on(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warn_module, "_once", set())  # "once" is once per process
    with SummaryWriter(logdir, sinks=["csv", "jsonl"]) as w:
        with pytest.warns(SinkWarning, match="sink 'csv' cannot encode kind 'text'") as rec:
            w.add_text("t", "a", 0)
            w.add_text("t", "b", 1)
        assert sum("cannot encode" in str(r.message) for r in rec) == 1
    assert [r["value"] for r in read_jsonl(logdir / "records.jsonl")] == ["a", "b"]
    assert read_csv(logdir / "scalars.csv") == []


def test_sinks_chosen_by_url(tmp_path: Path) -> None:
    main, other, third = tmp_path / "main", tmp_path / "other", tmp_path / "third"
    with SummaryWriter(main, sinks=["tfevents", f"csv+file://{other}", f"jsonl://{third}"]) as w:
        w.add_scalar("x", 2.5, 3)
        w.add_scalars("m", {"a": 1.0}, 4)
    assert [e.value for e in load_run(main).Scalars("x")] == [2.5]
    assert not (main / "scalars.csv").exists() and not (main / "records.jsonl").exists()
    assert read_csv(other / "scalars.csv")[0]["value"] == "2.5"
    assert (
        read_csv(other / "m_a" / "scalars.csv")[0]["tag"] == "m"
    )  # sub-runs follow the sink's location
    assert read_jsonl(third / "records.jsonl")[0]["value"] == 2.5
    assert read_jsonl(third / "m_a" / "records.jsonl")[0]["value"] == 1.0


def test_bad_sink_arguments(logdir: Path) -> None:
    with pytest.raises(ValueError, match="unknown sink 'nope'.*installed sinks: .*csv"):
        SummaryWriter(logdir, sinks=["tfevents", "nope"])
    with pytest.raises(TypeError, match="sinks must be a list"):
        SummaryWriter(logdir, sinks="csv")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="at least one"):
        SummaryWriter(logdir, sinks=[])
    with pytest.raises(ValueError, match="sink_errors must be one of"):
        SummaryWriter(logdir, sinks=["csv"], sink_errors="ignore")
    with pytest.raises(ValueError, match="repeats sink 'csv'"):
        SummaryWriter(logdir, sinks=["csv", "csv"])


def test_failing_sink_warns_once_and_others_go_on(
    logdir: Path, register_plugin: Any, memory_sink: Any
) -> None:
    flaky = Flaky(after=3)
    register_plugin(flaky, "flaky")
    w = SummaryWriter(logdir, sinks=["flaky", "memory", "csv"])
    assert w.sink_errors == "warn"
    with pytest.warns(SinkWarning) as rec:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
        w.flush()
    failures = [str(r.message) for r in rec if "failed" in str(r.message)]
    assert len(failures) == 1
    assert (
        "sink 'flaky' failed in write (OSError: [Errno 28] No space left on device)" in failures[0]
    )
    assert len(flaky.received) == 3 and flaky.closed == 1
    assert [r.step for r in memory_sink.records] == list(range(10))
    w.close()
    assert [int(r["step"]) for r in read_csv(logdir / "scalars.csv")] == list(range(10))


def test_failing_sink_raises_when_asked_and_others_still_get_the_record(
    logdir: Path, register_plugin: Any, memory_sink: Any
) -> None:
    register_plugin(Flaky(after=1), "flaky")
    w = SummaryWriter(logdir, sinks=["flaky", "memory"], sink_errors="raise")
    w.add_scalar("a", 1.0, 0)
    with pytest.raises(OSError, match="No space left"):
        w.add_scalar("a", 2.0, 1)
    assert [r.payload for r in memory_sink.records] == [1.0, 2.0]
    w.close()


def test_single_sink_errors_reach_the_caller(logdir: Path, register_plugin: Any) -> None:
    register_plugin(Flaky(after=0), "flaky")
    w = SummaryWriter(logdir, sinks=["flaky"])
    assert w.sink_errors == "raise"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(OSError, match="No space left"):
            w.add_scalar("a", 1.0, 0)
    w.close()


@pytest.mark.parametrize("method", ["flush", "close"])
def test_sink_failing_in_flush_or_close_is_reported_once(
    logdir: Path, register_plugin: Any, memory_sink: Any, method: str
) -> None:
    register_plugin(Flaky(method=method), "flaky")
    w = SummaryWriter(logdir, sinks=["memory", "flaky"])
    w.add_scalar("a", 1.0, 0)
    with pytest.warns(SinkWarning, match=f"sink 'flaky' failed in {method}"):
        w.flush()
        w.close()
    assert memory_sink.sinks[0].flushes >= 1 and memory_sink.sinks[0].closed


def test_sink_failing_to_open(logdir: Path, register_plugin: Any, memory_sink: Any) -> None:
    register_plugin(Flaky(method="open", error=PermissionError(13, "Permission denied")), "flaky")
    with pytest.warns(SinkWarning, match="sink 'flaky' failed in open .*Permission denied"):
        w = SummaryWriter(logdir, sinks=["flaky", "memory"])
    w.add_scalar("a", 1.0, 0)
    w.close()
    assert len(memory_sink.records) == 1
    with pytest.raises(PermissionError):
        SummaryWriter(logdir, sinks=["flaky", "memory"], sink_errors="raise")
    with pytest.raises(PermissionError):
        SummaryWriter(logdir, sinks=["flaky"])


def test_reopen_after_close_writes_a_new_csv_file(logdir: Path) -> None:
    w = SummaryWriter(logdir, sinks=["csv"])
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.add_scalar("a", 2.0, 1)
    w.close()
    assert read_csv(logdir / "scalars.csv")[0]["value"] == "1.0"
    assert read_csv(logdir / "scalars.1.csv")[0]["value"] == "2.0"
