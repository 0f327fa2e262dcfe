"""The facts docs/plugins.md states about kinds, encoders and sinks, each checked here."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
import warnings
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


def test_plugin_kind_through_summary_record_reaches_other_sinks_and_mindspore_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy for kinds the MindSpore file cannot hold: they go to the record's other
    sinks; the mindspore sink, which SummaryRecord always opens, is not handed them and says
    nothing, and its file holds MindSpore's values only."""
    import mindspore_reader as msr

    monkeypatch.setattr(warn_module, "_once", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SinkWarning, no other warning
        with SummaryRecord(str(tmp_path), tensorboard=True) as record:
            record.add_value("text", "notes", "from SummaryRecord")
            record.add_value("scalar", "loss", np.float32(0.5))
            record.record(7)
    acc = load_run(tmp_path)
    [event] = acc.Tensors("notes/text_summary")
    assert event.step == 7 and event.tensor_proto.string_val == [b"from SummaryRecord"]
    [summary] = tmp_path.glob("*_MS")
    assert [(step, tag, kind) for step, tag, kind, _ in msr.values(summary)] == [
        (7, "loss", "scalar_value")
    ]


def test_a_plugin_kind_no_sink_of_the_record_holds_is_said_at_add_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With only the mindspore sink (the default), a kind it cannot hold reaches nothing: the
    mindspore sink's one warning says so at the caller's add_value line (a bad value still
    raises there), and the value is not kept."""
    monkeypatch.setattr(warn_module, "_once", set())
    with SummaryRecord(str(tmp_path)) as record:
        with pytest.warns(SinkWarning, match="sink 'mindspore' cannot encode kind 'text'") as said:
            record.add_value("text", "notes", "lost?")
        assert said[0].filename == __file__
        with pytest.raises(TypeError):
            record.add_value("text", "notes", object())
        record.add_value("scalar", "loss", 0.5)
        record.record(1)
    assert load_run_kinds(tmp_path) == ["scalar_value"]


def load_run_kinds(logdir: Path) -> list[str]:
    import mindspore_reader as msr

    [summary] = logdir.glob("*_MS")
    return [kind for _, _, kind, _ in msr.values(summary)]


def test_an_event_file_encoder_returns_event_bytes_and_nothing_else(
    tmp_path: Path, register_plugin: Any
) -> None:
    """Section 4: bytes of one serialized Event (a bytearray too); a Summary.Value is a
    TypeError in the logging call, saying what to return."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import SummaryValue

    class Returns:
        @hookimpl
        def register_kinds(self, register: Any) -> None:
            register(Kind(name="as_value", convert=float))
            register(Kind(name="as_bytearray", convert=float))

        @hookimpl
        def register_encoders(self, register: Any) -> None:
            def value(tag: str, step: Any, wall_time: float, x: float) -> Any:
                return SummaryValue(tag=tag, simple_value=x)

            def array(tag: str, step: Any, wall_time: float, x: float) -> Any:
                return bytearray(summary_event(step, wall_time, [value(tag, step, wall_time, x)]))

            register("as_value", "tfevents", value)
            register("as_bytearray", "tfevents", array)

    register_plugin(Returns(), "returns")
    with SummaryWriter(tmp_path) as w:
        w.add_value("as_bytearray", "kept", 0.5, 1)
        with pytest.raises(TypeError, match="one serialized Event.*got SummaryValue"):
            w.add_value("as_value", "refused", 0.5, 2)
        w.add_scalar("after", 1.0, 3)  # the writer goes on
    acc = load_run(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("kept")] == [(1, 0.5)]
    assert [e.step for e in acc.Scalars("after")] == [3] and "refused" not in acc.Tags()["scalars"]


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
    keys |= {"readers", "decoders", "error", "exports"}
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
    with warnings.catch_warnings(), SummaryRecord(str(tmp_path), sinks=["memory"]) as record:
        warnings.simplefilter("error", SinkWarning)  # the mindspore sink is not handed 'pair'
        record.add_value("pair", "band", (1, 2))
        record.record(3)
    [converted] = plugin.converted
    [rec] = memory_sink.records
    assert (rec.kind, rec.tag, rec.step) == ("pair", "band", 3) and rec.payload is converted


def test_value_checks_name_the_callers_argument() -> None:
    from tallyboard.values import to_array, to_float

    with pytest.raises(TypeError, match="^values must be numeric array-like, got str"):
        to_array("1, 2", arg="values")
    with pytest.raises(ValueError, match="^samples is empty"):
        to_array([], "samples")
    with pytest.raises(TypeError, match="^low must be a number"):
        to_float("x", arg="low")


def test_encoders_run_on_the_callers_thread_and_heavy_ones_after_the_call(
    tmp_path: Path, register_plugin: Any
) -> None:
    """Section 4: a plain kind's encoder runs inside the add_* call, on the caller's thread; a
    heavy kind's after the call returned (on the sink's writer thread, or in the flush/close
    that writes it)."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import SummaryValue

    calling = threading.local()  # .active: this thread is inside add_value
    seen: dict[str, list[tuple[int, bool]]] = {"light": [], "weighty": []}

    def encoder(kind: str) -> Any:
        def encode(tag: str, step: Any, wall_time: float, value: float) -> bytes:
            seen[kind].append((threading.get_ident(), getattr(calling, "active", False)))
            return summary_event(step, wall_time, [SummaryValue(tag=tag, simple_value=value)])

        return encode

    class Threads:
        @hookimpl
        def register_kinds(self, register: Any) -> None:
            register(Kind(name="light", convert=float))
            register(Kind(name="weighty", convert=float, heavy=True))

        @hookimpl
        def register_encoders(self, register: Any) -> None:
            register("light", "tfevents", encoder("light"))
            register("weighty", "tfevents", encoder("weighty"))

    register_plugin(Threads(), "threads")
    threads = []

    def log(w: SummaryWriter) -> None:
        threads.append(threading.get_ident())
        calling.active = True
        w.add_value("light", "a", 1.0, 0)
        w.add_value("weighty", "b", 2.0, 0)
        calling.active = False

    with SummaryWriter(tmp_path) as w:
        other = threading.Thread(target=log, args=(w,))
        other.start()
        other.join()
        log(w)
    assert seen["light"] == [(threads[0], True), (threads[1], True)]
    assert len(seen["weighty"]) == 2 and not any(inside for _, inside in seen["weighty"])
    assert [e.value for e in load_run(tmp_path).Scalars("b")] == [2.0, 2.0]


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
#: Names the guide uses that are the user's API, not a plugin's (documented in their own pages).
USER_API = {"tallyboard.reading.sync.sync": "the user's sync(): docs/sync.md"}


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def names_not_public(guide: str) -> list[str]:
    """Every tallyboard name the guide uses that ``PUBLIC`` does not list: imported in its code
    blocks (``from tallyboard_x import y``) or written in its prose (``tallyboard.values.
    to_array``); ``Class.attribute`` of a public class must exist; fixture names of
    ``tallyboard.testing`` count as its names."""
    import ast
    import re

    from tallyboard.plugin.public import PUBLIC, is_public

    bad: list[str] = []
    for block in re.findall(r"```python\n(.*?)```", guide, re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tallyboard"):
                bad += [
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if not is_public(str(node.module), a.name)
                ]
    public_classes = {n: m for m, names in PUBLIC.items() for n in names if n[:1].isupper()}
    for token in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", guide, flags=re.S)):
        dotted = re.match(r"(tallyboard\w*(?:\.\w+)*)(?![*<\w])", token)  # not tallyboard_*
        attribute = re.match(r"([A-Z]\w+)\.([a-z_]\w*)", token)
        if dotted:
            parts = dotted.group(1).split(".")
            if len(parts) == 1 and parts[0] in PUBLIC["tallyboard.testing"]:
                continue  # a fixture: tallyboard_registry
            cut = next((c for c in range(len(parts), 0, -1) if _is_module(".".join(parts[:c]))), 0)
            module, rest = ".".join(parts[:cut]), parts[cut:]
            name = f"{module}.{rest[0]}" if rest else module
            if name not in USER_API and not (
                is_public(module, rest[0]) if rest else is_public(module)
            ):
                bad.append(name or token)
        elif attribute and attribute.group(1) in public_classes:
            cls = getattr(
                importlib.import_module(public_classes[attribute.group(1)]), attribute.group(1)
            )
            fields = getattr(cls, "__dataclass_fields__", {})
            if not hasattr(cls, attribute.group(2)) and attribute.group(2) not in fields:
                bad.append(token)
    return sorted(set(bad))


def test_every_name_the_guide_uses_is_public() -> None:
    """A name the plugin guide shows an author (imported in a block, or dotted in the prose) is
    one ``tallyboard.plugin.public.PUBLIC`` lists; and the check finds one that is not."""
    assert names_not_public(GUIDE.read_text()) == []
    planted = "Use `tallyboard.records.rows.QueuedRows` or `Kind.no_such` and\n\n```python\n"
    planted += "from tallyboard.faces.writer_methods import WriterMethods\n```\n"
    assert names_not_public(planted) == [
        "Kind.no_such",
        "tallyboard.faces.writer_methods.WriterMethods",
        "tallyboard.records.rows.QueuedRows",
    ]
