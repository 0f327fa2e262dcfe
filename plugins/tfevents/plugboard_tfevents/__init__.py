"""The ``tfevents`` sink plugin: TensorBoard event files.

Kinds teach this sink their encoding by registering an encoder for ``(kind, "tfevents")`` that
returns one serialized ``Event`` (see :mod:`plugboard_tfevents.encoding`).
"""

from __future__ import annotations

from typing import Any

from plugboard import SinkSpec, hookimpl

SINK = "tfevents"


@hookimpl
def register_sinks(register: Any) -> None:
    from .sink import open_sink

    register(SinkSpec(name=SINK, open=open_sink, description="TensorBoard event files (tfevents)"))


@hookimpl
def register_readers(register: Any) -> None:
    from plugboard.readers import ReaderSpec

    from .reader import matches, open_reader

    register(
        ReaderSpec(
            name=SINK, matches=matches, open=open_reader, description="TensorBoard event files"
        )
    )
