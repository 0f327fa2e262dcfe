"""How a :class:`~tallyboard.faces.summary_record.SummaryRecord` takes a value: ``add_value``
checks and copies it into the pool (a float scalar on a hot path of its own), by MindSpore's
plugin names or the name of any installed kind, and ``set_mode`` says whether the operators'
values are taken."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tallyboard.faces import ops
from tallyboard.faces.hints import add_value_order
from tallyboard.faces.mindspore_values import is_tensor_type as _is_ms_tensor_type
from tallyboard.faces.mindspore_values import scalar as _ms_scalar
from tallyboard.faces.record_options import logger
from tallyboard.faces.snapshots import Snapshots
from tallyboard.plugin.kinds import Kind
from tallyboard.values import check_utf8
from tallyboard.warn import cannot_encode

DEFAULT_SINK = "mindspore"
#: MindSpore plugin name -> tallyboard kind.
PLUGINS = {
    "scalar": "scalar",
    "image": "image",
    "tensor": "tensor",
    "histogram": "histogram",
    "train_lineage": "train_lineage",
    "eval_lineage": "eval_lineage",
    "dataset_graph": "dataset_graph",
    "custom_lineage_data": "custom_lineage_data",
    "graph": "anf_graph",
    "landscape": "landscape",
    "LANDSCAPE": "landscape",
}
_ARRAY_PLUGINS = frozenset({"scalar", "image", "tensor", "histogram"})
_ndarray = np.ndarray
#: Scalar values pooled as a Python float (what the encoders store: float32 of ``.item()``).
_FLOAT_TYPES = frozenset({np.float16, np.float32, np.float64})


class RecordValues:
    """A record's pool and what fills it: :meth:`add_value` and :meth:`set_mode`."""

    if TYPE_CHECKING:  # set by SummaryRecord._initialize
        _closed: bool
        _mode: str
        _pool: list[tuple[str, str, Any]]
        _snapshots: Snapshots
        _kinds: dict[str, Kind]
        _held_kinds: set[str]
        _mirrored_kinds: set[str]
        _foreign: bool

    def set_mode(self, mode: str) -> None:
        """Say whether the model trains or evaluates: only training steps take operator values.

        In ``'train'`` mode (the default) each :meth:`record` writes the values the summary
        operators produced since the last one; in ``'eval'`` mode it leaves them where they are
        (the next ``'train'`` record writes the latest of each), while values given to
        :meth:`add_value` are written in either mode.

        Args:
            mode: ``"train"`` or ``"eval"``.

        Raises:
            ValueError: Any other ``mode``.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord, ops
            >>> with SummaryRecord("runs/ms_mode") as record:
            ...     record.set_mode("eval")
            ...     ops.ScalarSummary()("eval_only", np.float32(0.5))  # left for later
            ...     record.add_value("scalar", "acc", np.float32(0.9))  # written at step 10
            ...     ok = record.record(10)
        """
        if mode not in ("train", "eval"):
            raise ValueError(
                f'For "SummaryRecord.set_mode", {mode!r} is not a recognized mode, expect the parameter "mode" '
                'is "train" or "eval"'
            )
        self._mode = mode

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Keep a value for the next :meth:`record`, which writes it with its step.

        The value is checked and copied now (changing the array afterwards changes nothing).
        A name added twice for the same plugin in one step is written twice, with a warning, as
        MindSpore does (MindInsight shows the last).

        Args:
            plugin: What the value is, as in MindSpore (case-sensitive):

                - ``"scalar"``: one number; an array of one element (shape ``()``, ``(1,)``,
                  ``(1, 1)``), written as float32.
                - ``"image"``: a batch of images, shape ``(N, C, H, W)`` with C 1 or 3, tiled
                  8 to a row into one PNG; values in [0, 1] are scaled by 255, others from
                  their min-max range.
                - ``"tensor"``: a whole array of at least one dimension.
                - ``"histogram"``: the distribution of an array's values (at least one
                  dimension; NaN and infinities counted apart).
                - ``"graph"``: the bytes of a serialized anf_ir ``ModelProto``.
                - ``"train_lineage"``, ``"eval_lineage"``, ``"dataset_graph"``,
                  ``"custom_lineage_data"``: a ``TrainLineage``, ``EvaluationLineage``,
                  ``DatasetGraph`` or ``UserDefinedInfo`` message, tallyboard's class or
                  MindSpore's own (``mindspore.train.lineage_pb2``).
                - ``"landscape"`` (or ``"LANDSCAPE"``): a ``LossLandscape`` message.
                - the name of a kind another installed plugin registers.

            name: The tag, a non-empty str (ignored for the lineage plugins and ``graph``, as
                MindSpore ignores it).
            value: For array plugins a ``mindspore.Tensor``, NumPy array or scalar, torch
                tensor, Python number or other array-like of bool, int, uint or float (16, 32,
                64 bits; bfloat16 Tensors become exact float32); else the message or bytes
                above.

        Raises:
            ValueError: An unknown ``plugin``; an empty or non-str ``name`` for array plugins
                (MindSpore's type); a shape the plugin cannot take.
            TypeError: A value of the wrong type for its plugin, or of an unsupported dtype.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord, TrainLineage
            >>> lineage = TrainLineage()
            >>> lineage.hyper_parameters.learning_rate = 0.01
            >>> with SummaryRecord("runs/ms_add") as record:
            ...     record.add_value("scalar", "loss", np.float32(0.25))
            ...     record.add_value("image", "inputs", np.random.rand(4, 3, 8, 8))
            ...     record.add_value("histogram", "weights", np.random.randn(1000))
            ...     record.add_value("train_lineage", "lineage", lineage)
            ...     ok = record.record(1)
        """
        if plugin == "scalar" and type(name) is str and name and not self._closed:
            # The hot path: a float scalar is pooled as a Python float (its snapshot).
            value_type = type(value)
            if value_type is _ndarray:
                number = (
                    value.item() if value.size == 1 and value.dtype.type in _FLOAT_TYPES else None
                )
            elif value_type is float:
                number = value
            elif value_type in _FLOAT_TYPES:  # NumPy's scalar types are the dtypes' own types
                number = value.item()
            else:  # a one-element float mindspore.Tensor: item(), not asnumpy() (50x dearer)
                number = _ms_scalar(value) if _is_ms_tensor_type(value_type) else None
            if number is not None:
                if not name.isascii():  # a lone surrogate would fail the whole file at close
                    check_utf8(name, "name")
                self._pool.append(("scalar", name, number))
                return
        if plugin in _ARRAY_PLUGINS:
            if not name or not isinstance(name, str):
                raise ValueError(
                    f'For "SummaryRecord", the parameter "name" type should be str, but got {type(name)}.'
                    + add_value_order(plugin, name, value, PLUGINS)
                )
            check_utf8(name, "name")
            payload = ops.to_numpy(plugin, value, copy=self._snapshots.copy)
            kind = plugin
        else:
            found = PLUGINS.get(plugin) if type(plugin) is str else None
            if found is None and type(plugin) is str and plugin in self._kinds:
                found = plugin  # a kind some other plugin registered: reachable here too
            if found is None:
                others = sorted(set(self._kinds) - set(PLUGINS))
                raise ValueError(
                    f'For "SummaryRecord.add_value", no such "plugin" of {plugin!r} , expect value is one of [tensor, '
                    "scalar, image, histogram, train_lineage, eval_lineage, dataset_graph, custom_lineage_data, "
                    f"graph, landscape]; kinds of installed plugins work too: [{', '.join(others)}]"
                    + add_value_order(plugin, name, value, PLUGINS)
                )
            kind = found
            registered = self._kinds.get(kind)
            if registered is None:
                raise ValueError(
                    f"Plugin {plugin!r} needs the tallyboard kind {kind!r}, which no installed plugin provides"
                )
            payload = registered.convert(value)
            if plugin == "LANDSCAPE":
                plugin = "landscape"
            if (
                plugin in PLUGINS
            ):  # MindSpore ignores the name of its non-array plugins but landscape
                name = name if plugin == "landscape" and isinstance(name, str) else ""
            elif not isinstance(name, str) or not name:
                raise ValueError(
                    f'For "SummaryRecord", the parameter "name" type should be str, but got {type(name)}.'
                )
            check_utf8(name, "name")  # checked even when no sink keeps the value
            if kind not in self._held_kinds and not self._reachable(kind):
                return
        if self._closed:
            logger.warning(
                "SummaryRecord is closed: the %r value %r is pooled but will never be written",
                plugin,
                name,
            )
        self._pool.append((kind, name, payload))

    def _reachable(self, kind: str) -> bool:
        """Whether a value of ``kind``, which the mindspore sink does not hold, reaches another
        sink of this record; if not, the mindspore sink's one warning per kind says so (at the
        caller's ``add_value`` line) and the value is not kept."""
        if kind not in self._mirrored_kinds:
            cannot_encode(DEFAULT_SINK, kind)
            return False
        self._foreign = True
        return True
