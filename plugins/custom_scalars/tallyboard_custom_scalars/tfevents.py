"""Layouts as TensorBoard reads them: a serialized ``Layout`` in a rank-0 DT_STRING tensor."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import (
    DT_STRING,
    SummaryValue,
    TensorProto,
    TensorShapeProto,
    metadata,
)

from .layout import CONFIG_TAG
from .message import ChartLayout, _m, layout_dict

__all__ = ["_m", "decode", "encode"]


def encode(tag: str, step: int | None, wall_time: float, layout: ChartLayout) -> bytes:
    """One ``Event`` at tag ``custom_scalars__config__`` (the only tag TensorBoard reads)."""
    tensor = TensorProto(dtype=DT_STRING, tensor_shape=TensorShapeProto(), string_val=[layout.data])
    value = SummaryValue(tag=CONFIG_TAG, metadata=metadata("custom_scalars"), tensor=tensor)
    return summary_event(step, wall_time, [value])


def decode(value: Any, step: int, wall_time: float) -> ChartLayout | None:
    """A ``custom_scalars`` layout as the kind's payload, its serialized ``Layout`` as the file
    holds it (bytes that are no ``Layout`` are not a layout this reads)."""
    if value.metadata.plugin_data.plugin_name != "custom_scalars" or not value.HasField("tensor"):
        return None
    strings = value.tensor.string_val
    if len(strings) != 1:
        return None
    data = bytes(strings[0])
    try:
        layout_dict(data)
    except DecodeError:
        return None
    return ChartLayout(data)
