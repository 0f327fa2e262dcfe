"""The ``event`` kind: TensorBoard ``Event`` and ``Summary`` protobufs written as they are.

For code that builds TensorBoard protobufs itself and hands them to torch's file writer, such as
Lightning's ``TensorBoardLogger`` (``writer._get_file_writer().add_summary(...)``): the writer
methods ``add_event`` and ``add_summary`` take any protobuf class named ``Event``/``Summary``
(tensorboard's, torch's, tensorboardX's or tallyboard's) or its serialized bytes, and the
``tfevents`` sink writes the Event with the given step and wall time, as torch's does.
"""

from __future__ import annotations

from typing import Any

from tallyboard.records.wire import field_bytes, field_double, field_varint

#: The tag an ``event`` record carries (a TensorBoard Event itself has none).
EVENT_TAG = "__event__"


def _message_bytes(value: Any, what: str, arg: str) -> bytes:
    """Serialized ``what`` from a protobuf message of that name, or bytes that parse as one."""
    from .proto import Event, Summary

    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            (Event if what == "Event" else Summary).FromString(data)
        except Exception as exc:
            raise ValueError(f"{arg} bytes are not a serialized {what} message: {exc}") from None
        return data
    serialize = getattr(value, "SerializeToString", None)
    if callable(serialize) and getattr(getattr(value, "DESCRIPTOR", None), "name", "") == what:
        return bytes(serialize())
    raise TypeError(
        f"{arg} must be a TensorBoard {what} protobuf message or its serialized bytes, "
        f"got {type(value).__name__}"
    )


def convert(value: Any) -> bytes:
    """``add_value("event", tag, value)``: an Event message (any protobuf class) or its bytes."""
    return _message_bytes(value, "Event", "value")


def add_event(writer: Any, event: Any, step: Any = None, walltime: Any = None) -> None:
    """Write a TensorBoard ``Event`` protobuf as it is, with ``step`` and ``walltime`` set.

    For code that builds TensorBoard protobufs itself and hands them to torch's file writer
    (``writer.file_writer.add_event(event)``). The event is written to the ``tfevents`` sink as
    given, with its ``step`` and ``wall_time`` fields set from the arguments; sinks that do not
    write event files skip it (with a warning naming the sink).

    Args:
        event: A ``tensorboard.compat.proto.event_pb2.Event`` (any protobuf class named
            ``Event``: torch's, tensorboardX's) or its serialized bytes.
        step: The event's step: an int within int64. Default ``None``: the event's own step
            field, as given.
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``event`` is neither an Event message nor bytes.
        ValueError: The bytes do not parse as an Event.

    Example:
        >>> from tensorboard.compat.proto.event_pb2 import Event
        >>> from tensorboard.compat.proto.summary_pb2 import Summary
        >>> from tallyboard import SummaryWriter
        >>> summary = Summary(value=[Summary.Value(tag="loss", simple_value=0.25)])
        >>> with SummaryWriter("runs/event") as writer:
        ...     writer.add_event(Event(summary=summary), step=3)
    """
    writer.emit("event", EVENT_TAG, _message_bytes(event, "Event", "event"), step, walltime)


def add_summary(writer: Any, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
    """Write a TensorBoard ``Summary`` protobuf in an event of its own (torch's FileWriter's).

    Lightning's ``TensorBoardLogger`` calls it through ``writer._get_file_writer()``. The
    summary is written as given, inside an Event with ``global_step`` and ``walltime``; sinks
    that do not write event files skip it (with a warning naming the sink).

    Args:
        summary: A ``tensorboard.compat.proto.summary_pb2.Summary`` (any protobuf class named
            ``Summary``) or its serialized bytes.
        global_step: The event's step: an int within int64. Default ``None`` writes no step
            (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``summary`` is neither a Summary message nor bytes.
        ValueError: The bytes do not parse as a Summary.

    Example:
        >>> from tensorboard.compat.proto.summary_pb2 import Summary
        >>> from tallyboard import SummaryWriter
        >>> summary = Summary(value=[Summary.Value(tag="loss", simple_value=0.25)])
        >>> with SummaryWriter("runs/summary") as writer:
        ...     writer.add_summary(summary, global_step=3)
    """
    body = _message_bytes(summary, "Summary", "summary")
    writer.emit("event", EVENT_TAG, field_bytes(5, body), global_step, walltime)


def encode(tag: str, step: int | None, wall_time: float, event: bytes) -> bytes:
    """The Event with ``wall_time`` (and ``step`` when given) set: later fields win in protobuf."""
    out = event + field_double(1, wall_time)
    return out if step is None else out + field_varint(2, step)
