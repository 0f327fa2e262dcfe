"""Error messages that name the fix, for mistakes people make with the faces' methods.

Each function here runs only once a check has already failed (or, for a cheap type test, once
an argument is of a type it never has in a correct call), so correct calls pay nothing. A hint
recognises one mistake, such as a tag and a value passed in each other's place, and says how to
write the call instead; when it does not recognise the mistake it leaves the original error as
it was.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

_SHOWN = 40  # characters of a value's repr a message shows


def describe(value: Any) -> str:
    """A short description of ``value`` for a message: its type and, for arrays, its shape."""
    name = type(value).__name__
    shape = getattr(value, "shape", None)
    if shape and not isinstance(value, (str, bytes)):
        try:
            return f"{name} of shape {tuple(int(n) for n in shape)}"
        except (TypeError, ValueError):
            pass
    text = repr(value.item() if shape == () and hasattr(value, "item") else value)
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    return f"{name} {text}"


def swapped_tag(
    method: str, tag: Any, value: Any, value_arg: str, tag_arg: str = "tag"
) -> str | None:
    """The message for ``method(value, tag, ...)``: a tag that is no str and a value that is one.

    Returns None when the two do not look swapped (``tag`` is a str, or ``value`` is not).
    """
    if isinstance(tag, str) or not isinstance(value, str):
        return None
    shown = value if len(value) <= _SHOWN else value[: _SHOWN - 3] + "..."
    return (
        f"{tag_arg} and {value_arg} look swapped: {tag_arg} got {describe(tag)} and "
        f"{value_arg} got the str {shown!r}; the tag comes first: "
        f"{method}({tag_arg}, {value_arg}, ...)"
    )


def raise_if_swapped(
    method: str, tag: Any, value: Any, value_arg: str, tag_arg: str = "tag"
) -> None:
    """Raise TypeError with :func:`swapped_tag`'s message when it has one; else return.

    Call it in an ``except`` block around the check of the value, then re-raise the original
    error when it returns.
    """
    message = swapped_tag(method, tag, value, value_arg, tag_arg)
    if message is not None:
        raise TypeError(message) from None


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
