"""``TensorboardEventHandler``: write Stat events as scalars through a SummaryWriter."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .event import STAT_EVENT, Event


class TensorboardEventHandler:
    """An event handler that writes the values of every Stat event as scalars to ``writer``.

    Register it with :func:`~tallyboard.monitor.register_event_handler`; each time a
    :class:`~tallyboard.monitor.Stat` closes a window, every value of its event (say
    ``{"step_time.mean": 12.5, "step_time.max": 30.1}``) becomes one scalar under that key as its
    tag, at the event's wall time. Events whose name is not
    :data:`~tallyboard.monitor.STAT_EVENT` are ignored, as in torch; a hand-built event with
    that name is written like a Stat's.

    **Steps: a Stat knows windows, not training steps.** Unless you pass ``step``, the step of
    each point is the number of that tag's windows written before it (0, 1, 2, ...), so a chart
    of ``step_time.mean`` counts windows: its point 10 is the eleventh window (with 10-second
    windows, about 100 s into the run), not training step 10. Pass
    ``step=lambda: global_step`` to write each window at the training step that was current
    when it closed, so its chart shares the x axis of the loss.

    torch's handler (``torch.monitor.TensorboardEventHandler``) calls
    ``add_scalar(key, value, walltime=...)`` with no step, so every point lands at step 0 and
    TensorBoard draws a chart of one step (its wall-time axis still tells the windows apart).
    ``torch_compat=True`` makes exactly that call.

    Args:
        writer: Anything with torch's ``add_scalar(tag, scalar_value, global_step=None,
            walltime=None)``: a tallyboard :class:`~tallyboard.SummaryWriter`, torch's or
            tensorboardX's.
        torch_compat: Write as torch does: no ``global_step`` (every point at step 0).
            Default ``False``.
        across_ranks: In a distributed job, make window ``i`` of every rank one window of the
            job (count, sum, min, max, count-weighted mean, the last value, and
            ``"<stat name>.slowest_rank"``, the rank with the highest mean), written by rank 0
            at the writer's next ``sync()``, ``flush()`` or ``close()``, which every rank must
            call. Needs a tallyboard ``SummaryWriter``. Default ``False``.
        step: A callable taking no argument and returning the ``global_step`` (an int) of
            each event's points, called once per event when its window closes (for example
            ``lambda: trainer.global_step``). Default ``None``: the per-tag window count.

    Raises:
        TypeError: ``writer`` has no callable ``add_scalar``; ``step`` is not callable;
            ``across_ranks=True`` with a writer that is not a tallyboard ``SummaryWriter``,
            with ``torch_compat=True`` or with ``step`` (ranks' windows are paired by
            number); ``step`` combined with ``torch_compat=True``.

    Example:
        >>> from datetime import timedelta
        >>> from tallyboard import SummaryWriter
        >>> from tallyboard.monitor import (
        ...     Aggregation, Stat, TensorboardEventHandler, register_event_handler
        ... )
        >>> writer = SummaryWriter("runs/monitor")
        >>> step = 0
        >>> handle = register_event_handler(TensorboardEventHandler(writer, step=lambda: step))
        >>> with Stat("step_time", [Aggregation.MEAN], timedelta(seconds=10)) as stat:
        ...     for step in range(100):
        ...         stat.add(0.01)  # a window's point lands at the step it closed at
    """

    def __init__(
        self,
        writer: Any,
        *,
        torch_compat: bool = False,
        across_ranks: bool = False,
        step: Callable[[], int] | None = None,
    ) -> None:
        if not callable(getattr(writer, "add_scalar", None)):
            raise TypeError(f"writer must have an add_scalar method, got {type(writer).__name__}")
        if step is not None and not callable(step):
            raise TypeError(
                f"step must be a callable returning the current step (e.g. lambda: step), "
                f"got {type(step).__name__}"
            )
        if step is not None and (torch_compat or across_ranks):
            raise TypeError(
                "step= cannot be combined with torch_compat=True (torch writes no step) or "
                "across_ranks=True (ranks' windows are paired by their number)"
            )
        self._writer = writer
        self._torch_compat = bool(torch_compat)
        self._step_fn = step
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
        """Write ``event``'s values as scalars if it is a Stat event; ignore it otherwise.

        Args:
            event: The event a Stat (or :func:`~tallyboard.monitor.log_event`) dispatched.

        Raises:
            Exception: Whatever the writer's ``add_scalar`` raises (for example ``TypeError``
                for a ``str`` value in a hand-built event) or ``step`` raises; it propagates
                out of ``log_event`` / ``Stat.add`` after the other handlers ran.
        """
        if event.name != STAT_EVENT:
            return
        walltime = event.timestamp.timestamp()
        add_scalar = self._writer.add_scalar
        if self._torch_compat:
            for key, value in event.data.items():
                add_scalar(key, value, walltime=walltime)
            return
        if self._step_fn is not None:
            step = self._step_fn()
            for key, value in event.data.items():
                add_scalar(key, value, global_step=step, walltime=walltime)
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
