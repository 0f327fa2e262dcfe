"""The plugin contract in one import: hooks, kinds, sinks, network sinks, readers, the registry.

``from tallyboard.plugin import Kind, SinkSpec, NetworkSink, ReaderSpec, hookimpl`` gives a plugin
everything it registers; each name lives in one of this package's modules (``hookspecs``,
``kinds``, ``sinks``, ``network``, ``readers``, ``registry``), which may be imported too. The
whole public surface a plugin may import is listed in :data:`tallyboard.plugin.public.PUBLIC`.
Names load on first use, so ``import tallyboard`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "hookimpl": "hookspecs",
    "CONTRACT_VERSION": "hookspecs",
    "Kind": "kinds",
    "SinkSpec": "sinks",
    "SinkOptions": "sinks",
    "Sink": "sinks",
    "SinkEntry": "sinks",
    "SinkTarget": "sinks",
    "Deferred": "sinks",
    "resolve": "sinks",
    "parse_sink": "sinks",
    "parse_sinks": "sinks",
    "NetworkSink": "network",
    "NetworkSettings": "network",
    "Refused": "network",
    "ReaderSpec": "readers",
    "Batch": "readers",
    "ChunkedFileReader": "readers",
    "warn_corrupt": "readers",
    "get_registry": "registry",
    "add_plugin": "registry",
    "remove_plugin": "registry",
    "PluginWarning": "registry",
    "PUBLIC": "public",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tallyboard.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tallyboard.plugin.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


if TYPE_CHECKING:
    from tallyboard.plugin.hookspecs import CONTRACT_VERSION as CONTRACT_VERSION
    from tallyboard.plugin.hookspecs import hookimpl as hookimpl
    from tallyboard.plugin.kinds import Kind as Kind
    from tallyboard.plugin.network import NetworkSettings as NetworkSettings
    from tallyboard.plugin.network import NetworkSink as NetworkSink
    from tallyboard.plugin.network import Refused as Refused
    from tallyboard.plugin.public import PUBLIC as PUBLIC
    from tallyboard.plugin.readers import Batch as Batch
    from tallyboard.plugin.readers import ChunkedFileReader as ChunkedFileReader
    from tallyboard.plugin.readers import ReaderSpec as ReaderSpec
    from tallyboard.plugin.readers import warn_corrupt as warn_corrupt
    from tallyboard.plugin.registry import PluginWarning as PluginWarning
    from tallyboard.plugin.registry import add_plugin as add_plugin
    from tallyboard.plugin.registry import get_registry as get_registry
    from tallyboard.plugin.registry import remove_plugin as remove_plugin
    from tallyboard.plugin.sinks import Deferred as Deferred
    from tallyboard.plugin.sinks import Sink as Sink
    from tallyboard.plugin.sinks import SinkEntry as SinkEntry
    from tallyboard.plugin.sinks import SinkOptions as SinkOptions
    from tallyboard.plugin.sinks import SinkSpec as SinkSpec
    from tallyboard.plugin.sinks import SinkTarget as SinkTarget
    from tallyboard.plugin.sinks import parse_sink as parse_sink
    from tallyboard.plugin.sinks import parse_sinks as parse_sinks
    from tallyboard.plugin.sinks import resolve as resolve
