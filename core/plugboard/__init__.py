"""plugboard: training logs through the torch.monitor, torch.utils.tensorboard and MindSpore faces.

Importing plugboard is cheap: the registry, the writers and every plugin load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .hookspecs import CONTRACT_VERSION, hookimpl
from .kinds import Kind
from .sinks import Deferred, Sink, SinkOptions, SinkSpec

__version__ = "0.1.0"

_LAZY = {
    "SummaryWriter": "plugboard.writer",
    "get_registry": "plugboard.registry",
    "Aggregation": "plugboard.monitor",
    "Stat": "plugboard.monitor",
    "Event": "plugboard.monitor",
    "EventHandlerHandle": "plugboard.monitor",
    "data_value_t": "plugboard.monitor",
    "log_event": "plugboard.monitor",
    "register_event_handler": "plugboard.monitor",
    "unregister_event_handler": "plugboard.monitor",
    "TensorboardEventHandler": "plugboard.monitor",
    "STAT_EVENT": "plugboard.monitor",
    "VALUE": "plugboard.monitor",
    "MEAN": "plugboard.monitor",
    "COUNT": "plugboard.monitor",
    "SUM": "plugboard.monitor",
    "MAX": "plugboard.monitor",
    "MIN": "plugboard.monitor",
    "SummaryRecord": "plugboard.summary_record",
    "TrainLineage": "plugboard.summary_record",
    "EvaluationLineage": "plugboard.summary_record",
    "DatasetGraph": "plugboard.summary_record",
    "UserDefinedInfo": "plugboard.summary_record",
    "LossLandscape": "plugboard.summary_record",
    "Operation": "plugboard.summary_record",
    "OperationParameter": "plugboard.summary_record",
    "read": "plugboard.reading",
    "convert": "plugboard.conversion",
}

__all__ = [
    "CONTRACT_VERSION",
    "Deferred",
    "Kind",
    "Sink",
    "SinkOptions",
    "SinkSpec",
    "hookimpl",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'plugboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from .conversion import convert as convert
    from .reading import read as read
    from .registry import get_registry as get_registry
    from .writer import SummaryWriter as SummaryWriter
