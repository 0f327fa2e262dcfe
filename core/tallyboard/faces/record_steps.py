"""How a :class:`~tallyboard.faces.summary_record.SummaryRecord` writes a step: ``record``
takes the pool (and the summary operators' values), groups it by plugin as MindSpore does and
hands it to the ``mindspore`` sink as one :class:`Recorded`, and to the extra sinks through a
mirror writer; a plain step of pooled values only has a hot path of its own."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tallyboard.faces import mindspore_operators, ops
from tallyboard.faces.record_options import _is_cell, _type_error, logger
from tallyboard.faces.record_values import _ARRAY_PLUGINS, RecordValues
from tallyboard.plugin.sinks import Sink

_now = time.time
#: The plugin name ``plugin_filter`` is given for a pooled kind, where the two differ.
_PLUGIN_OF_KIND = {"anf_graph": "graph"}
_OP_KEY_RE = re.compile(r"(.+)\[:(.+)\]")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ms_pending = mindspore_operators.pending


class Recorded:
    """What one ``record()`` hands a sink: ``items`` are ``(kind, tag, payload)`` in order."""

    __slots__ = ("step", "wall_time", "items")

    def __init__(self, step: int, wall_time: float, items: list[tuple[str, str, Any]]) -> None:
        self.step = step
        self.wall_time = wall_time
        self.items = items

    def __repr__(self) -> str:
        return f"Recorded(step={self.step}, items={[(k, t) for k, t, _ in self.items]})"


def _warn_duplicates(items: list[tuple[str, str, Any]]) -> None:
    """MindSpore's warning for each array value added again under the same name in one step
    (both are written); logged when the step is recorded rather than when the value is added."""
    seen: set[tuple[str, str]] = set()
    for kind, name, _ in items:
        if kind in _ARRAY_PLUGINS:
            if (kind, name) in seen:
                logger.warning(
                    'For "SummaryRecord.add_value", %r has duplicate values. Only the newest one will '
                    "be recorded.",
                    f"{name}/{kind}",
                )
            seen.add((kind, name))


class RecordSteps(RecordValues):
    """A record's steps: :meth:`record`, the graph at the first one, and the mirror to the
    extra sinks."""

    if TYPE_CHECKING:  # set by SummaryRecord._initialize
        network: Any
        _dir: str
        _sink: Sink
        _plain: bool
        _has_graph: bool
        _extra_sinks: list[Any]
        _mirror: Any
        _write_value: Callable[[int, float, tuple[str, str, Any]], None] | None
        _write_record: Callable[[int, float, list[tuple[str, str, Any]]], None]

    def record(
        self,
        step: int,
        train_network: Any = None,
        plugin_filter: Callable[[str], Any] | None = None,
    ) -> bool:
        """Write the values added since the last record, and the operators' values, as one step.

        One summary event holds every scalar, image, tensor, histogram and landscape value,
        grouped by plugin in the order the plugins were first used; lineage goes to the
        ``_lineage`` file and graphs to graph events. In ``'train'`` mode the values of the
        summary operators that ran since the last record are added first, as MindSpore adds
        them: MindSpore's own (inside Cells, PyNative or GRAPH_MODE) and :mod:`tallyboard.ops`'.
        The call returns at once; a thread encodes and writes.

        Args:
            step: The step, an int (not bool) in the int64 range; 0 and negative steps are
                allowed.
            train_network: The training ``Cell`` whose graph is written when ``network``'s gives
                none (only with ``network`` set, at the first record). Default ``None``.
            plugin_filter: Called once per plugin name (``"scalar"``, ``"graph"``,
                ``"train_lineage"``, ...) of this step's values; a plugin it returns falsy for
                is discarded, not kept for later. Default ``None``: write everything.

        Returns:
            bool: ``True``; ``False`` (after logging an error) when the record is closed.

        Raises:
            TypeError: ``step`` not an int or ``train_network`` not a Cell (even when closed);
                an operator's value that is not a Tensor, or a tag that is not a non-empty
                str (MindSpore's messages; the operators' values are then dropped, those of
                :meth:`add_value` stay for the next record).
            ValueError: ``step`` outside int64; an operator's value of the wrong shape.
            OSError: With ``raise_exception=True``, a write error since the last call.
            RuntimeError: With ``raise_exception=True``, too little free disk space (MindSpore's
                check: 32 times the record's size).

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_record") as record:
            ...     record.add_value("scalar", "loss", np.float32(0.5))
            ...     record.add_value("tensor", "w", np.eye(2))
            ...     record.record(7, plugin_filter=lambda plugin: plugin == "scalar")
            True
        """
        if (
            type(step) is int
            and train_network is None
            and plugin_filter is None
            and self._plain
            and _INT64_MIN <= step <= _INT64_MAX
            and not (self._mode == "train" and (ops._cache or _ms_pending()))
        ):  # the hot path: values pooled by add_value only, no graph, filter or extra sink
            pool = self._pool
            if len(pool) == 1 and self._write_value is not None:
                item = pool[0]
                del pool[0]  # a value another thread adds meanwhile stays for the next record
                self._write_value(step, _now(), item)
                return True
            if not pool:
                return True
            items = pool[:]
            del pool[: len(items)]
            if len(items) > 1:
                return self._record_items(step, items, None)
            self._write_record(step, _now(), items)
            return True
        if type(step) is not int:
            if isinstance(step, bool) or not isinstance(step, int):
                raise _type_error("step", step, "'int'")
            step = int(step)
        if not _INT64_MIN <= step <= _INT64_MAX:
            raise ValueError(f"For 'SummaryRecord', the 'step' {step} is outside the int64 range")
        if train_network is not None and not _is_cell(train_network):
            raise _type_error("train_network", train_network, "one of '['Cell', 'NoneType']'")
        if self._closed:
            logger.error(
                "For 'SummaryRecord', The record writer is closed, please check if close() method is called"
            )
            return False
        if self.network is not None and not self._has_graph:
            self._record_graph(step, train_network)
        if self._mode == "train":
            if ops._cache:
                for key, value in ops.take().items():
                    match = _OP_KEY_RE.match(key)
                    if match is None:
                        logger.warning("The name(%r) is invalid, expected 'TAG[:TYPE]'.", key)
                        continue
                    tag, type_name = match.groups()
                    self.add_value(type_name.lower(), tag, value)
            if _ms_pending():  # MindSpore's own operators, inside the user's Cells
                for plugin, tag, value in mindspore_operators.take():
                    self.add_value(plugin, tag, value)
        pool = self._pool
        items = pool[:]
        del pool[: len(items)]
        return self._record_items(step, items, plugin_filter)

    def _record_items(
        self,
        step: int,
        items: list[tuple[str, str, Any]],
        plugin_filter: Callable[[str], Any] | None,
    ) -> bool:
        """Write pooled ``items`` grouped by plugin in order of first use, as MindSpore does."""
        if not items:
            return True
        wall_time = _now()
        if len(items) > 1:
            _warn_duplicates(items)
        first = items[0][0]
        if len(items) > 1 and any(kind != first for kind, _, _ in items):
            groups: dict[str, list[tuple[str, str, Any]]] = {}
            for item in items:
                group = groups.get(item[0])
                if group is None:
                    groups[item[0]] = [item]
                else:
                    group.append(item)
            items = [item for group in groups.values() for item in group]
        if plugin_filter:  # called once per plugin, as MindSpore calls it
            keep = {
                kind: plugin_filter(_PLUGIN_OF_KIND.get(kind, kind))
                for kind in dict.fromkeys(kind for kind, _, _ in items)
            }
            items = [item for item in items if keep[item[0]]]
        if items:
            held = items
            if self._foreign:  # values of kinds only the other sinks hold: not for this one
                self._foreign = False
                held = [item for item in items if item[0] in self._held_kinds]
            if held:
                self._write_record(step, wall_time, held)
            if self._extra_sinks:
                self._mirror_values(step, wall_time, items)
        return True

    def _record_graph(self, step: int, train_network: Any) -> None:
        proto = None
        try:
            from mindspore.common.api import _cell_graph_executor

            proto = _cell_graph_executor.get_optimize_graph_proto(self.network)
            if proto is None and train_network is not None:
                proto = _cell_graph_executor.get_optimize_graph_proto(train_network)
        except Exception as exc:  # MindSpore internals differ between versions
            logger.warning("Failed to get proto for graph: %s", exc)
        if proto is None:
            logger.warning("Failed to get proto for graph.")
            return
        graph = self._kinds["anf_graph"].convert(proto)
        self._sink.write(Recorded(step, _now(), [("anf_graph", "", graph)]))
        self._has_graph = True
        self._update_plain()

    def _update_plain(self) -> None:
        self._plain = (
            not self._closed and (self.network is None or self._has_graph) and not self._extra_sinks
        )

    def _mirror_values(
        self, step: int, wall_time: float, items: list[tuple[str, str, Any]]
    ) -> None:
        """Write the values of one record() to the extra sinks too, through the writer face.

        A MindSpore array value (scalar, image, tensor, histogram) goes through the tallyboard
        kind's own conversion (the torch-face semantics of that kind); a value that conversion
        rejects (one MindSpore took) is logged and skipped, as MindSpore drops bad values at write
        time. Any other value is already its kind's payload (``add_value`` converted it, raising
        there for a bad value) and is handed on as it is.
        """
        writer = self._mirror
        if writer is None:
            from tallyboard.faces.summary_writer import SummaryWriter

            writer = self._mirror = SummaryWriter(
                self._dir, flush_secs=2.0, sinks=self._extra_sinks
            )
        for kind, tag, value in items:
            if kind not in self._mirrored_kinds:
                continue
            try:
                if kind in _ARRAY_PLUGINS:  # pooled as MindSpore takes it: the kind converts it
                    writer.add_value(kind, tag or kind, value, step, wall_time)
                else:  # pooled as the kind's payload (add_value converted it): as it is
                    writer.emit(kind, tag or kind, value, step, wall_time)
            except (TypeError, ValueError) as exc:
                logger.error(
                    "extra sinks: the %s value %r is not written there: %s", kind, tag, exc
                )
