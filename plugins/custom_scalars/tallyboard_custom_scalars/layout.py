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


def _payload(categories: tuple[Category, ...]) -> Any:
    """The kind's payload (``message.ChartLayout``) of validated categories."""
    from .message import chart_layout

    return chart_layout(categories)


def convert(value: Any) -> Any:
    """``add_value("custom_scalars", tag, value)``: a layout dict as the kind's payload, a
    ``message.ChartLayout``."""
    return _payload(parse_layout(value, "value"))


def add_custom_scalars(writer: Any, layout: Any) -> None:
    """Lay out charts of scalar tags on the CUSTOM SCALARS tab: several tags per chart.

    ``layout`` is ``{category: {chart title: [chart type, tags]}}``. A ``"Multiline"`` chart
    (any type other than ``"Margin"`` is one) draws every scalar tag matching one of its tags;
    TensorBoard reads them as regular expressions matched from the start of the tag (so
    ``"loss"`` also matches ``"losses"``; write ``"loss$"`` for one tag). A ``"Margin"`` chart
    takes exactly three tags ``[value, lower, upper]`` and draws the value with a band between
    the bounds. Each category is a collapsible group. Written at step 0 under the tag
    ``custom_scalars__config__``; each call writes another layout, and TensorBoard shows the
    last one. The layout only arranges tags: log their values with :meth:`add_scalar`.

    Args:
        layout: ``{category (str): {title (str): [type (str), tags (list of str)]}}``, not
            empty; every chart needs at least one tag.

    Raises:
        TypeError: ``layout`` or one of its parts is not a dict / list / str as above.
        ValueError: ``layout`` is empty, a chart is not ``[type, tags]``, it has no tag, or a
            Margin chart does not have exactly three.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/custom_scalars") as writer:
        ...     writer.add_custom_scalars({
        ...         "training": {
        ...             "losses": ["Multiline", ["loss/train$", "loss/val$"]],
        ...             "accuracy": ["Margin", ["acc/mean", "acc/low", "acc/high"]],
        ...         },
        ...     })
        ...     for step in range(10):
        ...         writer.add_scalar("loss/train", 1 / (step + 1), step)
        ...         writer.add_scalar("loss/val", 1.2 / (step + 1), step)
    """
    writer.emit("custom_scalars", CONFIG_TAG, _payload(parse_layout(layout)))


def add_custom_scalars_multilinechart(
    writer: Any, tags: Any, category: str = "default", title: str = "untitled"
) -> None:
    """Add one chart to the CUSTOM SCALARS tab drawing every scalar tag that matches ``tags``.

    The same as ``add_custom_scalars({category: {title: ["Multiline", tags]}})``: the tags are
    regular expressions matched from the start of a tag. Each call writes a new layout holding
    only this chart, and TensorBoard shows the last layout written, so to show several charts
    give them all to :meth:`add_custom_scalars` in one call.

    Args:
        tags: A non-empty list of str: tag patterns, each a line or a group of lines.
        category: The group the chart goes in, a str. Default ``"default"``.
        title: The chart's title, a str. Default ``"untitled"``.

    Raises:
        TypeError: ``tags`` is not a list of str; ``category`` or ``title`` is not a str.
        ValueError: ``tags`` is empty.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/multiline") as writer:
        ...     writer.add_custom_scalars_multilinechart(["loss/"], title="every loss")
        ...     writer.add_scalar("loss/train", 0.5, 0)
        ...     writer.add_scalar("loss/val", 0.6, 0)
    """
    _str(category, "category")
    _str(title, "title")
    chart = Chart(title, False, _tags(tags, "tags"))
    writer.emit("custom_scalars", CONFIG_TAG, _payload((Category(category, (chart,)),)))


def add_custom_scalars_marginchart(
    writer: Any, tags: Any, category: str = "default", title: str = "untitled"
) -> None:
    """Add a chart to the CUSTOM SCALARS tab: a value in a band between two bounds.

    The same as ``add_custom_scalars({category: {title: ["Margin", tags]}})``. Each call writes
    a new layout holding only this chart, and TensorBoard shows the last layout written; give
    several charts to :meth:`add_custom_scalars` in one call.

    Args:
        tags: Exactly three str tags ``[value, lower, upper]``.
        category: The group the chart goes in, a str. Default ``"default"``.
        title: The chart's title, a str. Default ``"untitled"``.

    Raises:
        TypeError: ``tags`` is not a list of str; ``category`` or ``title`` is not a str.
        ValueError: ``tags`` does not hold exactly three tags.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/margin") as writer:
        ...     writer.add_custom_scalars_marginchart(["acc", "acc_low", "acc_high"])
        ...     for step, acc in enumerate([0.6, 0.7, 0.8]):
        ...         writer.add_scalar("acc", acc, step)
        ...         writer.add_scalar("acc_low", acc - 0.05, step)
        ...         writer.add_scalar("acc_high", acc + 0.05, step)
    """
    _str(category, "category")
    _str(title, "title")
    checked = _tags(tags, "tags")
    if len(checked) != 3:
        raise ValueError(f"tags must be exactly 3 tags [value, lower, upper], got {len(checked)}")
    chart = Chart(title, True, checked)
    writer.emit("custom_scalars", CONFIG_TAG, _payload((Category(category, (chart,)),)))
