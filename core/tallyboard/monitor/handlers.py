"""The event-handler registry: register, unregister, and dispatch events to every handler.

The registry is a tuple replaced on every change, so dispatch reads one snapshot without a
lock, and handlers may re-enter the API (log events, register or unregister handlers, use any
Stat) from any thread. Handlers that plugins register through the ``register_event_handlers``
hook are attached the first time an event is dispatched, ahead of the user's handlers.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from tallyboard.records import lifecycle

from .event import Event

Handler = Callable[[Event], Any]

_lock = threading.Lock()
#: (handle, callback) pairs in call order; replaced (never mutated) under ``_lock``.
_entries: tuple[tuple[EventHandlerHandle, Handler], ...] = ()
#: The callbacks of ``_entries``: what a dispatch iterates over.
_callbacks: tuple[Handler, ...] = ()
_plugins_pending = True
_plugins_attaching = False
_plugin_lock = threading.RLock()


class EventHandlerHandle:
    """What :func:`register_event_handler` returns; pass it to :func:`unregister_event_handler`.

    Created only by :func:`register_event_handler`; compares by identity.
    """

    __slots__ = ("__weakref__",)

    def __new__(cls, *args: object, **kwargs: object) -> EventHandlerHandle:
        raise TypeError(
            "EventHandlerHandle cannot be created directly; use register_event_handler()"
        )

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("cannot pickle an EventHandlerHandle")


def _new_handle() -> EventHandlerHandle:
    return object.__new__(EventHandlerHandle)


def _publish(entries: tuple[tuple[EventHandlerHandle, Handler], ...]) -> None:
    global _entries, _callbacks
    _entries = entries
    _callbacks = tuple(callback for _, callback in entries)


def register_event_handler(callback: Handler) -> EventHandlerHandle:
    """Call ``callback(event)`` for every event logged from now on; returns a new handle."""
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    handle = _new_handle()
    with _lock:
        _publish((*_entries, (handle, callback)))
    return handle


def unregister_event_handler(handler: EventHandlerHandle | None) -> None:
    """Remove the registration ``handler`` stands for; a no-op if it is gone already or None."""
    if handler is None:
        return
    if type(handler) is not EventHandlerHandle:
        raise TypeError(
            f"handler must be an EventHandlerHandle from register_event_handler(), got {type(handler).__name__}"
        )
    with _lock:
        kept = tuple(entry for entry in _entries if entry[0] is not handler)
        if len(kept) != len(_entries):
            _publish(kept)


def log_event(event: Event) -> None:
    """Hand ``event`` to every registered handler, in registration order.

    Every handler receives the event even if an earlier one raises; afterwards the first
    exception propagates, with the later ones attached as notes.
    """
    if not isinstance(event, Event):
        raise TypeError(f"event must be a tallyboard.monitor.Event, got {type(event).__name__}")
    if _callbacks or _plugins_pending:  # nothing to build or call when no handler is registered
        dispatch((event,))


def dispatch(events: Iterable[Event], unraisable: object = None) -> None:
    """Dispatch events from a Stat. With ``unraisable`` (the object being finalised), handler
    exceptions go to ``sys.unraisablehook`` instead of propagating (garbage collection, exit).
    """
    if _plugins_pending:
        _attach_plugin_handlers()
    first: BaseException | None = None
    for event in events:
        for callback in _callbacks:
            try:
                callback(event)
            except Exception as exc:  # every handler gets every event; re-raised below
                if unraisable is not None:
                    _report_unraisable(exc, callback, unraisable)
                elif first is None:
                    first = exc
                else:
                    _note(first, callback, exc)
    if first is not None:
        try:
            raise first
        finally:
            first = None


def _note(first: BaseException, callback: object, exc: BaseException) -> None:
    note = f"another event handler also raised: {callback!r} raised {exc!r}"
    add_note = getattr(first, "add_note", None)
    if add_note is not None:
        add_note(note)
    else:  # Python 3.10
        first.__notes__ = [*getattr(first, "__notes__", ()), note]  # type: ignore[attr-defined]


def _report_unraisable(exc: BaseException, callback: object, obj: object) -> None:
    lifecycle.report_unraisable(
        exc, f"Exception ignored in event handler {callback!r} while closing", obj
    )


def _attach_plugin_handlers() -> None:
    """Put the handlers plugins registered ahead of the user's; runs once, on first dispatch."""
    global _plugins_pending, _plugins_attaching
    with _plugin_lock:
        if not _plugins_pending or _plugins_attaching:
            return
        _plugins_attaching = True
        try:
            from tallyboard.plugin import registry

            found = list(registry.get_registry().event_handlers)
        except Exception as exc:  # noqa: BLE001 - logging must go on without plugins
            warnings.warn(
                f"tallyboard.monitor: could not attach plugin event handlers: {exc!r}",
                RuntimeWarning,
                stacklevel=3,
            )
            found = []
        finally:
            _plugins_attaching = False
        with _lock:
            _publish((*((_new_handle(), cb) for cb in found if callable(cb)), *_entries))
        _plugins_pending = False


def _after_fork_in_child() -> None:
    global _lock, _plugin_lock
    _lock = threading.Lock()
    _plugin_lock = threading.RLock()


lifecycle.on_fork_child(_after_fork_in_child)
