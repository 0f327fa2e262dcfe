"""The hint SummaryRecord.add_value appends to its error when its arguments look out of order.

Built only once a check has failed, so correct calls pay nothing; the hints of the plugins'
methods (a tag and a value in each other's place) are in :mod:`tallyboard.values`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tallyboard.values import describe


def add_value_order(plugin: Any, name: Any, value: Any, plugins: Collection[str]) -> str:
    """A sentence to append to SummaryRecord.add_value's error when its arguments look out of
    order (its order is ``add_value(plugin, name, value)``), else ``""``.

    ``plugins`` are the plugin names add_value knows. Two mistakes are recognised: the name
    first and the plugin second (``add_value("loss", "scalar", x)``), and the value before the
    name (``add_value("scalar", x, "loss")``).
    """
    known = set(plugins)
    if (
        isinstance(name, str)
        and name in known
        and not (isinstance(plugin, str) and plugin in known)
    ):
        return (
            f" (plugin and name look swapped, {name!r} is a plugin and {plugin!r} is not: "
            f"call add_value({name!r}, {plugin!r}, value))"
        )
    if not isinstance(name, str) and isinstance(value, str):
        return (
            f" (name and value look swapped, name got {describe(name)} and value the str "
            f"{value!r}: call add_value({plugin!r}, {value!r}, value))"
        )
    return ""
