"""Downsampling a time series as it grows: a deterministic reservoir that keeps the last point.

A series offered points in batches keeps at most ``capacity`` of them: the newest point,
always, plus ``capacity - 1`` slots filled by reservoir sampling (Algorithm R) of every point
before it: the ``t``-th such point takes a slot with probability ``(capacity - 1) / t``,
evicting a uniformly chosen one. So a series of up to ``capacity`` points is kept whole, a chart
always ends at the last value logged, the other points kept are a uniform sample, and memory
holds ``capacity`` points whatever the file holds. The draws come from a generator seeded with a
constant and are taken in the same order however the points are split into batches, so the same
stream keeps the same points on every run and every reload. ``capacity`` 0 keeps everything.

Steps are expected to grow. A point whose step is not above an earlier one *preempts* it, as a
job restarted from a checkpoint rewrites the steps after it: the points kept with a step at or
above it are dropped (and the count of points seen shrinks in proportion, so later points are
not under-sampled). Within one batch the same holds: a point followed (later in the batch) by a
point of a step not above it is dropped before sampling.

Everything is done on whole numpy arrays per batch; payloads are a float64 array (scalars) or
an object array (tensors, blob sequences).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: The seed of every reservoir's generator (deterministic sampling).
SEED = 0x7A11B0A4D


class Reservoir:
    """The points kept of one time series (see the module docstring).

    ``view`` is the current content as a tuple of three arrays ``(steps, wall_times, values)``
    in step order. Each :meth:`offer` replaces the tuple (it never changes arrays a reader may
    hold), so readers on other threads take ``view`` once and need no lock.
    """

    __slots__ = (
        "capacity",
        "seen",
        "view",
        "_arrival",
        "_slots",
        "_last",
        "_rng",
        "_dtype",
        "_whole",
        "_buf",
    )

    def __init__(self, capacity: int, dtype: Any = np.float64) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"capacity must be an int >= 0 (0 keeps all), got {capacity!r}")
        self.capacity = capacity
        self._dtype = np.dtype(dtype)
        #: points that entered the sample (all but the newest) and were not preempted
        self.seen = 0
        empty = (np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, self._dtype))
        #: the sampled slots: arrival index of each, and (steps, walls, values)
        self._arrival = np.empty(0, np.int64)
        self._slots = empty
        #: the newest point as 1-element arrays plus its arrival index, or None
        self._last: tuple[int, Any, Any, Any] | None = None
        self._rng: np.random.Generator | None = None
        self.view = empty
        #: True while every point offered (and not preempted) is kept, in order: the points
        #: live in growing buffers and ``view`` holds slices of them (appends never touch a
        #: slice already handed out), so a series that fits is stored once.
        self._whole = True
        self._buf: tuple[Any, Any, Any] | None = None

    def __len__(self) -> int:
        return len(self.view[0])

    def offer(self, steps: Any, walls: Any, values: Any) -> None:
        """Add a batch of points (arrays of equal length, in the order they were logged)."""
        steps = np.asarray(steps, np.int64)
        walls = np.asarray(walls, np.float64)
        if self._dtype.kind == "O":
            values = object_array(values)
        else:
            values = np.asarray(values, self._dtype)
        if not len(steps):
            return
        # Preemption inside the batch: keep a point only if every later point has a higher step.
        after = np.minimum.accumulate(steps[::-1])[::-1]  # min of steps[i:]
        keep = np.ones(len(steps), bool)
        keep[:-1] = steps[:-1] < after[1:]
        if not keep.all():
            steps, walls, values = steps[keep], walls[keep], values[keep]
        self._preempt(int(steps[0]))
        if self._whole:
            if self.capacity == 0 or len(self.view[0]) + len(steps) <= self.capacity:
                self._append(steps, walls, values)
                return
            self._start_sampling()
        self._sample(steps, walls, values)
        self._make_view()

    def _append(self, steps: Any, walls: Any, values: Any) -> None:
        """Keep every point: into the buffers, ``view`` slicing them."""
        n, m = len(self.view[0]), len(steps)
        buf = self._buf
        if buf is None or len(buf[0]) < n + m:
            size = n + m if n == 0 else max(n + m, 2 * n)
            if self.capacity:
                size = min(size, self.capacity)
            grown = (
                np.empty(size, np.int64),
                np.empty(size, np.float64),
                np.empty(size, self._dtype),
            )
            for new, old in zip(grown, self.view):
                new[:n] = old
            buf = self._buf = grown
        for new, src in zip(buf, (steps, walls, values)):
            new[n : n + m] = src
        self.view = (buf[0][: n + m], buf[1][: n + m], buf[2][: n + m])
        self.seen = n + m - 1  # all but the newest entered the sample

    def _start_sampling(self) -> None:
        """From keeping every point to sampling: the slots are all the points but the newest."""
        s, w, v = self.view
        n = len(s)
        self._whole, self._buf = False, None
        self._arrival = np.arange(max(n - 1, 0), dtype=np.int64)
        self._slots = (s[: n - 1], w[: n - 1], v[: n - 1]) if n else self._slots
        self._last = (n - 1, s[n - 1 :], w[n - 1 :], v[n - 1 :]) if n else None
        self.seen = max(n - 1, 0)

    def _preempt(self, step: int) -> None:
        """Drop the points kept with a step at or above ``step``."""
        s = self.view[0]
        if not len(s) or s[-1] < step:
            return
        kept_before = len(s)
        if self._whole:  # copies: later appends must not write into slices handed out
            n = int(np.searchsorted(s, step, "left"))
            self.view = tuple(a[:n].copy() for a in self.view)  # type: ignore[assignment]
            self._buf = None
            self.seen = max(n - 1, 0)
            return
        stay = self._slots[0] < step
        self._arrival = self._arrival[stay]
        self._slots = tuple(a[stay] for a in self._slots)  # type: ignore[assignment]
        if self._last is not None and self._last[1][0] >= step:
            self._last = None
        self._make_view()
        dropped = kept_before - len(self.view[0])
        # the points seen shrink in proportion to the points kept that went
        self.seen = math.ceil(self.seen * (1 - dropped / kept_before))
        if len(self._arrival):
            self.seen = max(self.seen, int(self._arrival.max()) + 1)

    def _sample(self, steps: Any, walls: Any, values: Any) -> None:
        # The newest point is held apart; the point it displaces as newest enters the sample.
        entering = (steps[:-1], walls[:-1], values[:-1])
        if self._last is not None:
            _, ls, lw, lv = self._last
            entering = (
                np.concatenate([ls, entering[0]]),
                np.concatenate([lw, entering[1]]),
                _cat(lv, entering[2]),
            )
        m, k = len(entering[0]), self.capacity - 1
        t = np.arange(self.seen, self.seen + m, dtype=np.int64)  # arrival index of each point
        self.seen += m
        self._last = (self.seen, steps[-1:], walls[-1:], values[-1:])
        if k <= 0 or not m:
            return
        filled = len(self._arrival)
        if filled + m <= k:  # room for all: appended in order, no draw
            self._arrival = np.concatenate([self._arrival, t])
            self._slots = (
                np.concatenate([self._slots[0], entering[0]]),
                np.concatenate([self._slots[1], entering[1]]),
                _cat(self._slots[2], entering[2]),
            )
            return
        slot_of = np.full(m, -1, np.int64)
        free = max(0, min(m, k - filled))  # empty slots are taken in order
        slot_of[:free] = np.arange(filled, filled + free)
        if free < m:
            if self._rng is None:
                self._rng = np.random.default_rng(SEED)
            draws = self._rng.integers(0, t[free:] + 1)
            hit = np.flatnonzero(draws < k)
            slot_of[free + hit] = draws[hit]
        chosen = np.flatnonzero(slot_of >= 0)
        if not len(chosen):
            return
        # a slot chosen twice in this batch keeps the later point
        slots, first_in_rev = np.unique(slot_of[chosen][::-1], return_index=True)
        winners = chosen[::-1][first_in_rev]
        size = max(filled, int(slots[-1]) + 1)
        arrival = _grow(self._arrival, size, -1)
        cols = [_grow(a, size, 0) for a in self._slots]
        arrival[slots] = t[winners]
        for col, src in zip(cols, entering):
            col[slots] = src[winners]
        self._arrival = arrival
        self._slots = (cols[0], cols[1], cols[2])

    def _make_view(self) -> None:
        arrival = self._arrival
        s, w, v = self._slots
        if len(arrival) > 1 and not (arrival[1:] > arrival[:-1]).all():
            order = np.argsort(arrival, kind="stable")
            arrival, s, w, v = arrival[order], s[order], w[order], v[order]
        last = self._last
        if last is not None:
            s, w, v = np.concatenate([s, last[1]]), np.concatenate([w, last[2]]), _cat(v, last[3])
        self.view = (s, w, v)


def object_array(items: Any) -> Any:
    """A 1-d object array of ``items`` (tuples stay elements, never a second axis)."""
    if isinstance(items, np.ndarray) and items.dtype == object and items.ndim == 1:
        return items
    items = list(items)
    out = np.empty(len(items), object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def _grow(a: Any, size: int, fill: Any) -> Any:
    """A copy of ``a`` at least ``size`` long (new places set to ``fill``)."""
    out = np.empty(size, a.dtype)
    out[: len(a)] = a
    if size > len(a):
        out[len(a) :] = fill if a.dtype != object else None
    return out


def _cat(a: Any, b: Any) -> Any:
    if a.dtype == object or b.dtype == object:
        out = np.empty(len(a) + len(b), object)
        out[: len(a)] = a
        out[len(a) :] = b
        return out
    return np.concatenate([a, b])
