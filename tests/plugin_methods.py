"""The ``add_*`` methods the plugins that ship with tallyboard give SummaryWriter."""

from __future__ import annotations

from typing import Any


def builtin_methods() -> dict[str, Any]:
    """Every ``add_*`` method registered by a plugin that ships with tallyboard (an entry point
    of the tallyboard distribution itself; a third-party ``tallyboard_*`` package is not one)."""
    from importlib import metadata

    from tallyboard.plugin.registry import ENTRY_POINT_GROUP, get_registry

    builtin = {
        ep.value.split(":")[0].split(".")[0]
        for ep in metadata.distribution("tallyboard").entry_points
        if ep.group == ENTRY_POINT_GROUP
    }
    return {
        name: fn
        for name, (_, fn) in sorted(get_registry().methods.items())
        if fn.__module__.split(".")[0] in builtin
    }
