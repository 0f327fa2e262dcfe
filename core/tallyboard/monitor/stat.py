"""``Stat``: aggregate values over fixed time windows and emit one event per window.

Speed: ``add`` is a per-instance closure. When ``max_samples`` is unlimited, the common case is
one ``monotonic_ns()`` comparison against a precomputed deadline and a ``list.append``; the
buffered values are folded into the window's accumulator with C builtins (``sum``, ``min``,
``max``) under the Stat lock at the deadline, which is the window's end or a short fold interval
that bounds the buffer. Folding consumes the buffer by index (``del buf[:n]``), so a value
appended concurrently is never lost: it lands in the next fold, i.e. it is ordered after the
add that closed the window. The fold interval (``FOLD_NS``) bounds the buffer to what one
process can add in that time. With a finite ``max_samples`` every add takes the lock (the common
case is still a deadline check and a few updates). One race is left to the caller: an add running
concurrently with ``close()`` may be accepted and never emitted (torch cannot even express it).
"""

from __future__ import annotations

import math
import operator
import threading
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import chain
from time import monotonic_ns
from typing import Any

from tallyboard.records import lifecycle
from tallyboard.records.lifecycle import report_unraisable

from .aggregation import ORDER, Aggregation
from .event import STAT_EVENT, Event, _check_name
from .handlers import dispatch

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: At or above this, ``max_samples`` can never be reached in one window: take the lock-free path.
_UNREACHABLE = 2**62
#: Longest time values wait in the lock-free buffer before being folded (bounds its memory).
FOLD_NS = 4_000_000
_MS = 1_000_000

#: ``Stat.add``'s documentation: the slot's (``help(Stat)``) and each Stat's closure's.
_ADD_DOC = """Add one number to the Stat's current window.

Cheap: a clock comparison and an append in the common case. If the value falls in a later
window than the open one, the open window is closed first and its event dispatched (the
value then opens the new window); if it is the ``max_samples``-th value of its window, the
window closes with it. Handlers run in this call, after the Stat's state is updated; a
handler's exception propagates from here once every handler had the event.

Args:
    v: A number: int, float, bool (1.0/0.0), a NumPy scalar or a 0-d tensor (anything
        ``float()`` takes but text). NaN and infinities are taken as they are.

Raises:
    TypeError: ``v`` is a str, bytes, None, a list or a multi-element array.
    ValueError: The Stat is closed.

Example:
    >>> from datetime import timedelta
    >>> from tallyboard.monitor import Aggregation, Stat
    >>> stat = Stat("loss", [Aggregation.SUM, Aggregation.COUNT], timedelta(days=1))
    >>> for v in [0.5, 0.25]:
    ...     stat.add(v)
    >>> stat.count
    2
    >>> stat.close()
"""

_live: weakref.WeakSet[Stat] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _window_ms(window_size: object) -> int:
    if isinstance(window_size, timedelta):
        us = (window_size.days * 86400 + window_size.seconds) * 1_000_000 + window_size.microseconds
        if us < 0:
            raise ValueError(f"window_size must not be negative, got {window_size!r}")
        ms = us // 1000
    elif isinstance(window_size, float):
        if not math.isfinite(window_size):
            raise ValueError(f"window_size must be finite, got {window_size!r}")
        if window_size < 0:
            raise ValueError(f"window_size must not be negative, got {window_size!r}")
        ms = int(window_size * 1000.0)
    else:
        raise TypeError(
            "window_size must be a datetime.timedelta or a float number of seconds, "
            f"got {type(window_size).__name__}"
        )
    if ms < 1:
        raise ValueError(f"window_size must be at least 1 millisecond, got {window_size!r}")
    return ms


class _Plan:
    """What a set of aggregations needs; one per distinct set, cached."""

    __slots__ = ("aggs", "picks", "suffixes", "need_sum", "need_min", "need_max")

    def __init__(self, mask: int) -> None:
        self.aggs = tuple(agg for agg in ORDER if mask >> agg.value & 1)
        # index into the (value, mean, count, sum, max, min) tuple, per enabled aggregation
        self.picks = tuple((agg, ORDER.index(agg)) for agg in self.aggs)
        self.suffixes = tuple(("." + agg.name.lower(), ORDER.index(agg)) for agg in self.aggs)
        self.need_sum = bool(mask & (1 << Aggregation.SUM.value | 1 << Aggregation.MEAN.value))
        self.need_min = bool(mask & 1 << Aggregation.MIN.value)
        self.need_max = bool(mask & 1 << Aggregation.MAX.value)


_plans: dict[int, _Plan] = {}


