"""The custom_scalars kind's payload: a serialized ``Layout`` message, as TensorBoard reads it.

The payload holds the message's bytes, not parsed categories: a layout read from a file (several
series in a margin chart, a category's ``closed``) is kept as written, and its row
(:func:`layout_row`) is declared once for every format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tallyboard.records.protobuild import build


@dataclass(frozen=True)
class ChartLayout:
    """The custom_scalars kind's payload: ``data``, a serialized ``Layout`` message."""

    data: bytes


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


def layout_bytes(categories: Sequence[Any]) -> bytes:
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


def chart_layout(categories: Sequence[Any]) -> ChartLayout:
    """The payload of validated categories (``layout.parse_layout``'s)."""
    return ChartLayout(layout_bytes(categories))


def layout_row(payload: ChartLayout) -> dict[str, Any]:
    """The kind's row: ``layout`` (the mapping ``add_custom_scalars`` takes) and ``data`` (the
    serialized ``Layout``)."""
    return {"layout": layout_dict(payload.data), "data": payload.data}
