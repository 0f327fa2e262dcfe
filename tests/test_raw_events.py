"""``add_event``/``add_summary`` and ``_get_file_writer()``: TensorBoard protobufs written as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_run, raw_events
from tallyboard import SummaryWriter


def test_file_writer_takes_tensorboard_protobufs(logdir: Path) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    writer = SummaryWriter(logdir)
    file_writer = writer._get_file_writer()
    assert file_writer.get_logdir() == str(logdir)  # a str, as torch's FileWriter gives
    file_writer.add_summary(Summary(value=[Summary.Value(tag="x", simple_value=3.0)]), 4)
    file_writer.add_summary(Summary(value=[Summary.Value(tag="x", simple_value=5.0)]), 6, 100.0)
    stamped = Event(step=9, wall_time=1.0, summary=Summary(value=[Summary.Value(tag="y")]))
    file_writer.add_event(stamped, 0, 50.0)  # step 0 given: it replaces the event's 9, as torch
    file_writer.add_event(stamped.SerializeToString())  # no step: the event's own step stays
    file_writer.flush()
    acc = load_run(logdir)
    assert [(e.step, e.value) for e in acc.Scalars("x")] == [(4, 3.0), (6, 5.0)]
    assert acc.Scalars("x")[1].wall_time == 100.0
    events = raw_events(logdir)[1:]
    assert [(e.step, e.wall_time) for e in events[2:]] == [(0, 50.0), (9, events[3].wall_time)]
    assert events[3].wall_time > 1.0  # stamped now, as torch's FileWriter does
    file_writer.close()
    assert writer._closed


def test_tallyboard_and_torch_messages_and_bytes_are_accepted(logdir: Path) -> None:
    from tallyboard_tfevents.proto import Summary, SummaryValue
    from torch.utils.tensorboard.summary import scalar

    with SummaryWriter(logdir) as writer:
        writer.add_summary(scalar("torch", 1.5), 1)  # torch's summary helpers
        writer.add_summary(Summary(value=[SummaryValue(tag="mine", simple_value=2.5)]), 2)
        writer.add_value("event", "any", b"")  # an empty Event is a valid Event
    acc = load_run(logdir)
    assert [e.value for e in acc.Scalars("torch")] == [1.5]
    assert [e.value for e in acc.Scalars("mine")] == [2.5]


def test_bad_protobuf_input_raises_in_the_caller(logdir: Path) -> None:
    from tensorboard.compat.proto.summary_pb2 import Summary

    with SummaryWriter(logdir) as writer:
        with pytest.raises(TypeError, match="summary must be a TensorBoard Summary"):
            writer.add_summary({"tag": "x"}, 0)
        with pytest.raises(TypeError, match="event must be a TensorBoard Event"):
            writer.add_event(Summary(), 0)  # a Summary is no Event
        with pytest.raises(ValueError, match="not a serialized Event"):
            writer.add_event(b"\xff\xff\xff", 0)
        with pytest.raises(TypeError, match="global_step must be an int"):
            writer.add_summary(Summary(), 1.5)
        writer.add_scalar("kept", 1.0, 0)
    assert [e.value for e in load_run(logdir).Scalars("kept")] == [1.0]


def test_a_sink_without_an_encoder_is_told_once(logdir: Path) -> None:
    from tallyboard.faces.summary_writer import SinkWarning
    from tensorboard.compat.proto.summary_pb2 import Summary

    with (
        SummaryWriter(logdir, sinks=["tfevents", "jsonl"]) as writer,
        pytest.warns(SinkWarning, match="'jsonl' cannot encode kind 'event'"),
    ):
        writer.add_summary(Summary(value=[Summary.Value(tag="x", simple_value=1.0)]), 0)
    assert [e.value for e in load_run(logdir).Scalars("x")] == [1.0]
