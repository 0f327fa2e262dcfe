"""Layouts as TensorBoard reads them: a serialized ``Layout`` in a rank-0 DT_STRING tensor."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError
from tallyboard.records.protobuild import build
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import (
    DT_STRING,
    SummaryValue,
    TensorProto,
    TensorShapeProto,
    metadata,
)

from .layout import CONFIG_TAG, Category

_m = build(
    "tallyboard.custom_scalars",
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


def layout_dict(data: bytes) -> dict[str, dict[str, list[Any]]]:
    """A serialized ``Layout`` as the mapping ``add_custom_scalars`` takes:
    ``{category: {chart: ["Multiline", [tags]] | ["Margin", [value, lower, upper]]}}``."""
    layout = Layout.FromString(data)
    out: dict[str, dict[str, list[Any]]] = {}
    for cat in layout.category:
        charts = out.setdefault(cat.title, {})
        for chart in cat.chart:
            if chart.WhichOneof("content") == "margin":
                tags = [t for s in chart.margin.series for t in (s.value, s.lower, s.upper)]
                charts[chart.title] = ["Margin", tags]  # several series: 3 tags each
            else:
                charts[chart.title] = ["Multiline", list(chart.multiline.tag)]
    return out


def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A ``custom_scalars`` layout as ``layout`` (the mapping ``add_custom_scalars`` takes, so a
    read layout can be logged again) and ``data`` (the serialized ``Layout`` proto)."""
    if value.metadata.plugin_data.plugin_name != "custom_scalars" or not value.HasField("tensor"):
        return None
    strings = value.tensor.string_val
    if len(strings) != 1:
        return None
    data = bytes(strings[0])
    try:
        layout = layout_dict(data)
    except DecodeError:  # not a Layout: not a layout this reads
        return None
    return {"layout": layout, "data": data}
