"""The plugin contract: every hook a tallyboard plugin may implement.

A plugin is a module (or object) registered under the ``tallyboard`` entry-point group. It
implements any of the hooks below with the :data:`hookimpl` marker. Each registration hook is
called exactly once, when the registry is first built, and hands the plugin a ``register``
callback; nothing here is called per logged value.

Example::

    from tallyboard import hookimpl, Kind

    @hookimpl
    def register_kinds(register):
        register(Kind(name="note", convert=str, methods={"add_note": add_note}))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "tallyboard"

#: Version of this contract. A plugin may declare ``TALLYBOARD_CONTRACT = N``; a plugin built
#: for another major contract version is refused with a message naming it.
CONTRACT_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_kinds(register: Callable[[Any], None]) -> None:
    """Register data kinds (``tallyboard.Kind``): what users log and the methods that log it."""


@hookspec
def register_sinks(register: Callable[[Any], None]) -> None:
    """Register sinks (``tallyboard.SinkSpec``): where records go, chosen by name or URL scheme."""


@hookspec
def register_encoders(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    """Register encoders: ``register(kind_name, sink_name, encode)`` teaches a sink a kind."""


@hookspec
def register_event_handlers(register: Callable[[Callable[[Any], None]], None]) -> None:
    """Register torch.monitor-style event handlers to attach when the registry is built."""


@hookspec
def writer_opened(writer: Any) -> None:
    """A writer (either face) has opened its sinks."""


@hookspec
def writer_flushing(writer: Any) -> None:
    """A writer is about to flush its sinks."""


@hookspec
def writer_closing(writer: Any) -> None:
    """A writer is about to close its sinks."""


@hookspec
def register_readers(register: Callable[[Any], None]) -> None:
    """Register readers (``tallyboard.plugin.readers.ReaderSpec``): how a file format is read back."""


@hookspec
def register_decoders(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    """Register decoders: ``register(format_name, kind_name, decode)`` teaches a reader a kind.

    ``decode(value, step, wall_time)`` returns a row (a dict of the kind's fields), a list of
    rows, the kind's payload (a kind declaring ``payload`` and ``to_row``), or None when the
    value is not of its kind (docs/plugins.md, "Decoders").
    """
