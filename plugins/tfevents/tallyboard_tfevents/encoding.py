"""Building serialized ``Event`` records: what TensorBoard encoders of every kind return.

An encoder for the ``tfevents`` sink returns the bytes of one whole ``Event``. Most kinds build
one or more ``Summary.Value`` messages and call :func:`summary_event`; the ``step`` field is left
unset when the user gave no step, as torch does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

# field_bytes and varint are also imported from here by the image and histogram kinds.
from tallyboard.records.wire import field_bytes, wall_step

_pack_d = struct.Struct("<d").pack


def event_head(step: int | None, wall_time: float) -> bytes:
    """The ``wall_time`` and ``step`` fields that start every Event."""
    if not step:  # None, or 0 which proto3 leaves out
        return b"\x09" + _pack_d(wall_time)
    return wall_step(wall_time, step)


def summary_event(step: int | None, wall_time: float, values: Iterable[Any]) -> bytes:
    """An Event holding a Summary of the given ``SummaryValue`` messages (or their bytes)."""
    body = b"".join(
        field_bytes(1, v if isinstance(v, bytes) else v.SerializeToString()) for v in values
    )
    return event_head(step, wall_time) + field_bytes(5, body)


def graph_event(step: int | None, wall_time: float, graph_def: bytes) -> bytes:
    """An Event carrying a serialized GraphDef."""
    return event_head(step, wall_time) + field_bytes(4, graph_def)


def tagged_run_metadata_event(
    step: int | None, wall_time: float, tag: str, run_metadata: bytes
) -> bytes:
    """An Event carrying ``TaggedRunMetadata``."""
    inner = field_bytes(1, tag.encode("utf-8")) + field_bytes(2, run_metadata)
    return event_head(step, wall_time) + field_bytes(8, inner)
