"""tallyboard: training logs through the torch.monitor, torch.utils.tensorboard and MindSpore faces.

Importing tallyboard is cheap: the registry, the writers and every plugin load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tallyboard.plugin.hookspecs import CONTRACT_VERSION, hookimpl
from tallyboard.plugin.kinds import Kind
from tallyboard.plugin.sinks import Deferred, Sink, SinkOptions, SinkSpec

__version__ = "0.1.0"

_LAZY = {
    "SummaryWriter": "tallyboard.faces.summary_writer",
    "get_registry": "tallyboard.plugin.registry",
    "Aggregation": "tallyboard.monitor",
    "Stat": "tallyboard.monitor",
    "Event": "tallyboard.monitor",
    "EventHandlerHandle": "tallyboard.monitor",
    "data_value_t": "tallyboard.monitor",
    "log_event": "tallyboard.monitor",
    "register_event_handler": "tallyboard.monitor",
    "unregister_event_handler": "tallyboard.monitor",
    "TensorboardEventHandler": "tallyboard.monitor",
    "STAT_EVENT": "tallyboard.monitor",
    "VALUE": "tallyboard.monitor",
    "MEAN": "tallyboard.monitor",
    "COUNT": "tallyboard.monitor",
    "SUM": "tallyboard.monitor",
    "MAX": "tallyboard.monitor",
    "MIN": "tallyboard.monitor",
    "SummaryRecord": "tallyboard.faces.summary_record",
    "TrainLineage": "tallyboard.faces.summary_record",
    "EvaluationLineage": "tallyboard.faces.summary_record",
    "DatasetGraph": "tallyboard.faces.summary_record",
    "UserDefinedInfo": "tallyboard.faces.summary_record",
    "LossLandscape": "tallyboard.faces.summary_record",
    "Operation": "tallyboard.faces.summary_record",
    "OperationParameter": "tallyboard.faces.summary_record",
    "SummaryCollector": "tallyboard.faces.summary_collector",
    "read": "tallyboard.reading.read",
    "Reader": "tallyboard.reading.incremental",
    "Update": "tallyboard.reading.incremental",
    "convert": "tallyboard.reading.convert",
}

#: Submodules reachable as attributes (``tallyboard.ops``) without importing them first.
_SUBMODULES = {"ops": "tallyboard.ops"}

__all__ = [
    "CONTRACT_VERSION",
    "Deferred",
    "Kind",
    "Sink",
    "SinkOptions",
    "SinkSpec",
    "hookimpl",
    "ops",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if name in _SUBMODULES:
            return importlib.import_module(_SUBMODULES[name])
        raise AttributeError(f"module 'tallyboard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from tallyboard import ops as ops
    from tallyboard.faces.summary_collector import SummaryCollector as SummaryCollector
    from tallyboard.faces.summary_writer import SummaryWriter as SummaryWriter
    from tallyboard.plugin.registry import get_registry as get_registry
    from tallyboard.reading.convert import convert as convert
    from tallyboard.reading.incremental import Reader as Reader
    from tallyboard.reading.incremental import Update as Update
    from tallyboard.reading.read import read as read
