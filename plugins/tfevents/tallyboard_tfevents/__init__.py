"""The ``tfevents`` sink plugin: TensorBoard event files.

Kinds teach this sink their encoding by registering an encoder for ``(kind, "tfevents")`` that
returns one serialized ``Event`` (see :mod:`tallyboard_tfevents.encoding`). The ``event`` kind
(``add_event``, ``add_summary``) writes TensorBoard protobufs built elsewhere as they are
(see :mod:`tallyboard_tfevents.raw`).
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, SinkSpec, hookimpl

SINK = "tfevents"


@hookimpl
def register_sinks(register: Any) -> None:
    from .sink import open_sink

    register(
        SinkSpec(
            name=SINK,
            open=open_sink,
            description="TensorBoard event files (tfevents)",
            tensorboard_summaries=True,
        )
    )


@hookimpl
def register_kinds(register: Any) -> None:
    from .raw import add_event, add_summary, convert

    register(
        Kind(
            name="event",
            convert=convert,
            methods={"add_event": add_event, "add_summary": add_summary},
            description="TensorBoard Event/Summary protobufs, written as they are",
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .raw import encode

    register("event", SINK, encode)


@hookimpl
def register_readers(register: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    from .reader import matches, open_reader

    register(
        ReaderSpec(
            name=SINK,
            matches=matches,
            open=open_reader,
            description="TensorBoard event files",
            priority=0,
        )
    )
