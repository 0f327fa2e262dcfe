"""Custom-scalar layouts: ``{category: {chart_title: [type, tags]}}`` validated into plain data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tallyboard.values import check_text

CONFIG_TAG = "custom_scalars__config__"


@dataclass(frozen=True)
class Chart:
    """One chart: ``margin`` charts have tags (value, lower, upper); multiline charts any regexes."""

    title: str
    margin: bool
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Category:
    """A collapsible group of charts."""

    title: str
    charts: tuple[Chart, ...]


def _tags(tags: Any, arg: str) -> tuple[str, ...]:
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Sequence):
        raise TypeError(f"{arg} must be a list of str tags, got {type(tags).__name__}: {tags!r}")
    for i, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise TypeError(f"{arg} must hold str tags, got {type(tag).__name__}: {tag!r}")
        check_text(tag, f"{arg}[{i}]")
    if not tags:
        raise ValueError(f"{arg} is empty: a chart needs at least one tag")
    return tuple(tags)


def _str(value: Any, arg: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{arg} must be a str, got {type(value).__name__}: {value!r}")
    return check_text(value, arg)


def parse_layout(layout: Any, arg: str = "layout") -> tuple[Category, ...]:
    """Validate torch's layout dict; a ``'Margin'`` chart needs exactly 3 tags."""
    if not isinstance(layout, Mapping):
        raise TypeError(
            f"{arg} must be a dict {{category: {{title: [type, tags]}}}}, got {type(layout).__name__}"
        )
    if not layout:
        raise ValueError(f"{arg} is empty")
    categories = []
    for cat_title, charts in layout.items():
        _str(cat_title, f"{arg} category")
        where = f"{arg}[{cat_title!r}]"
        if not isinstance(charts, Mapping):
            raise TypeError(
                f"{where} must be a dict {{title: [type, tags]}}, got {type(charts).__name__}"
            )
        parsed = []
        for title, spec in charts.items():
            _str(title, f"{where} chart title")
            here = f"{where}[{title!r}]"
            if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence) or len(spec) != 2:
                raise ValueError(f"{here} must be [type, tags], got {spec!r}")
            kind = _str(spec[0], f"{here} type")
            tags = _tags(spec[1], f"{here} tags")
            if kind == "Margin" and len(tags) != 3:
                raise ValueError(
                    f"{here}: a Margin chart needs exactly 3 tags [value, lower, upper], got {len(tags)}"
                )
            parsed.append(Chart(title, kind == "Margin", tags))
        categories.append(Category(cat_title, tuple(parsed)))
    return tuple(categories)


def add_custom_scalars(writer: Any, layout: Any) -> None:
    """Lay out scalar tags in charts: ``{category: {title: ['Multiline' | 'Margin', tags]}}``."""
    writer.emit("custom_scalars", CONFIG_TAG, parse_layout(layout))


def add_custom_scalars_multilinechart(
    writer: Any, tags: Any, category: str = "default", title: str = "untitled"
) -> None:
    """One chart plotting every scalar tag matching ``tags`` (regexes, matched from the start)."""
    _str(category, "category")
    _str(title, "title")
    chart = Chart(title, False, _tags(tags, "tags"))
    writer.emit("custom_scalars", CONFIG_TAG, (Category(category, (chart,)),))


def add_custom_scalars_marginchart(
    writer: Any, tags: Any, category: str = "default", title: str = "untitled"
) -> None:
    """One chart of a value with its lower and upper bounds: ``tags = [value, lower, upper]``."""
    _str(category, "category")
    _str(title, "title")
    checked = _tags(tags, "tags")
    if len(checked) != 3:
        raise ValueError(f"tags must be exactly 3 tags [value, lower, upper], got {len(checked)}")
    chart = Chart(title, True, checked)
    writer.emit("custom_scalars", CONFIG_TAG, (Category(category, (chart,)),))
