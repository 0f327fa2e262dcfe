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
    """Write a TensorBoard ``Event`` as is, with ``step`` and ``walltime`` set (torch's FileWriter)."""
    writer.emit("event", EVENT_TAG, _message_bytes(event, "Event", "event"), step, walltime)


def add_summary(writer: Any, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
    """Write a TensorBoard ``Summary`` in an Event of its own (torch's FileWriter)."""
    body = _message_bytes(summary, "Summary", "summary")
    writer.emit("event", EVENT_TAG, field_bytes(5, body), global_step, walltime)


def encode(tag: str, step: int | None, wall_time: float, event: bytes) -> bytes:
    """The Event with ``wall_time`` (and ``step`` when given) set: later fields win in protobuf."""
    out = event + field_double(1, wall_time)
    return out if step is None else out + field_varint(2, step)
