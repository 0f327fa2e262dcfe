"""The ``torch.monitor`` face: Stats aggregate values over time windows and emit Events to
registered handlers. A drop-in replacement for ``torch.monitor`` that does not import torch.

Register a handler (:class:`TensorboardEventHandler` writes Stat events as scalars), add
values to a :class:`Stat`, and each window that got values becomes one :class:`Event`::

    writer = SummaryWriter("runs/exp")
    register_event_handler(TensorboardEventHandler(writer, step=lambda: global_step))
    step_time = Stat("step_time", [Aggregation.MEAN, Aggregation.MAX], timedelta(seconds=10))
    ...
    step_time.add(seconds)  # in the training loop

A Stat numbers its events by window, not by training step: without ``step=``, the handler
writes the i-th window of a tag at step i (torch's handler writes every window at step 0), so
a chart ``step_time.mean`` counts 10-second windows, not training steps. Pass
``step=lambda: global_step`` to put each window at the training step it closed at, on the
same x axis as the loss.

Where tallyboard differs from torch, on purpose: VALUE works, a window under 1 ms is an error,
Stats close at exit, handlers may re-enter the API and run from many threads, and a handler's
error never aborts the process.
"""

from __future__ import annotations

from .aggregation import COUNT, MAX, MEAN, MIN, SUM, VALUE, Aggregation
from .event import STAT_EVENT, Event, data_value_t
from .handlers import (
    EventHandlerHandle,
    log_event,
    register_event_handler,
    unregister_event_handler,
)
from .stat import Stat, close_all_stats
from .tensorboard import TensorboardEventHandler

__all__ = [
    "COUNT",
    "MAX",
    "MEAN",
    "MIN",
    "STAT_EVENT",
    "SUM",
    "VALUE",
    "Aggregation",
    "Event",
    "EventHandlerHandle",
    "Stat",
    "TensorboardEventHandler",
    "close_all_stats",
    "data_value_t",
    "log_event",
    "register_event_handler",
    "unregister_event_handler",
]
