"""The facts docs/plugins.md states about kinds, encoders and sinks, each checked here."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import load_run
from tallyboard import Kind, SinkSpec, SummaryRecord, SummaryWriter, hookimpl
from tallyboard import warn as warn_module
from tallyboard.faces.summary_writer import SinkWarning

pytest_plugins = ["tallyboard.testing"]


@dataclass(frozen=True)
class Pair:
    low: float
    high: float


class PairPlugin:
    """A kind ``pair`` whose convert returns one frozen object for a two-field value."""

    def __init__(self) -> None:
        self.converted: list[Any] = []

    def convert(self, value: Any) -> Pair:
        low, high = value
        out = Pair(float(low), float(high))
        self.converted.append(out)
        return out

    def add_pair(self, writer: Any, tag: str, payload: Any, global_step: Any = None) -> None:
        writer.emit("pair", tag, payload, global_step)

    @hookimpl
    def register_kinds(self, register: Any) -> None:
        register(Kind(name="pair", convert=self.convert, methods={"add_pair": self.add_pair}))


def test_convert_returns_one_payload_every_sink_receives_as_is(
    tmp_path: Path, register_plugin: Any, memory_sink: Any
) -> None:
    plugin = PairPlugin()
    register_plugin(plugin, "pair")
    with SummaryWriter(tmp_path, sinks=["memory"]) as w:
        w.add_value("pair", "band", (1, 2), 3)
    [record] = memory_sink.records
    [converted] = plugin.converted
    assert record.payload is converted and record.payload == Pair(1.0, 2.0)


def test_emit_does_not_call_convert(tmp_path: Path, register_plugin: Any, memory_sink: Any) -> None:
    plugin = PairPlugin()
    register_plugin(plugin, "pair")
    with SummaryWriter(tmp_path, sinks=["memory"]) as w:
        w.add_pair("raw", "not converted", 1)  # a method ends in emit(), which takes it as is
    assert plugin.converted == []
    assert memory_sink.values("raw") == [(1, "not converted")]


def test_encoder_step_is_none_without_global_step(
    tmp_path: Path, register_plugin: Any, memory_sink: Any
) -> None:
    with SummaryWriter(tmp_path, sinks=["memory"]) as w:
        w.add_scalar("loss", 0.5)
    [record] = memory_sink.records
    assert record.step is None


class ThreadProbe:
    """A sink that records which thread calls it; write waits for a second concurrent write."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.barrier = threading.Barrier(2, timeout=10)

    def _open(self, options: Any) -> Any:
        probe = self

        class Sink:
            def write(self, data: Any) -> None:
                probe.calls.append(("write", threading.get_ident()))
                if data == "together":
                    probe.barrier.wait()  # returns only if two writes run at the same time

            def flush(self) -> None:
                probe.calls.append(("flush", threading.get_ident()))

            def close(self) -> None:
                probe.calls.append(("close", threading.get_ident()))

        return Sink()

    @hookimpl
    def register_sinks(self, register: Any) -> None:
        register(SinkSpec(name="probe", open=self._open))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        register("text", "probe", lambda tag, step, wall_time, text: text)


def test_sink_calls_run_on_the_callers_thread_and_writes_are_not_serialised(
    tmp_path: Path, register_plugin: Any
) -> None:
    probe = ThreadProbe()
    register_plugin(probe, "probe")
    w = SummaryWriter(tmp_path, sinks=["probe"])
    w.add_text("t", "alone", 0)
    w.flush()
    me = threading.get_ident()
    assert probe.calls == [("write", me), ("flush", me)]
    errors: list[BaseException] = []

    def log() -> None:
        try:
            w.add_text("t", "together", 1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=log) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == [] and not probe.barrier.broken
    writers = {ident for what, ident in probe.calls[2:] if what == "write"}
    assert writers == {t.ident for t in threads}
    w.close()
    w.close()  # idempotent: the sink is closed once
    assert [c for c in probe.calls if c[0] == "close"] == [("close", me)]


def test_plugin_kind_through_summary_record_reaches_other_sinks_and_mindspore_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warn_module, "_once", set())
    warns = pytest.warns(SinkWarning, match="sink 'mindspore' cannot encode kind 'text'")
    with warns, SummaryRecord(str(tmp_path), tensorboard=True) as record:
        record.add_value("text", "notes", "from SummaryRecord")
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(7)
    acc = load_run(tmp_path)
    [event] = acc.Tensors("notes/text_summary")
    assert event.step == 7 and event.tensor_proto.string_val == [b"from SummaryRecord"]


def test_plugins_json_format() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "plugins", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = json.loads(out.stdout)
    keys = {"name", "distribution", "version", "status", "kinds", "sinks", "encoders"}
    keys |= {"readers", "decoders", "error"}
    assert rows and all(set(r) == keys for r in rows)
    scalar = next(r for r in rows if r["name"] == "scalar")
    assert scalar["status"] == "loaded" and scalar["error"] == ""
    assert scalar["kinds"] == ["scalar"] and "scalar->tfevents" in scalar["encoders"]
    assert "tfevents->scalar" in scalar["decoders"] and scalar["readers"] == []
    mindspore = next(r for r in rows if r["name"] == "mindspore")
    assert mindspore["readers"] == ["mindspore"] and "mindspore->image" in mindspore["decoders"]
    assert all(isinstance(r["distribution"], str) and isinstance(r["version"], str) for r in rows)


def test_a_value_a_plugin_kind_rejects_raises_in_summary_record_add_value(
    tmp_path: Path, register_plugin: Any, memory_sink: Any
) -> None:
    plugin = PairPlugin()
    register_plugin(plugin, "pair")
    with SummaryRecord(str(tmp_path), sinks=["memory"]) as record:
        with pytest.raises(TypeError, match="cannot unpack"):
            record.add_value("pair", "band", 3.0)  # in the call, as on the torch face
        record.record(1)
    assert memory_sink.records == []


def test_summary_record_hands_its_extra_sinks_the_payload_convert_made_once(
    tmp_path: Path, register_plugin: Any, memory_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A payload is not converted again on its way to the extra sinks (a Pair cannot be)."""
    monkeypatch.setattr(warn_module, "_once", set())
    plugin = PairPlugin()
    register_plugin(plugin, "pair")
    with (
        pytest.warns(SinkWarning, match="sink 'mindspore' cannot encode kind 'pair'"),
        SummaryRecord(str(tmp_path), sinks=["memory"]) as record,
    ):
        record.add_value("pair", "band", (1, 2))
        record.record(3)
    [converted] = plugin.converted
    [rec] = memory_sink.records
    assert (rec.kind, rec.tag, rec.step) == ("pair", "band", 3) and rec.payload is converted
