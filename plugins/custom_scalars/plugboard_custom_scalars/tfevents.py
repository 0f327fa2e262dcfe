"""Layouts as TensorBoard reads them: a serialized ``Layout`` in a rank-0 DT_STRING tensor."""

from __future__ import annotations

from typing import Any

from plugboard.protobuild import build
from plugboard_tfevents.encoding import summary_event
from plugboard_tfevents.proto import (
    DT_STRING,
    SummaryValue,
    TensorProto,
    TensorShapeProto,
    metadata,
)

from .layout import CONFIG_TAG, Category

_m = build(
    "plugboard.custom_scalars",
    {
        "Layout": [("version", 1, "int32"), ("category", 2, "Category", "repeated")],
        "Category": [
            ("title", 1, "string"),
            ("chart", 2, "Chart", "repeated"),
            ("closed", 3, "bool"),
        ],
        "Chart": [
            ("title", 1, "string"),
            ("multiline", 2, "MultilineChartContent", "oneof:content"),
            ("margin", 3, "MarginChartContent", "oneof:content"),
        ],
        "MultilineChartContent": [("tag", 1, "string", "repeated")],
        "MarginChartContent": [("series", 1, "Series", "repeated")],
        "Series": [("value", 1, "string"), ("lower", 2, "string"), ("upper", 3, "string")],
    },
)
Layout: Any = _m["Layout"]


def layout_bytes(categories: tuple[Category, ...]) -> bytes:
    """The serialized ``Layout`` message."""
    layout = Layout()
    for cat in categories:
        c = layout.category.add(title=cat.title)
        for chart in cat.charts:
            ch = c.chart.add(title=chart.title)
            if chart.margin:
                value, lower, upper = chart.tags
                ch.margin.series.add(value=value, lower=lower, upper=upper)
            else:
                ch.multiline.tag.extend(chart.tags)
    return bytes(layout.SerializeToString())


def encode(tag: str, step: int | None, wall_time: float, categories: tuple[Category, ...]) -> bytes:
    """One ``Event`` at tag ``custom_scalars__config__`` (the only tag TensorBoard reads)."""
    tensor = TensorProto(
        dtype=DT_STRING, tensor_shape=TensorShapeProto(), string_val=[layout_bytes(categories)]
    )
    value = SummaryValue(tag=CONFIG_TAG, metadata=metadata("custom_scalars"), tensor=tensor)
    return summary_event(step, wall_time, [value])
