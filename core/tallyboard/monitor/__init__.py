"""The ``torch.monitor`` face: Stats aggregate values over time windows and emit Events to
registered handlers. A drop-in replacement for ``torch.monitor`` that does not import torch.

See ``specs/monitor.md`` for the behaviour and where tallyboard deliberately differs from torch
(VALUE works, Stats close at exit, handlers may re-enter, handler errors never abort).
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