def _plan(aggregations: object) -> _Plan:
    if not isinstance(aggregations, (list, tuple, set, frozenset)):
        raise TypeError(
            "aggregations must be a list, tuple or set of Aggregation, "
            f"got {type(aggregations).__name__}"
        )
    mask = 0
    for agg in aggregations:
        if type(agg) is not Aggregation:
            raise TypeError(f"aggregations must hold Aggregation members, got {agg!r}")
        mask |= 1 << agg._value_
    plan = _plans.get(mask)
    if plan is None:
        plan = _plans[mask] = _Plan(mask)
    return plan


def _max_samples(max_samples: object) -> int:
    try:
        max_samples = operator.index(max_samples)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"max_samples must be an int, got {type(max_samples).__name__}") from None
    if not _INT64_MIN <= max_samples <= _INT64_MAX:
        raise TypeError(f"max_samples must fit in 64 bits, got {max_samples}")
    return max(1, int(max_samples))


def _to_float(v: object) -> float:
    if isinstance(v, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"v must be a number, got {type(v).__name__}")
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(
            f"v must be a number convertible to float, got {type(v).__name__}: {exc}"
        ) from None


Closures = tuple[
    Callable[[float], None],
    Callable[[], int],
    Callable[[], "dict[Aggregation, float]"],
    Callable[[object], None],
    Callable[[], None],
]


def _build(name: str, plan: _Plan, wms: int, max_samples: int) -> Closures:
    """The closures of one Stat (add, count, get, close, reinit); they share state in cells."""
    keys = [(name + suffix, i) for suffix, i in plan.suffixes]
    picks = plan.picks
    need_sum, need_min, need_max = plan.need_sum, plan.need_min, plan.need_max
    lockfree = max_samples >= _UNREACHABLE
    below_limit = max_samples - 1  # an add that leaves count below max_samples closes nothing
    lock = threading.Lock()
    buf: list[float] = []
    append = buf.append
    mono = monotonic_ns
    _type, _float, _int, convert = type, float, int, _to_float
    _sum, _min, _max, _chain = sum, min, max, chain
    # seqlock: odd while a locked section moves values between ``buf`` and the accumulator
    seq = 0
    # open window id, last closed id, deadline of the fast path (ns), closed flag
    opened = last = 0
    end = -1
    closed = False
    # open accumulator and closed accumulator: count, sum, min, max, last value
    o_n, o_sum, o_min, o_max, o_val = 0, 0.0, 0.0, 0.0, 0.0
    c_n, c_sum, c_min, c_max, c_val = 0, 0.0, 0.0, 0.0, 0.0

    def fold() -> None:
        """Move the buffered values into the open accumulator, in order (lock held)."""
        nonlocal o_n, o_sum, o_min, o_max, o_val
        n = len(buf)
        if not n:
            return
        chunk = buf[:n]
        del buf[:n]  # values appended meanwhile stay for the next fold
        if need_sum:
            o_sum = _sum(chunk, o_sum)  # left to right from o_sum: same rounding as one by one
        if o_n:  # continue the running min/max (a NaN first in chunk must not stick)
            if need_min:
                o_min = _min(_chain((o_min,), chunk))
            if need_max:
                o_max = _max(_chain((o_max,), chunk))
        else:
            if need_min:
                o_min = _min(chunk)
            if need_max:
                o_max = _max(chunk)
        o_val = chunk[-1]
        o_n += n

    def close_open(events: list[Event]) -> None:
        """``closed := open``, ``open := zeros``; an event if the window had values (lock held)."""
        nonlocal o_n, o_sum, o_min, o_max, o_val, c_n, c_sum, c_min, c_max, c_val
        c_n, c_sum, c_min, c_max, c_val = o_n, o_sum, o_min, o_max, o_val
        o_n, o_sum, o_min, o_max, o_val = 0, 0.0, 0.0, 0.0, 0.0
        if c_n:
            values = (c_val, c_sum / c_n, float(c_n), c_sum, c_max, c_min)
            data = {key: values[i] for key, i in keys}
            events.append(Event._trusted(STAT_EVENT, datetime.now(), data))

    def slow(x: float) -> None:
        """The full state machine of specs/monitor.md §3.3, under the lock."""
        nonlocal opened, last, end, o_n, o_sum, o_min, o_max, o_val, seq
        events: list[Event] = []
        with lock:
            if closed:
                raise ValueError(f"add() on a closed Stat {name!r}")
            seq += 1
            now = mono()
            w = now // _MS // wms + 1
            if buf:
                fold()
            if (opened != w or o_n >= max_samples) and last != w:
                close_open(events)
                last, opened = opened, w
            if last != w:  # else this window was closed by max_samples: drop x
                o_sum += x
                if not o_n or o_max < x:
                    o_max = x
                if not o_n or o_min > x:
                    o_min = x
                o_val = x
                o_n += 1
                if o_n >= max_samples:
                    close_open(events)
                    last, opened = opened, w
            if lockfree:
                end = min(w * wms * _MS, now + FOLD_NS)
            else:  # fast path only while this window is open and not closed by max_samples
                end = w * wms * _MS if last != w else 0
            seq += 1
        if events:
            dispatch(events)

    def add(v: float) -> None:
        t = _type(v)
        if t is not _float:
            v = _float(v) if t is _int else convert(v)
        if mono() < end:
            append(v)
        else:
            slow(v)

    def locked_add(v: float) -> None:
        nonlocal o_n, o_sum, o_min, o_max, o_val
        t = _type(v)
        if t is not _float:
            v = _float(v) if t is _int else convert(v)
        with lock:
            if mono() < end and o_n < below_limit:  # same window, no max_samples close
                if o_n:
                    if o_max < v:
                        o_max = v
                    if o_min > v:
                        o_min = v
                else:
                    o_max = o_min = v
                o_sum += v
                o_val = v
                o_n += 1
                return
        slow(v)

    def count() -> int:
        before = seq
        if not before & 1:
            n = o_n + len(buf)
            if seq == before:
                return n
        with lock:
            return o_n + len(buf)

    def get() -> dict[Aggregation, float]:
        with lock:
            values = (c_val, c_sum / c_n if c_n else 0.0, float(c_n), c_sum, c_max, c_min)
        return {agg: values[i] for agg, i in picks}

    def close(unraisable: object = None) -> None:
        nonlocal closed, end, seq
        events: list[Event] = []
        with lock:
            if closed:
                return
            closed = True
            end = -1
            seq += 1
            fold()
            if o_n:  # an empty open window leaves get() on the last window with data
                close_open(events)
            seq += 1
        if events:
            dispatch(events, unraisable)

    def reinit() -> None:
        nonlocal lock
        lock = threading.Lock()

    add.__doc__ = locked_add.__doc__ = _ADD_DOC
    return (add if lockfree else locked_add), count, get, close, reinit


