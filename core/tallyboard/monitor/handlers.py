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
    """What :func:`register_event_handler` returns: pass it to :func:`unregister_event_handler`.

    It cannot be made directly (TypeError) nor pickled, has no public attributes and compares by
    identity, as in torch.
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
    """Call ``callback(event)`` for every event logged from now on, in registration order.

    Events come from :func:`log_event` and from every :class:`Stat` when a window closes.
    Handlers are called in the thread that logs the event, with the :class:`Event` as their one
    argument; what they return is ignored. Every handler receives the event even when an earlier
    one raises; the first exception then propagates to whoever logged the event. A handler may
    call back into the API (log events, register or unregister handlers, use any Stat), and
    events may be logged from many threads at once (torch deadlocks on both). Registering the
    same callable twice calls it twice. Plugins' handlers (``register_event_handlers`` hook) run
    before yours.

    Args:
        callback: Any callable taking one argument: a function, a bound method, a
            :class:`TensorboardEventHandler`, ``list.append``.

    Returns:
        A new :class:`EventHandlerHandle` for :func:`unregister_event_handler`.

    Raises:
        TypeError: ``callback`` is not callable (None included; torch accepts None and then
            fails at every event).

    Example:
        >>> from datetime import datetime
        >>> from tallyboard.monitor import (
        ...     Event, log_event, register_event_handler, unregister_event_handler
        ... )
        >>> seen = []
        >>> handle = register_event_handler(lambda event: seen.append(event.name))
        >>> log_event(Event("hello", datetime.now(), {}))
        >>> seen
        ['hello']
        >>> unregister_event_handler(handle)
    """
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    handle = _new_handle()
    with _lock:
        _publish((*_entries, (handle, callback)))
    return handle


def unregister_event_handler(handler: EventHandlerHandle | None) -> None:
    """Remove the registration ``handler`` stands for; the other handlers keep their order.

    A handle that is no longer registered (a second unregister) or None does nothing; torch
    instead removes the last registered handler, or crashes when none is left. An event being
    dispatched when it is called still reaches the handler: changes apply to later events.

    Args:
        handler: What :func:`register_event_handler` returned, or None.

    Raises:
        TypeError: ``handler`` is not an :class:`EventHandlerHandle` (a callback instead of its
            handle, say).

    Example:
        >>> from tallyboard.monitor import register_event_handler, unregister_event_handler
        >>> handle = register_event_handler(print)
        >>> unregister_event_handler(handle)
        >>> unregister_event_handler(handle)  # already gone: nothing happens
    """
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
    """Hand ``event`` to every registered handler, in registration order, in this thread.

    Without handlers it does nothing. Every handler gets the same Event object. When handlers
    raise, every handler still receives the event, then the first exception propagates, with the
    later ones attached as notes.

    Args:
        event: An :class:`Event`.

    Raises:
        TypeError: ``event`` is not an :class:`Event`.
        Exception: The first exception a handler raised.

    Example:
        >>> from datetime import datetime
        >>> from tallyboard.monitor import Event, log_event
        >>> log_event(Event("epoch_end", datetime.now(), {"epoch": 1}))
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
