"""What docs/plugins.md says of decoders, held for each built-in format that has them (tfevents,
mindspore, jsonl): what a decoder receives, that it may set the row's ``tag``, the order in
which decoders are asked when several could take a value, that a value none takes is counted,
and that ``tallyboard plugins`` lists decoders per (format, kind)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from tallyboard import Kind, SummaryRecord, SummaryWriter, hookimpl
from tallyboard.plugin.readers import Batch
from tallyboard.reading.runs import RunReader

pytest_plugins = ["tallyboard.testing"]

#: (tag, step) each test kind takes; both take ("x", 1) and ("y", 0); none takes "z".
TAKES = {
    "first": {("x", 1), ("x", 2), ("y", 0)},
    "second": {("x", 0), ("x", 1), ("y", 0)},
}


class Claims:
    """Two decoders of kinds ``first`` and ``second`` (registered in that order) for ``fmt``;
    each takes the (tag, step) pairs of :data:`TAKES` and keeps what it was called with."""

    def __init__(self, fmt: str, kinds: tuple[str, ...] = ("first", "second")) -> None:
        self.fmt, self.kinds = fmt, kinds
        self.seen: list[tuple[str, Any, Any, Any]] = []

    def decoder(self, kind: str) -> Any:
        def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
            self.seen.append((kind, value, step, wall_time))
            tag = value.get("tag") if isinstance(value, dict) else value.tag
            if (tag, step) not in TAKES[kind]:
                return None
            return {"by": kind, "tag": f"{tag}/{kind}"}  # a decoder may set the row's tag

        return decode

    @hookimpl
    def register_decoders(self, register: Any) -> None:
        for kind in self.kinds:
            register(self.fmt, kind, self.decoder(kind))


def _read(logdir: Path, fmt: str) -> Batch:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the mindspore sink's "cannot encode" for test kinds
        [(run, reader)] = list(RunReader(str(logdir), [fmt]).discover())
        return reader.read_new()


def _rows(batch: Batch) -> dict[str, list[tuple[str, int]]]:
    return {k: [(r["tag"], r["step"]) for r in rows] for k, rows in sorted(batch.rows.items())}


EXPECTED_ROWS = {
    "first": [("x/first", 2), ("y/first", 0)],
    "second": [("x/second", 0), ("x/second", 1)],
}


def test_tfevents_decoders_get_the_summary_value_and_are_asked_in_order(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard_tfevents.proto import Event, SummaryValue, metadata

    claims = Claims("tfevents")
    register_plugin(claims, "claims")
    with SummaryWriter(tmp_path) as w:
        for tag, step in [("x", 0), ("x", 1), ("x", 2), ("y", 0), ("z", 0)]:
            value = SummaryValue(tag=tag, metadata=metadata("claims", b"payload"))
            w.add_event(Event(summary={"value": [value]}), step, walltime=100.5)
    batch = _read(tmp_path, "tfevents")
    assert _rows(batch) == EXPECTED_ROWS
    assert batch.undecoded == {("claims", "z"): 1}  # counted, never dropped
    kind, value, step, wall = claims.seen[0]
    assert isinstance(value, type(SummaryValue())) and value.tag == "x"
    assert value.metadata.plugin_data.content == b"payload" and (step, wall) == (0, 100.5)
    # ("x", 1): "second" took "x" before, so it is asked first, and "first" is never asked
    asked_x1 = [k for k, v, s, _ in claims.seen if (v.tag, s) == ("x", 1)]
    assert asked_x1 == ["second"]
    # ("y", 0): no kind took "y" yet: registration order, "first" answers
    assert [k for k, v, s, _ in claims.seen if (v.tag, s) == ("y", 0)] == ["first"]


def test_tfevents_event_field_decoders_each_get_the_whole_event(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard_tfevents.proto import Event, SessionLog

    class SessionDecoders:
        @hookimpl
        def register_decoders(self, register: Any) -> None:
            for kind in ("sessions", "sessions_too"):

                def decode(event: Any, step: int, wall_time: float, kind: str = kind) -> Any:
                    assert isinstance(event, type(Event()))
                    return {"tag": f"{kind}:{event.session_log.status}", "seen": step}

                decode.event_field = "session_log"  # type: ignore[attr-defined]
                register("tfevents", kind, decode)

    register_plugin(SessionDecoders(), "sessions")
    with SummaryWriter(tmp_path) as w:
        w.add_event(Event(step=4, session_log=SessionLog(status=1)))  # START
    batch = _read(tmp_path, "tfevents")
    assert _rows(batch) == {
        "sessions": [("sessions:1", 4)],
        "sessions_too": [("sessions_too:1", 4)],
    }


def test_mindspore_decoders_get_a_mindspore_value_and_are_asked_in_order(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard.faces.summary_record import LossLandscape
    from tallyboard_mindspore.reader import MindSporeValue

    claims = Claims("mindspore")
    register_plugin(claims, "claims")
    with SummaryRecord(tmp_path) as record:  # loss landscapes: no built-in decoder reads them
        for tag, step in [("x", 0), ("x", 1), ("x", 2), ("y", 0), ("z", 0)]:
            record.add_value("landscape", tag, LossLandscape())
            record.record(step)
    batch = _read(tmp_path, "mindspore")
    assert _rows(batch) == EXPECTED_ROWS
    assert batch.undecoded == {("loss_landscape", "z"): 1}
    kind, value, step, wall = claims.seen[0]
    assert isinstance(value, MindSporeValue) and (value.tag, value.value_field) == ("x", 10)
    assert value.event_field == 5 and isinstance(value.data, bytes) and step == 0 and wall > 0
    assert [k for k, v, s, _ in claims.seen if (v.tag, s) == ("x", 1)] == ["second"]
    assert [k for k, v, s, _ in claims.seen if (v.tag, s) == ("y", 0)] == ["first"]


def test_jsonl_decoders_get_the_line_s_value_by_its_kind(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard_jsonl import encoder_for

    class Stars:
        @hookimpl
        def register_kinds(self, register: Any) -> None:
            register(Kind(name="first", convert=dict))

        @hookimpl
        def register_encoders(self, register: Any) -> None:
            register("first", "jsonl", encoder_for("first", lambda payload: payload))

    register_plugin(Stars(), "stars")
    claims = Claims("jsonl", kinds=("first",))
    register_plugin(claims, "claims")
    with SummaryWriter(tmp_path, sinks=["jsonl"]) as w:
        for tag, step in [("x", 2), ("y", 0), ("x", 0)]:
            w.add_value("first", tag, {"tag": tag, "n": step}, step)
    line = json.loads((tmp_path / "records.jsonl").read_text().splitlines()[0])
    assert line["kind"] == "first" and line["value"] == {"tag": "x", "n": 2}
    batch = _read(tmp_path, "jsonl")
    assert _rows(batch) == {"first": [("x/first", 2), ("y/first", 0)]}
    assert batch.undecoded == {("first", "x"): 1}  # ("x", 0): declined, counted
    assert [v for _, v, _, _ in claims.seen] == [
        {"tag": "x", "n": 2},
        {"tag": "y", "n": 0},
        {"tag": "x", "n": 0},
    ]


def test_plugins_lists_decoders_per_format_and_kind(register_plugin: Any) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "plugins"], capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    i = out.index("mindspore  (tallyboard 0.1.0)  [loaded]")
    block = out[i + 1 : i + 8]
    assert "    readers: mindspore" in block
    decoders = next(line for line in block if line.startswith("    decoders: "))
    assert decoders.split(": ", 1)[1].split(", ")[:2] == ["mindspore->scalar", "mindspore->image"]
    listed = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tallyboard", "plugins", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    pairs = [d for p in listed for d in p["decoders"]]
    from tallyboard.plugin.registry import get_registry

    assert pairs == [f"{f}->{k}" for f, k in get_registry().decoders]  # the order readers ask in
    order = list(get_registry().decoders_of("tfevents"))
    assert order == [p.split("->")[1] for p in pairs if p.startswith("tfevents->")]


@pytest.mark.parametrize("fmt", ["tfevents", "mindspore", "jsonl"])
def test_the_guide_names_what_each_format_hands_its_decoders(fmt: str) -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "plugins.md").read_text()
    section = text.split("### Decoders: teaching a reader a kind", 1)[1].split("\n## ", 1)[0]
    assert f"| `{fmt}` |" in section