class Stat:
    """Aggregate values over fixed time windows; each window that got values emits one event.

    torch.monitor's ``Stat``: call :attr:`add` as often as you like (it is cheap: no lock in the
    common case); when a window ends, the Stat hands an :class:`Event` named ``STAT_EVENT`` with
    ``{"<name>.<aggregation>": value}`` to every registered handler
    (:func:`register_event_handler`), for example a :class:`TensorboardEventHandler` that writes
    each value as a scalar. There is no timer thread: a window is closed by the first
    :attr:`add` that falls in a later window (its value opens the new one), by the add that
    reaches ``max_samples``, and by :meth:`close` (or leaving a ``with`` block, garbage
    collection, interpreter exit). A window without values emits nothing. Windows are aligned to
    multiples of ``window_size`` on the monotonic clock, not to the Stat's creation, as in
    torch.

    Events are numbered by window, not by training step: a handler sees one event per window.
    See :class:`TensorboardEventHandler` for writing them at the training step instead.

    What differs from torch: ``Aggregation.VALUE`` works; a window under 1 ms, negative or not
    finite is a ValueError (torch crashes with SIGFPE on the first add); the last window is
    emitted at close, garbage collection and interpreter exit (torch loses it at exit); handlers
    may call back into the Stat, and every handler sees the event even if one raises.

    Args:
        name: The Stat's name, a str; the event keys are ``"<name>.<aggregation>"``
            (``"loss.mean"``).
        aggregations: A list, tuple or set of :class:`Aggregation`: what each event holds (the
            value, mean, count, sum, max, min of the window's values). Empty is allowed: the
            events then have no data. Duplicates collapse.
        window_size: The window's length: a ``datetime.timedelta`` or a float number of seconds
            (an int is a TypeError, as in torch), truncated to whole milliseconds, at least 1
            ms.
        max_samples: The most values a window takes: the add that reaches it closes the window
            at once, and later adds in the same time window are dropped. Any value <= 1 acts as
            1. Default ``2**63 - 1`` (no limit).

    Raises:
        TypeError: ``name`` is not a str; ``aggregations`` is not a list, tuple or set of
            Aggregation; ``window_size`` is neither a timedelta nor a float; ``max_samples`` is
            not an int within int64.
        ValueError: ``window_size`` is under 1 ms, negative or not finite; ``name`` holds a lone
            surrogate.

    Example:
        >>> import time
        >>> from datetime import timedelta
        >>> from tallyboard.monitor import (
        ...     Aggregation, Stat, register_event_handler, unregister_event_handler
        ... )
        >>> events = []
        >>> handle = register_event_handler(events.append)
        >>> with Stat("step_ms", [Aggregation.MEAN, Aggregation.MAX], timedelta(hours=1)) as stat:
        ...     for ms in [12.0, 15.0, 30.0]:
        ...         stat.add(ms)
        >>> events[0].data  # the window closed when the with block ended
        {'step_ms.mean': 19.0, 'step_ms.max': 30.0}
        >>> unregister_event_handler(handle)
    """

    __slots__ = {
        "add": _ADD_DOC,
        "_name": "the name",
        "_fns": "closures: (add, count, get, close, reinit)",
        "__weakref__": "",
    }
    add: Callable[[float], None]
    _name: str
    _fns: Closures

    def __init__(
        self,
        name: str,
        aggregations: list[Aggregation] | tuple[Aggregation, ...] | set[Aggregation],
        window_size: timedelta | float,
        max_samples: int = _INT64_MAX,
    ) -> None:
        name = _check_name(name)
        plan = _plan(aggregations)
        wms = _window_ms(window_size)
        limit = _max_samples(max_samples)
        set_attr = object.__setattr__
        set_attr(self, "_name", name)
        fns = _build(name, plan, wms, limit)
        set_attr(self, "add", fns[0])
        set_attr(self, "_fns", fns)
        if not _exit_hook_registered:
            _register_exit_hook()
        _live.add(self)

    @property
    def name(self) -> str:
        """The name given at construction; event keys are ``"<name>.<aggregation>"``."""
        return self._name

    @property
    def count(self) -> int:
        """How many values the open window has taken, as of the last :attr:`add`.

        0 right after a window closed (including a ``max_samples`` close, while later adds in that
        time window are being dropped). Time passing does not change it: it is refreshed by the next
        :attr:`add`.
        """
        return self._fns[1]()

    def get(self) -> dict[Aggregation, float]:
        """The aggregations of the last closed window, ``{Aggregation: float}``.

        One entry per aggregation the Stat computes, in declaration order (VALUE, MEAN, COUNT, SUM,
        MAX, MIN); COUNT is a float too. Everything is 0.0 before the first window closes. Unlike
        torch, whose docstring speaks of zeros after logging, this returns the closed window's
        values (what its event carried), and VALUE is the window's last value.

        Returns:
            A new dict each call.

        Example:
            >>> from datetime import timedelta
            >>> from tallyboard.monitor import Aggregation, Stat
            >>> aggregations = [Aggregation.SUM, Aggregation.MEAN]
            >>> stat = Stat("x", aggregations, timedelta(days=1), max_samples=3)
            >>> for v in [1, 2, 3]:
            ...     stat.add(v)  # the third value closes the window
            >>> stat.get() == {Aggregation.MEAN: 2.0, Aggregation.SUM: 6.0}
            True
            >>> stat.close()
        """
        return self._fns[2]()

    def close(self) -> None:
        """Close the open window (emitting its event if it has values) and refuse further adds.

        Idempotent. torch's Stat has no ``close``: it emits the open window when destroyed and loses
        it at interpreter exit. Here ``with Stat(...) as stat:`` closes on leaving the block, and a
        Stat still open is closed when garbage collected and at interpreter exit, before any
        SummaryWriter closes, so its last window reaches the writer.

        Raises:
            Exception: The first exception a handler raised for the final event (the Stat is closed
                regardless).

        Example:
            >>> from datetime import timedelta
            >>> from tallyboard.monitor import Aggregation, Stat
            >>> stat = Stat("x", [Aggregation.MAX], timedelta(days=1))
            >>> stat.add(4.0)
            >>> stat.close()  # handlers get {"x.max": 4.0}
            >>> stat.close()  # nothing more
        """
        self._fns[3](None)

    def __enter__(self) -> Stat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            close = self._fns[3]
        except AttributeError:  # the constructor failed
            return
        close(self)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"cannot set attribute {key!r} of a Stat")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"cannot delete attribute {key!r} of a Stat")

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("a Stat cannot be pickled or copied")

    def __repr__(self) -> str:
        return f"<tallyboard.monitor.Stat {self._name!r}>"


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            lifecycle.on_exit(lifecycle.STATS, close_all_stats)
            _exit_hook_registered = True


def close_all_stats() -> None:
    """Close every Stat still open (the exit hook); handler errors go to ``sys.unraisablehook``."""
    for stat in list(_live):
        try:
            stat._fns[3](stat)
        except Exception as exc:  # noqa: BLE001 - exit must go on
            report_unraisable(exc, "Exception ignored while closing a Stat at exit", stat)


def _after_fork_in_child() -> None:
    for stat in list(_live):
        stat._fns[4]()


lifecycle.on_fork_child(_after_fork_in_child)
