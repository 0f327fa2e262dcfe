"""A writer's open sinks, and the road of one value to each of them.

A route hands a payload to its sink in one of three ways: encoded now, as a
:class:`~tallyboard.plugin.sinks.Deferred` encode (heavy kinds, and values still on a device),
or as a row ``(key, tag, step, wall_time, payload)`` that the sink frames in batches later (an
encoder with a ``batch`` form and a sink with ``write_row`` and ``row_key``, see
:class:`~tallyboard.plugin.sinks.OptionalSink`). :meth:`SinkRouter.route` builds a kind's routes
once; :meth:`~tallyboard.faces.writer_emit.ValueRoad.emit` walks them in the one loop that tells
the three ways apart, and :meth:`SinkRouter.report` is the one place a failed sink is raised or
dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from tallyboard import warn
from tallyboard.plugin.registry import Registry
from tallyboard.plugin.sinks import Deferred, Sink, SinkFastPath
from tallyboard.values import DeviceValueLost, Pending
from tallyboard.warn import SinkWarning

#: What a writer may do when a sink fails: raise its error, or warn once and drop the sink.
SINK_ERRORS = ("raise", "warn")
#: The ways a route hands a payload over: encoded now, deferred, or as a row.
NOW, DEFERRED, ROW = 0, 1, 2
#: The second half of the route key of a kind's values still on a device: ``(kind, PENDING)``.
PENDING = "pending"
#: A kind's name, or ``(kind, PENDING)``.
RouteKey = str | tuple[str, str]
#: One sink's road for a kind: (encode, or the row key; the sink's write; the mode).
Route = tuple[Any, Callable[[Any], None], int]
#: A route whose write raised, with its error.
Failure = tuple[Route, Exception]


class SinkRouter:
    """The sinks one writer has open, with each kind's routes to them, built on first use.

    Args:
        registry: The plugin registry (the encoders of each (kind, sink) pair).
        sink_errors: ``"raise"`` or ``"warn"``: what :meth:`report` does with a failure.
        lock: The writer's lock, held while a failed sink is dropped.
        sinks: The open sinks, as (name, sink), in the writer's order.
    """

    __slots__ = ("registry", "sink_errors", "lock", "sinks", "routes", "_fast")

    def __init__(
        self,
        registry: Registry,
        sink_errors: str,
        lock: Any,
        sinks: Iterable[tuple[str, Sink]] = (),
    ) -> None:
        self.registry = registry
        self.sink_errors = sink_errors
        self.lock = lock
        self.sinks: list[tuple[str, Sink]] = list(sinks)
        #: Each kind's routes, filled by :meth:`route`; emptied when a sink is dropped.
        self.routes: dict[RouteKey, list[Route]] = {}
        self._fast = {id(sink): SinkFastPath.of(sink) for _, sink in self.sinks}

    def encoder(self, kind: str, sink_name: str) -> Callable[..., Any] | None:
        """The encoder of ``kind`` for sink ``sink_name``, or None (after one warning)."""
        encoders = self.registry.encoders
        encode = encoders.get((kind, sink_name))
        if encode is None:
            encode_any = encoders.get(("*", sink_name))
            if encode_any is None:
                warn.cannot_encode(sink_name, kind)
                return None
            encode = functools.partial(encode_any, kind)
        return encode

    def route(self, key: RouteKey) -> list[Route]:
        """The routes of a value of kind ``key`` (ValueError for a kind no plugin provides), or,
        for ``(kind, PENDING)``, of such a value still on a device (a ``Pending``): each sink's
        writer thread materialises it and encodes it."""
        if isinstance(key, tuple):
            return self._pending_route(key)
        kind = key
        heavy = self.registry.kind(kind).heavy
        routes: list[Route] = []
        for sink_name, sink in self.sinks:
            encode = self.encoder(kind, sink_name)
            if encode is None:
                continue
            batch = getattr(encode, "batch", None)  # the encoder's batch form, if it has one
            fast = self._fast[id(sink)]
            if batch is not None and fast.write_row is not None and not heavy:
                routes.append((fast.row_key(batch), fast.write_row, ROW))  # type: ignore[misc]
            else:
                routes.append((encode, sink.write, DEFERRED if heavy else NOW))
        self.routes[kind] = routes
        return routes

    def _pending_route(self, key: tuple[str, str]) -> list[Route]:
        routes: list[Route] = []
        for sink_name, sink in self.sinks:
            encode = self.encoder(key[0], sink_name)
            if encode is not None:
                routes.append((functools.partial(_encode_pending, encode), sink.write, DEFERRED))
        self.routes[key] = routes
        return routes

    def report(self, failures: list[Failure], value: tuple[str, Any, float, Any]) -> None:
        """Raise the first failure (the others as its notes), or, with ``sink_errors="warn"``,
        warn once for each failed sink and drop it.

        A device value lost before it could be read (:class:`~tallyboard.values.DeviceValueLost`,
        raised by the sink from a later call) is that value's failure, not the sink's: ``value``
        (``(tag, step, wall_time, payload)`` of the call that hears of it, which the sink
        refused while raising it) is sent again, then the loss is raised, or in warn mode left
        at the warning given when it was lost, the sink going on.
        """
        errors: list[BaseException] = []
        for route, error in failures:
            if isinstance(error, DeviceValueLost):
                try:
                    _send(route, value)
                except Exception as again:
                    error = again
                else:
                    if self.sink_errors == "raise":
                        errors.append(error)
                    continue
            found = self._sink_of(route[1])
            if self.sink_errors == "raise" or found is None:
                errors.append(error)
            else:
                self.detach(found[0], found[1], "write", error)
        raise_first(errors)

    def call_each(self, method: str, errors: list[BaseException]) -> None:
        """``flush()`` or ``close()`` every sink, its error collected or (warn mode) reported."""
        for name, sink in list(self.sinks):
            try:
                getattr(sink, method)()
            except Exception as exc:
                if self.sink_errors == "raise":
                    errors.append(exc)
                elif not isinstance(exc, DeviceValueLost):  # see report()
                    self.detach(name, sink, method, exc)

    def abandon(self) -> None:
        """In a forked child: let each sink that can forget its buffered data."""
        for _, sink in self.sinks:
            drop = self._fast[id(sink)].abandon
            if drop is not None:
                drop()

    def detach(self, name: str, sink: Sink, action: str, exc: BaseException) -> None:
        """Warn once that sink ``name`` failed, close it quietly and stop writing to it."""
        with self.lock:
            self.sinks = [(n, s) for n, s in self.sinks if s is not sink]
            self.routes.clear()
        warn_failed(name, action, exc)
        if action != "close":
            close_quietly(sink)

    def _sink_of(self, write: Callable[[Any], None]) -> tuple[str, Sink] | None:
        for name, sink in self.sinks:
            if sink.write == write or self._fast[id(sink)].write_row == write:
                return name, sink
        return None


def _send(route: Route, value: tuple[str, Any, float, Any]) -> None:
    """Hand ``value`` to one route's sink as the writer's emit loop does (kept out of that loop,
    which inlines it: this is for a value sent again)."""
    encode, write, mode = route
    if mode is ROW:
        write((encode, *value))
    elif mode:
        write(Deferred(encode, value, size_hint(value[3])))
    else:
        write(encode(*value))


def _encode_pending(
    encode: Callable[..., Any], tag: str, step: int | None, wall_time: float, payload: Pending
) -> Any:
    """A sink's encode of a deferred device value, on the sink's writer thread."""
    return encode(tag, step, wall_time, payload.result())


def size_hint(payload: Any) -> int:
    """The payload's size in bytes for a :class:`Deferred` (its ``nbytes``; 0 when unknown)."""
    return int(getattr(payload, "nbytes", 0) or 0)


def close_quietly(sink: Sink) -> None:
    """``sink.close()``, its error ignored (the sink failed already)."""
    try:
        sink.close()
    except Exception:
        pass


def warn_failed(name: str, action: str, exc: BaseException) -> None:
    """The one warning that sink ``name`` failed and is dropped."""
    warn.warn(
        f"sink {name!r} failed in {action} ({type(exc).__name__}: {exc}); it is dropped and the "
        "other sinks go on (pass sink_errors='raise' to get such errors instead)",
        SinkWarning,
    )


def raise_first(errors: list[BaseException]) -> None:
    """Raise the first error, the others named in its notes; nothing when there is none."""
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(f"also: {type(other).__name__}: {other}")
        raise first
