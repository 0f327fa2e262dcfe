"""``TensorboardEventHandler``: write Stat events as scalars through a SummaryWriter."""

from __future__ import annotations

import threading
from typing import Any

from .event import STAT_EVENT, Event


class TensorboardEventHandler:
    """An event handler that writes every ``STAT_EVENT`` value as a scalar to ``writer``.

    ``writer`` is anything with ``add_scalar`` (tallyboard's or torch's ``SummaryWriter``).
    Each value goes to tag ``"<stat name>.<aggregation>"`` at the event's wall time. By default
    the step is how many scalars this handler has already written to that tag (0, 1, 2, ...);
    ``torch_compat=True`` makes torch's exact call instead (no ``global_step``: every point at
    step 0). Events with other names are ignored.

    ``across_ranks=True`` (a tallyboard ``SummaryWriter`` only) aggregates the job: window ``i`` of
    every rank becomes one window (count, sum, min, max, count-weighted mean, the last value, and
    ``"<name>.slowest_rank"``, the rank with the highest mean) written by rank 0 at the writer's
    next ``sync()``/``flush()``/``close()``, which every rank must call.
    """

    def __init__(
        self, writer: Any, *, torch_compat: bool = False, across_ranks: bool = False
    ) -> None:
        if not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(f"writer must have an add_scalar method, got {type(writer).__name__}")
        self._writer = writer
        self._torch_compat = bool(torch_compat)
        self._rank_sync = None
        if across_ranks:
            if torch_compat or not callable(getattr(writer, "rank_sync", None)):
                raise TypeError(
                    "across_ranks=True needs a tallyboard SummaryWriter (and torch_compat=False)"
                )
            self._rank_sync = writer.rank_sync()
        self._steps: dict[str, int] = {}
        self._lock = threading.RLock()

    def __call__(self, event: Event) -> None:
        if event.name != STAT_EVENT:
            return
        walltime = event.timestamp.timestamp()
        add_scalar = self._writer.add_scalar
        if self._torch_compat:
            for key, value in event.data.items():
                add_scalar(key, value, walltime=walltime)
            return
        steps = self._steps
        if self._rank_sync is not None:
            windows: dict[str, dict[str, float]] = {}
            for key, value in event.data.items():
                name, _, agg = key.rpartition(".")
                windows.setdefault(name, {})[agg] = float(value)  # type: ignore[arg-type]
            with self._lock:
                for name, fields in windows.items():
                    step = steps.get(name, 0)
                    self._rank_sync.add_window(name, step, fields, walltime)
                    steps[name] = step + 1
            return
        with self._lock:
            for key, value in event.data.items():
                step = steps.get(key, 0)
                add_scalar(key, value, global_step=step, walltime=walltime)
                steps[key] = step + 1

    def __repr__(self) -> str:
        return f"TensorboardEventHandler({self._writer!r}, torch_compat={self._torch_compat})"
