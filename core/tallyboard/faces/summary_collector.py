"""The ``mindspore.SummaryCollector`` face: ``Model.train(..., callbacks=[SummaryCollector(d)])``.

A ``mindspore.train.Callback`` with MindSpore 2.10's constructor, validation and collection (the
same values at the same steps into the same summary and lineage files, plus the checkpoints and
metadata MindSpore keeps for loss landscapes), written through :class:`tallyboard.SummaryRecord`
instead of MindSpore's writer process; ``tensorboard=True`` / ``sinks=`` reach that record, so a
``Model.train`` run shows live in TensorBoard.

This module needs MindSpore and imports it (the callback is a MindSpore class); nothing else in
tallyboard does. It relies on MindSpore's public API only: ``mindspore.train.Callback``,
``RunContext.original_args()``, ``Cell.get_func_graph_proto()``, ``mindspore.dataset.serialize``,
``mindspore.save_checkpoint`` and the public classes it checks values against.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import stat
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from tallyboard.faces import mindspore_values, summary_record
from tallyboard.faces.summary_record import SummaryRecord, _make_dir

try:
    import mindspore
    import mindspore.dataset
    from mindspore.train import Callback as _Callback
except ImportError as exc:  # pragma: no cover - exercised in a child without MindSpore
    raise ImportError(
        "tallyboard.SummaryCollector is a callback for MindSpore's Model.train and needs MindSpore "
        "(pip install mindspore); without MindSpore, log with tallyboard.SummaryRecord or "
        f"tallyboard.SummaryWriter. ({exc})"
    ) from exc

__all__ = ["SummaryCollector"]

logger = logging.getLogger("tallyboard.faces.summary_collector")

#: What is collected unless ``collect_specified_data`` says otherwise (MindSpore 2.10's defaults).
_DEFAULT_SPECIFIED_DATA: dict[str, Any] = {
    "collect_metric": True,
    "collect_graph": True,
    "collect_train_lineage": True,
    "collect_eval_lineage": True,
    "collect_input_data": True,
    "collect_dataset_graph": True,
    "histogram_regular": None,
    "collect_landscape": {
        "landscape_size": 40,
        "unit": "step",
        "num_samples": 2048,
        "create_landscape": {"train": True, "result": True},
        "intervals": [[1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]],
    },
}
_BOOL_ITEMS = set(_DEFAULT_SPECIFIED_DATA) - {"histogram_regular", "collect_landscape"}
#: The environment variable MindSpore's hyper-parameter tools put custom lineage in.
HYPER_CONFIG_ENV_NAME = "MINDINSIGHT_HYPER_CONFIG"
_HYPER_CONFIG_LEN_LIMIT = 100000
#: At most this many steps collect TensorSummary values unless ``collect_tensor_freq`` is set.
_TENSOR_SUMMARY_LIMIT = 20
_HISTOGRAMS_BY_DEFAULT = 5


def _check_type(name: str, value: Any, types: Iterable[type]) -> None:
    """MindSpore's type check (``bool`` is no ``int``), with its message."""
    valid = tuple(types)
    if not isinstance(value, valid) or (isinstance(value, bool) and bool not in valid):
        raise TypeError(
            f"For `{name}` the type should be a valid type of {[t.__name__ for t in valid]}, "
            f"but got {type(value).__name__}."
        )


def _check_export_options(options: Any) -> dict[str, str | None] | None:
    """``export_options`` checked as MindSpore's ``SummaryCollector`` checks it: its own type
    messages, then the keys and values as ``SummaryRecord`` checks them."""
    if options is None:
        return None
    _check_type("export_options", options, [dict, type(None)])
    for key, value in options.items():
        _check_type("export_option", key, [str])
        _check_type("export_format", value, [str, type(None)])
    return summary_record.check_export_options(options)


class SummaryCollector(_Callback):  # type: ignore[misc]
    """Log a MindSpore ``Model.train`` or ``Model.eval`` run, as MindSpore's collector does.

    Pass it in the callbacks: ``model.train(epochs, dataset, callbacks=[SummaryCollector(d)])``.
    Every ``collect_freq`` steps (and at the first) it records the loss (tag ``loss/auto``), the
    first input column as images (``input_data/auto``, when it holds NCHW images), histograms
    of the optimizer's parameters (``<parameter>/auto``) and the values of the summary
    operators in the network; once, the training graph (GRAPH_MODE) and the dataset pipeline;
    at the end, the train or eval lineage (optimizer, learning rate, loss function, epochs,
    batch and dataset size, metrics). By default it also saves the checkpoints and metadata
    MindSpore's ``SummaryLandscape`` computes loss landscapes from (``ckpt_dir/``).

    Files, tags and steps are those of MindSpore 2.10's ``SummaryCollector``, so MindInsight-era
    tools read them, and ``tallyboard board`` shows the run in TensorBoard while it trains
    (``tensorboard=True`` also writes event files, for a plain ``tensorboard --logdir``). The
    values go through a :class:`tallyboard.SummaryRecord` opened when ``Model.train`` starts and
    closed when it ends; a writer thread encodes them, where MindSpore starts a writer process
    with a pool.

    Args:
        summary_dir: The directory of the files, a str or path; created (mode 0o700) here.
        collect_freq: Record every ``collect_freq`` steps (epochs in dataset sink mode), and the
            first; an int > 0. Default ``10``.
        num_process: Accepted for MindSpore compatibility and ignored. Default ``32``.
        collect_specified_data: What to collect, a dict of: ``collect_metric``,
            ``collect_graph``, ``collect_train_lineage``, ``collect_eval_lineage``,
            ``collect_input_data``, ``collect_dataset_graph`` (bools); ``histogram_regular``
            (a regular expression ``re.match``-ed against parameter names; ``None``: the first
            five parameters); ``collect_landscape`` (a dict of ``landscape_size`` 3-256,
            ``unit`` ``"step"``/``"epoch"``, ``num_samples``, ``create_landscape``,
            ``intervals``: lists of at least three steps or epochs whose checkpoints are saved;
            ``None``: none). Default ``None``: everything, with MindSpore's defaults.
        keep_default_action: With ``collect_specified_data`` given, also collect what it does
            not name (``True``) or only what it names (``False``). Default ``True``.
        custom_lineage_data: Extra lineage written once, a dict of str to int, float or str;
            it wins over the ``custom_lineage_data`` of the JSON in the
            ``MINDINSIGHT_HYPER_CONFIG`` environment variable. Default ``None``.
        collect_tensor_freq: Like ``collect_freq``, for ``TensorSummary`` values only; an int
            > 0. Default ``None``: at most 20 steps of the run.
        max_file_size: Most bytes per file, an int > 0; the first record that does not fit
            stops that file. Default ``None``: no limit.
        export_options: ``{"tensor_format": "npy"}`` also saves every tensor value as a
            ``.npy`` file. Default ``None``.
        tensorboard: Also write TensorBoard event files into ``summary_dir`` (keyword only).
            Default ``False``.
        sinks: Further sinks for the same values, given to ``SummaryRecord`` as they are
            (keyword only): it checks them when training opens the record. Default ``()``.

    Raises:
        TypeError: An argument of the wrong type, with MindSpore's message (a bool is no
            int); ``summary_dir`` not a str or path.
        ValueError: ``collect_freq``, ``collect_tensor_freq`` or ``max_file_size`` <= 0; an
            unknown key of ``collect_specified_data``, ``collect_landscape`` or
            ``export_options``; an invalid ``histogram_regular``; a landscape size, unit or
            interval MindSpore refuses.
        NotADirectoryError: ``summary_dir`` is a file.

    Example:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> import mindspore.dataset as ds
        >>> from mindspore import nn
        >>> from tallyboard import SummaryCollector
        >>> def rows():  # NumPy arrays: GeneratorDataset copies nothing else on NumPy 2
        ...     for i in range(8):
        ...         yield np.full((3, 4, 4), i / 8, np.float32), np.array(i % 2, np.int32)
        >>> dataset = ds.GeneratorDataset(rows, ["image", "label"], shuffle=False).batch(4)
        >>> net = nn.SequentialCell(nn.Flatten(), nn.Dense(48, 2))
        >>> loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        >>> optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
        >>> model = ms.train.Model(net, loss, optimizer, metrics={"acc": ms.train.Accuracy()})
        >>> collector = SummaryCollector("runs/ms_train", collect_freq=1)
        >>> model.train(2, dataset, callbacks=[collector], dataset_sink_mode=False)
    """

    def __init__(
        self,
        summary_dir: str | os.PathLike[str],
        collect_freq: int = 10,
        num_process: int = 32,
        collect_specified_data: dict[str, Any] | None = None,
        keep_default_action: bool = True,
        custom_lineage_data: dict[str, int | float | str] | None = None,
        collect_tensor_freq: int | None = None,
        max_file_size: int | None = None,
        export_options: dict[str, str | None] | None = None,
        *,
        tensorboard: bool = False,
        sinks: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._summary_dir = _make_dir(summary_dir, "summary_dir")
        self._record: SummaryRecord | None = None
        self._check_positive("collect_freq", collect_freq)
        self._collect_freq = collect_freq
        self._check_positive("collect_tensor_freq", collect_tensor_freq, allow_none=True)
        self._collect_tensor_freq = collect_tensor_freq
        self._tensor_collect_range: range | None = None
        self._check_positive("max_file_size", max_file_size, allow_none=True)
        self._max_file_size = max_file_size
        self._export_options = _check_export_options(export_options)
        _check_type("keep_default_action", keep_default_action, [bool])
        self._collect_specified_data = self._specified_data(
            collect_specified_data, keep_default_action
        )
        landscape = self._collect_specified_data.get("collect_landscape")
        _check_type("collect_landscape", landscape, [dict, type(None)])
        self._is_collect_landscape = bool(landscape)
        self._epoch_group: defaultdict[int, list[int]] = defaultdict(list)
        self._model_params_file_map: dict[str, str] = {}
        if landscape:
            self._check_landscape(landscape)
            self._ckpt_dir = os.path.join(self._summary_dir, "ckpt_dir")
            _make_dir(self._ckpt_dir, "path")
            for i, interval in enumerate(landscape.get("intervals")):
                self._epoch_group[i].extend(interval)
        self._custom_lineage_data = self._custom_lineage(custom_lineage_data)
        if not isinstance(tensorboard, bool):
            raise TypeError(
                f"The type of 'tensorboard' should be 'bool', but got type '{type(tensorboard).__name__}'."
            )
        self._tensorboard = tensorboard
        self._sinks = sinks  # SummaryRecord checks them, as it checks its own
        self._num_process = num_process
        self._optimizer: Any = None  # None: not looked for yet; False: there is none
        self._has_saved_graph = False
        self._has_saved_custom_data = False
        self._is_parse_loss_success = True
        self._first_step = True
        self._dataset_sink_mode = True

    # -- the callback --------------------------------------------------------------------------

    def __enter__(self) -> SummaryCollector:
        """Open the :class:`~tallyboard.SummaryRecord` the run is written through.

        ``Model.train`` and ``Model.eval`` enter their callbacks before the first step, so each
        run writes new files; drive the callback by hand only inside a ``with`` block.

        Returns:
            SummaryCollector: this collector.

        Raises:
            RuntimeError: A ``SummaryRecord`` of tallyboard is already open in the process
                (two collectors in one callback list, as with MindSpore's).
            ValueError: A name in ``sinks`` that no installed plugin provides.

        Example:
            >>> from tallyboard import SummaryCollector
            >>> with SummaryCollector("runs/ms_enter") as collector:  # what Model.train does
            ...     print(collector._record is not None)
            True
        """
        self._record = SummaryRecord(
            self._summary_dir,
            num_process=self._num_process,
            max_file_size=self._max_file_size,
            raise_exception=False,
            export_options=self._export_options,
            tensorboard=self._tensorboard,
            sinks=self._sinks,
        )
        self._first_step, self._dataset_sink_mode = True, True
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the record: everything collected is in the files afterwards (read-only)."""
        if self._record is not None:
            self._record.close()

    def begin(self, run_context: Any) -> None:
        """At the start of ``Model.train`` or ``Model.eval``: check the callbacks, set the mode.

        In an evaluation the record is put in ``'eval'`` mode: the summary operators' values
        are not taken, and only the eval lineage is written, at the end.

        Args:
            run_context: MindSpore's ``RunContext`` (``Model`` passes it).

        Raises:
            ValueError: More than one ``SummaryCollector`` in the callback list (compared by
                class name, as MindSpore compares them), or a run neither train nor eval.

        Example:
            >>> evaluation = SummaryCollector("runs/ms_eval")  # the class example's model
            >>> metrics = model.eval(dataset, callbacks=[evaluation])  # eval lineage only
        """
        cb_params = run_context.original_args()
        self._check_callbacks(cb_params)
        if cb_params.mode not in ("train", "eval"):
            raise ValueError(
                "Only support `train` (model.train) and `eval` (model.eval) mode, "
                f"but got `{cb_params.mode}` mode."
            )
        self._open_record().set_mode(cb_params.mode)
        self._dataset_sink_mode = cb_params.dataset_sink_mode

    def step_end(self, run_context: Any) -> None:
        """After each training step: collect what the step's number calls for.

        At the first step the graphs (training graph, dataset pipeline) and the custom lineage;
        every ``collect_freq`` steps the loss, input images, parameter histograms and the
        operators' values, ``TensorSummary`` values only at the steps its frequency allows (in
        dataset sink mode this happens at the epoch's end instead); checkpoints for the loss
        landscape at the steps its intervals name. Nothing in evaluations.

        Args:
            run_context: MindSpore's ``RunContext`` (``Model`` passes it).

        Example:
            >>> class Noting(SummaryCollector):  # extend it: collect, then do more
            ...     def step_end(self, run_context):
            ...         super().step_end(run_context)
            ...         print(run_context.original_args().cur_step_num, end=" ")
            >>> model.train(1, dataset, callbacks=[Noting("runs/ms_steps")], dataset_sink_mode=False)
            1 2
        """
        cb_params = run_context.original_args()
        if cb_params.mode != "train":
            return
        record = self._open_record()
        if not self._has_saved_graph:
            self._collect_graph(cb_params)
            self._collect_dataset_graph(cb_params)
            self._has_saved_graph = True
            record.record(cb_params.cur_step_num)
        if self._custom_lineage_data and not self._has_saved_custom_data:
            record.add_value(
                "custom_lineage_data",
                "custom_lineage_data",
                self._package_custom_lineage(self._custom_lineage_data),
            )
            self._has_saved_custom_data = True
            record.record(cb_params.cur_step_num)
        if not self._dataset_sink_mode:
            self._collect_tensor_data(cb_params)
        landscape = self._collect_specified_data.get("collect_landscape")
        if (
            landscape
            and landscape.get("unit", "step") == "step"
            and "cur_step_num" in cb_params
            and any(cb_params.cur_step_num in interval for interval in landscape["intervals"])
        ):
            self._save_model_params_for_landscape(cb_params)

    def epoch_end(self, run_context: Any) -> None:
        """After each epoch: collect as after a step, save landscape checkpoints by epoch.

        So the epoch's last step may be recorded twice, as MindSpore records it. MindSpore
        also asks its writer process to flush here without waiting for it; tallyboard's writer
        thread writes what is pending within two seconds anyway, and nothing waits here.

        Args:
            run_context: MindSpore's ``RunContext`` (``Model`` passes it).

        Example:
            >>> collector = SummaryCollector("runs/ms_epochs", collect_freq=2)
            >>> model.train(2, dataset, callbacks=[collector], dataset_sink_mode=False)
            >>> # steps 1 and 2 recorded, step 2 (an epoch's end, collect_freq=2) twice
        """
        cb_params = run_context.original_args()
        self._collect_tensor_data(cb_params)
        landscape = self._collect_specified_data.get("collect_landscape")
        if (
            landscape
            and landscape.get("unit", "step") == "epoch"
            and "cur_epoch_num" in cb_params
            and any(cb_params.cur_epoch_num in interval for interval in landscape["intervals"])
        ):
            self._save_model_params_for_landscape(cb_params)

    def end(self, run_context: Any) -> None:
        """At the end of the run: the train or eval lineage, and the landscape's metadata.

        The lineage goes to the ``_lineage`` file; after training, with landscapes collected,
        ``ckpt_dir/train_metadata.json`` maps the saved checkpoints for ``SummaryLandscape``.

        Args:
            run_context: MindSpore's ``RunContext`` (``Model`` passes it).

        Example:
            >>> import glob
            >>> collector = SummaryCollector("runs/ms_end")
            >>> model.train(1, dataset, callbacks=[collector], dataset_sink_mode=False)
            >>> len(glob.glob("runs/ms_end/*_lineage")), len(glob.glob("runs/ms_end/ckpt_dir/*.json"))
            (1, 1)
        """
        cb_params = run_context.original_args()
        record = self._open_record()
        if cb_params.mode == "train":
            self._collect_train_lineage(cb_params)
        else:
            self._collect_eval_lineage(cb_params)
        record.set_mode("eval")  # the operators' values are not this record's to take now
        record.record(step=0)
        landscape = self._collect_specified_data.get("collect_landscape")
        if cb_params.mode == "train" and landscape:
            self._save_metadata(
                cb_params.batch_num,
                landscape.get("unit", "step"),
                landscape.get("num_samples", 2048),
                landscape.get("landscape_size", 40),
                landscape.get("create_landscape", {"train": True, "result": True}),
            )

    # -- checks --------------------------------------------------------------------------------

    @staticmethod
    def _check_positive(name: str, value: Any, allow_none: bool = False) -> None:
        if allow_none and value is None:
            return
        _check_type(name, value, [int])
        if value <= 0:
            raise ValueError(
                f'For "SummaryCollector", the value of `{name}` should be greater than 0, '
                f"but got `{value}`."
            )

    @staticmethod
    def _specified_data(specified: Any, keep_default: bool) -> dict[str, Any]:
        _check_type("collect_specified_data", specified, [dict, type(None)])
        if specified is None:
            return dict(_DEFAULT_SPECIFIED_DATA) if keep_default else {}
        for name in specified:
            _check_type(name, name, [str])
        unexpected = set(specified) - set(_DEFAULT_SPECIFIED_DATA)
        if unexpected:
            raise ValueError(
                f'For "SummaryCollector", the keys {unexpected} of `collect_specified_data` are '
                f"unsupported, expect the follow keys: {list(_DEFAULT_SPECIFIED_DATA)}"
            )
        if "histogram_regular" in specified:
            regular = specified["histogram_regular"]
            _check_type("histogram_regular", regular, (str, type(None)))
            if isinstance(regular, str):
                try:
                    re.compile(regular)
                except re.error as exc:
                    raise ValueError(
                        "For `collect_specified_data`, the value of `histogram_regular` is not a "
                        f"valid regular expression. Detail: {exc}."
                    ) from exc
        for item in _BOOL_ITEMS:
            if item in specified:
                _check_type(item, specified[item], [bool])
        if keep_default:
            return {**_DEFAULT_SPECIFIED_DATA, **specified}
        return dict(specified)

    @staticmethod
    def _check_landscape(landscape: dict[str, Any]) -> None:
        defaults = _DEFAULT_SPECIFIED_DATA["collect_landscape"]
        unexpected = set(landscape) - set(defaults)
        if unexpected:
            raise ValueError(
                f'For "SummaryCollector", the keys {unexpected} of `collect_landscape` are '
                f"unsupported, expect the follow keys: {list(defaults)}"
            )
        size = landscape.get("landscape_size", 40)
        _check_type("landscape_size", size, [int])
        if size < 3 or size > 256:
            raise ValueError(
                'For "SummaryCollector", the "landscape_size" in collect_specified_data should be '
                f"less than 256 and more than 3, but got the: {size}"
            )
        unit = landscape.get("unit", "step")
        _check_type("unit", unit, [str])
        if unit not in ("step", "epoch"):
            raise ValueError(
                'For "SummaryCollector", unit in collect_specified_data should be step or epoch, '
                f"but got the: {unit}."
            )
        _check_type("num_samples", landscape.get("num_samples", 2048), [int])
        create = landscape.get("create_landscape", {"train": True, "result": True})
        _check_type("create_landscape", create, [dict])
        for key, value in create.items():
            if key not in ("train", "result"):
                raise ValueError(
                    'For "SummaryCollector", the key to create landscape should be in '
                    f'["train", "result"], but got the: {key}.'
                )
            _check_type(key, value, [bool])
        intervals: Any = landscape.get("intervals")
        _check_type("intervals", intervals, [list])
        for interval in intervals:
            _check_type("each interval inintervals", interval, [list])
            if len(interval) < 3:
                raise ValueError(
                    'For "SummaryCollector", the length of each list in "intervals" should not be '
                    f"less than three, but got the: {interval}"
                )
            for epoch in interval:
                if not isinstance(epoch, int):
                    raise TypeError(
                        'For "SummaryCollector", the value of each list in "intervals" should be '
                        f"int, but got the: {type(epoch)}"
                    )

    @classmethod
    def _custom_lineage(cls, custom: Any) -> dict[str, Any]:
        """The user's custom lineage over what ``MINDINSIGHT_HYPER_CONFIG`` holds, checked."""
        if custom is None:
            custom = {}
        cls._check_custom_lineage("custom_lineage_data", custom)
        merged = cls._hyper_config_lineage()
        cls._check_custom_lineage("auto_custom_lineage_data", merged)
        merged.update(custom)
        return merged

    @staticmethod
    def _check_custom_lineage(name: str, custom: Any) -> None:
        _check_type(name, custom, [dict, type(None)])
        for key, value in custom.items():
            _check_type(f"{name} -> {key}", key, [str])
            _check_type(f"the value of {name} -> {key}", value, (int, str, float))

    @staticmethod
    def _hyper_config_lineage() -> dict[str, Any]:
        config = os.environ.get(HYPER_CONFIG_ENV_NAME)
        if config is None:
            return {}
        if len(config) > _HYPER_CONFIG_LEN_LIMIT:
            logger.warning(
                "The 'MINDINSIGHT_HYPER_CONFIG' of environment variable is too long. The length "
                "limit is %s, the length of hyper_config is %s.",
                _HYPER_CONFIG_LEN_LIMIT,
                len(config),
            )
            return {}
        try:
            custom = json.loads(config).get("custom_lineage_data")
        except (TypeError, ValueError, AttributeError) as exc:
            logger.warning(
                "The 'MINDINSIGHT_HYPER_CONFIG' of environment variable decode error. Detail: %s.",
                exc,
            )
            return {}
        return dict(custom) if isinstance(custom, dict) else {}

    def _check_callbacks(self, cb_params: Any) -> None:
        """One collector per callback list (by class name, as MindSpore compares them)."""
        found = False
        for callback in cb_params.list_callback:
            if type(callback).__name__ == type(self).__name__:
                if found:
                    raise ValueError(
                        "There are more than one SummaryCollector instance in callback list,but "
                        "expected only one SummaryCollector instance."
                    )
                found = True

    def _open_record(self) -> SummaryRecord:
        if self._record is None:
            raise RuntimeError(
                "The SummaryCollector is not entered: pass it in the callbacks of Model.train or "
                "Model.eval, which open its record, or use it in a `with` block."
            )
        return self._record

    # -- collection ----------------------------------------------------------------------------

    def _collect_tensor_data(self, cb_params: Any) -> None:
        if cb_params.mode != "train":
            return
        if self._first_step:
            self._tensor_collect_range = self._tensor_range(cb_params, self._dataset_sink_mode)
            self._collect_at_step_end(cb_params, None)
            self._first_step = False  # (MindSpore asks for a flush here too: see epoch_end)
            return
        current = cb_params.cur_epoch_num if self._dataset_sink_mode else cb_params.cur_step_num
        in_range = current in self._tensor_collect_range  # type: ignore[operator]
        if current % self._collect_freq == 0:
            self._collect_at_step_end(cb_params, None if in_range else _not_tensor)
        elif in_range:
            self._collect_at_step_end(cb_params, _only_tensor)

    def _tensor_range(self, cb_params: Any, sink_mode: bool) -> range:
        """The steps (epochs in sink mode) whose TensorSummary values are written."""
        total = cb_params.epoch_num if sink_mode else cb_params.epoch_num * cb_params.batch_num
        if self._collect_tensor_freq is not None:
            return range(0, total + 1, self._collect_tensor_freq)
        if len(range(0, total + 1, self._collect_freq)) > _TENSOR_SUMMARY_LIMIT:
            freq = total // (_TENSOR_SUMMARY_LIMIT - 1)
            if freq > 1:
                return range(0, total + 1, freq)[:_TENSOR_SUMMARY_LIMIT]
            return range(0, total + 1)[: _TENSOR_SUMMARY_LIMIT + 1]  # steps count from 1
        return range(0, total + 1, self._collect_freq)

    def _collect_at_step_end(
        self, cb_params: Any, plugin_filter: Callable[[str], bool] | None
    ) -> None:
        self._collect_input_data(cb_params)
        self._collect_metric(cb_params)
        self._collect_histogram(cb_params)
        self._open_record().record(cb_params.cur_step_num, plugin_filter=plugin_filter)

    def _collect_input_data(self, cb_params: Any) -> None:
        """The first input column as images (turned off after the first one that is not)."""
        specified = self._collect_specified_data
        if not specified.get("collect_input_data"):
            return
        if self._dataset_sink_mode and mindspore.get_context("device_target") in ("Ascend", "GPU"):
            logger.warning(
                "On Ascend or GPU device, SummaryCollector is not supported to record input data "
                "in dataset sink mode."
            )
            specified["collect_input_data"] = False
            return
        data = getattr(cb_params, "train_dataset_element", None)
        if not isinstance(data, (mindspore.Tensor, list, tuple)):
            specified["collect_input_data"] = False
            logger.warning(
                "The type of input data is not Tensor/list/tuple, so SummaryCollector will not "
                "collect input data."
            )
            return
        if not isinstance(data, mindspore.Tensor) and not data:
            specified["collect_input_data"] = False
            logger.warning(
                "The 'train_dataset_element' in RunContext.original_args is empty, so "
                "SummaryCollector will not record the input data."
            )
            return
        if isinstance(data, (list, tuple)):
            data = data[0]
        try:
            self._open_record().add_value("image", "input_data/auto", data)
        except (TypeError, ValueError):
            logger.warning(
                "The input data of network are not image, so will not collect by SummaryCollector."
            )
            specified["collect_input_data"] = False

    def _collect_metric(self, cb_params: Any) -> None:
        if not self._collect_specified_data.get("collect_metric"):
            return
        loss = self._get_loss(cb_params)
        if loss is None:
            return
        try:
            self._open_record().add_value("scalar", "loss/auto", loss)
        except ValueError:
            logger.warning(
                "The output of network is not a scalar, so SummaryCollector will not collect loss."
            )
            self._collect_specified_data["collect_metric"] = False

    def _get_loss(self, cb_params: Any) -> Any:
        """The mean of the network's first output (None when there is none to take), as a NumPy
        scalar of the output's dtype (MindSpore: ``Tensor(np.mean(loss.asnumpy()))``)."""
        if not self._is_parse_loss_success:
            return None
        output = cb_params.net_outputs
        if output is None:
            logger.warning(
                "Can not find any output by this network, so SummaryCollector will not collect loss."
            )
            self._is_parse_loss_success = False
            return None
        if isinstance(output, (int, float, mindspore.Tensor)):
            loss = output
        elif isinstance(output, (list, tuple)) and output:
            loss = output[0]
        else:
            logger.warning(
                "The output type could not be identified, expect type is one of [int, float, "
                "Tensor, list, tuple], so no loss was recorded in SummaryCollector."
            )
            self._is_parse_loss_success = False
            return None
        if mindspore_values.is_tensor(loss):
            number = mindspore_values.scalar(loss)  # a one-element float Tensor: no asnumpy()
            return number if number is not None else np.mean(mindspore_values.to_numpy(loss))
        if isinstance(loss, float):
            return np.float32(loss)  # what mindspore.Tensor(float) holds
        return np.mean(np.int64(loss))  # ... and Tensor(int)

    def _get_optimizer(self, cb_params: Any) -> Any:
        """The run's optimizer (looked for once), None when there is no MindSpore optimizer."""
        if self._optimizer is False:
            return None
        if self._optimizer is not None:
            return self._optimizer
        optimizer = cb_params.optimizer
        if optimizer is None:
            network = (
                cb_params.train_network if cb_params.mode == "train" else cb_params.eval_network
            )
            optimizer = self._optimizer_of(network)
        if optimizer is None or not isinstance(optimizer, mindspore.nn.Optimizer):
            logger.warning(
                "Can not find optimizer in network, or the optimizer does not inherit MindSpore's "
                "optimizer, so we will not collect data about optimizer in SummaryCollector."
            )
            optimizer = None
        self._optimizer = optimizer if optimizer is not None else False
        return optimizer

    @staticmethod
    def _optimizer_of(network: Any) -> Any:
        optimizer = None
        for _, cell in network.cells_and_names():
            if isinstance(cell, mindspore.nn.Optimizer):
                return cell
            optimizer = getattr(cell, "optimizer", None)
            if isinstance(optimizer, mindspore.nn.Optimizer):
                break
        return optimizer

    def _collect_histogram(self, cb_params: Any) -> None:
        """Histograms of the optimizer's parameters: those ``histogram_regular`` matches, or the
        first five."""
        if "histogram_regular" not in self._collect_specified_data:
            return
        optimizer = self._get_optimizer(cb_params)
        if optimizer is None:
            return
        record = self._open_record()
        parameters = optimizer.parameters
        regular = self._collect_specified_data.get("histogram_regular")
        if regular is not None:
            for parameter in parameters:
                if re.match(regular, parameter.name):
                    record.add_value("histogram", parameter.name + "/auto", parameter.data)
            return
        for parameter in parameters[:_HISTOGRAMS_BY_DEFAULT]:
            record.add_value("histogram", parameter.name + "/auto", parameter.data)

    def _collect_graph(self, cb_params: Any) -> None:
        if not self._collect_specified_data.get("collect_graph"):
            return
        network = cb_params.train_network if cb_params.mode == "train" else cb_params.eval_network
        proto = network.get_func_graph_proto()
        if proto is None:
            logger.warning(
                "Can not get graph proto, it may not be 'GRAPH_MODE' in context currently, so "
                "SummaryCollector will not collect graph."
            )
            return
        self._open_record().add_value("graph", "train_network/auto", proto)

    def _collect_dataset_graph(self, cb_params: Any) -> None:
        if not self._collect_specified_data.get("collect_dataset_graph"):
            return
        if cb_params.mode != "train":
            return
        graph = _dataset_graph(cb_params.train_dataset)
        if graph is not None:
            self._open_record().add_value("dataset_graph", "train_dataset", graph)

    def _collect_train_lineage(self, cb_params: Any) -> None:
        if not self._collect_specified_data.get("collect_train_lineage"):
            return
        lineage = _message("TrainLineage")
        loss = self._get_loss(cb_params)
        if loss is not None:
            lineage.algorithm.loss = float(np.atleast_1d(loss)[0])
        lineage.algorithm.network = type(cb_params.network).__name__
        optimizer = self._get_optimizer(cb_params)
        rate = getattr(optimizer, "learning_rate", None) if optimizer is not None else None
        if optimizer is not None and not isinstance(rate, mindspore.Parameter):
            logger.warning(
                "The learning rate detected in the optimizer is not a Parameter type, so it is not "
                "recorded. Its type is %r.",
                type(rate).__name__,
            )
            rate = None
        if rate is not None:
            lineage.hyper_parameters.learning_rate = np.atleast_1d(
                mindspore_values.to_numpy(rate.data)
            )[0]
        if optimizer is not None:
            lineage.hyper_parameters.optimizer = type(optimizer).__name__
        loss_fn = self._get_loss_fn(cb_params)
        if loss_fn is not None:
            lineage.hyper_parameters.loss_function = type(loss_fn).__name__
        if cb_params.parallel_mode is not None:
            lineage.hyper_parameters.parallel_mode = cb_params.parallel_mode
        ckpt_path = self._get_ckpt_file_path(cb_params)
        dataset_dir, dataset_size, batch_size = self._parse_dataset(cb_params.train_dataset)
        if dataset_dir is not None:
            lineage.train_dataset.train_dataset_path = dataset_dir
        lineage.train_dataset.train_dataset_size = dataset_size
        lineage.model.path = json.dumps({"ckpt": ckpt_path})
        lineage.model.size = os.path.getsize(ckpt_path) if ckpt_path else 0
        lineage.hyper_parameters.epoch = cb_params.epoch_num
        lineage.hyper_parameters.device_num = cb_params.device_number
        lineage.hyper_parameters.batch_size = batch_size
        self._open_record().add_value("train_lineage", "train_lineage", lineage)

    def _collect_eval_lineage(self, cb_params: Any) -> None:
        if not self._collect_specified_data.get("collect_eval_lineage"):
            return
        lineage = _message("EvaluationLineage")
        try:
            lineage.metric = json.dumps(cb_params.metrics)
        except TypeError as exc:
            logger.warning(
                "Summary cannot collect the type of metrics, currently support type: dict, list, "
                "tuple, str, int, float, bool and None. %s.",
                exc,
            )
        dataset_dir, dataset_size, _ = self._parse_dataset(cb_params.valid_dataset)
        if dataset_dir is not None:
            lineage.valid_dataset.valid_dataset_path = dataset_dir
        lineage.valid_dataset.valid_dataset_size = dataset_size
        self._open_record().add_value("eval_lineage", "eval_lineage", lineage)

    @staticmethod
    def _package_custom_lineage(custom: dict[str, Any]) -> Any:
        """One ``user_info`` entry per key: ints in ``map_int32``, floats in ``map_double``, the
        rest in ``map_str``."""
        info = _message("UserDefinedInfo")
        for key, value in custom.items():
            if isinstance(value, int):
                field = "map_int32"
            elif isinstance(value, float):
                field = "map_double"
            else:
                field = "map_str"
            getattr(info.user_info.add(), field)[key] = value
        return info

    def _parse_dataset(self, dataset: Any) -> tuple[str | None, int, int]:
        """(directory or file of the data, number of samples, batch size) of a dataset."""
        try:
            path = _dataset_path(dataset)
        except IndexError:
            path = None
        if path and os.path.isfile(path):
            path = os.path.dirname(path)
        batch_num = dataset.get_dataset_size()
        batch_size = dataset.get_batch_size()
        return path, int(batch_num * batch_size), batch_size

    @staticmethod
    def _get_ckpt_file_path(cb_params: Any) -> str | None:
        path = None
        for callback in cb_params.list_callback:
            if isinstance(callback, mindspore.train.ModelCheckpoint):
                path = callback.latest_ckpt_file_name
        return os.path.realpath(path) if path else None

    @staticmethod
    def _get_loss_fn(cb_params: Any) -> Any:
        if cb_params.loss_fn is not None:
            return cb_params.loss_fn
        network = cb_params.train_network if cb_params.mode == "train" else cb_params.eval_network
        for _, cell in network.cells_and_names():
            if isinstance(cell, mindspore.nn.LossBase):
                return cell
        return None

    # -- the loss landscape's checkpoints ---------------------------------------------------------

    def _save_model_params_for_landscape(self, cb_params: Any) -> None:
        if cb_params.mode != "train":
            return
        backbone = _backbone(cb_params.train_network)
        while True:  # down through the wrappers to the network itself
            cells = backbone.name_cells()
            if "network" in cells:
                backbone = backbone.network
                if "optimizer" in cells:
                    break
            else:
                break
        unit = self._collect_specified_data["collect_landscape"].get("unit", "step")
        number = cb_params.cur_epoch_num if unit == "epoch" else cb_params.cur_step_num
        logger.info("Save model params, %s: %s.", unit, number)
        parameters = []
        for parameter in backbone.get_parameters():
            parameter.init_data()
            data = (
                parameter.data
                if isinstance(parameter.data, mindspore.Tensor)
                else mindspore.Tensor(parameter.data)
            )
            parameters.append({"name": parameter.name, "data": data})
        path = os.path.join(self._ckpt_dir, f"{type(backbone).__name__}_{number}_{unit}.ckpt")
        self._model_params_file_map[str(number)] = path
        _write_once(path, lambda: mindspore.save_checkpoint(parameters, path))

    def _save_metadata(
        self,
        step_per_epoch: int,
        unit: str,
        num_samples: int,
        landscape_size: int,
        create_landscape: dict[str, bool],
    ) -> None:
        """``ckpt_dir/train_metadata.json``: what MindSpore's ``SummaryLandscape`` needs to
        compute landscapes from the saved checkpoints (read-only, written once)."""
        data = {
            "epoch_group": self._epoch_group,
            "model_params_file_map": self._model_params_file_map,
            "step_per_epoch": step_per_epoch,
            "unit": unit,
            "num_samples": num_samples,
            "landscape_size": landscape_size,
            "create_landscape": create_landscape,
        }
        path = os.path.join(self._ckpt_dir, "train_metadata.json")

        def write() -> None:
            with open(path, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.chmod(path, stat.S_IRUSR)

        _write_once(path, write)


def _message(name: str) -> Any:
    """A new lineage message of tallyboard's class ``name`` (a plugin provides the classes)."""
    return getattr(summary_record, name)()


def _only_tensor(plugin: str) -> bool:
    return plugin == "tensor"


def _not_tensor(plugin: str) -> bool:
    return plugin != "tensor"


def _backbone(network: Any) -> Any:
    """The network a ``WithLossCell`` wraps (its ``_backbone``), else ``network`` itself."""
    for _, cell in network.cells_and_names():
        if hasattr(cell, "_backbone"):
            return cell._backbone
    return network


def _write_once(path: str, write: Callable[[], None]) -> None:
    """Run ``write`` unless ``path`` exists, under a lock file that ranks writing the same path
    share (Linux); an OSError is logged, as MindSpore logs it."""
    if platform.system() != "Linux":
        try:
            write()
        except OSError as exc:
            logger.error("Write %s failed, detail: %s", path, exc)
        return
    import fcntl

    lock = f"{path}.lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IWUSR)
        with os.fdopen(fd, "w") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            if not os.path.isfile(path):
                write()
    except OSError as exc:
        logger.error("Write %s failed, detail: %s", path, exc)
    try:
        if os.path.isfile(lock):
            os.remove(lock)
    except OSError:
        logger.warning("The lock file %s has been removed.", lock)


def _dataset_path(dataset: Any) -> str:
    """The file or directory a dataset pipeline reads (IndexError when it reads none)."""
    package = mindspore.dataset
    folders = tuple(
        getattr(package, name)
        for name in (
            "ImageFolderDataset",
            "MnistDataset",
            "Cifar10Dataset",
            "Cifar100Dataset",
            "VOCDataset",
            "CelebADataset",
        )  # fmt: skip
        if hasattr(package, name)
    )
    path: Any = ""
    if isinstance(dataset, package.ManifestDataset):
        path = dataset.dataset_file
    if isinstance(dataset, package.MindDataset):
        path = dataset.dataset_files
    if isinstance(dataset, folders):
        path = dataset.dataset_dir
    if isinstance(dataset, (package.TFRecordDataset, package.TextFileDataset)):
        path = dataset.dataset_files[0]
    if path:
        if isinstance(path, str):
            return path
        if isinstance(path, Iterable):
            return str(list(path)[0])
    return _dataset_path(dataset.children[0])


def _dataset_graph(dataset: Any) -> Any:
    """A dataset pipeline as a ``DatasetGraph`` message, from ``mindspore.dataset.serialize``;
    None (after a warning) when the pipeline cannot be serialized."""
    try:
        description = mindspore.dataset.serialize(dataset)
    except (TypeError, OSError) as exc:
        logger.warning(
            "Summary can not collect dataset graph, there is an error in dataset internal, "
            "detail: %s.",
            exc,
        )
        return None
    graph = _message("DatasetGraph")
    if not isinstance(description, dict):
        logger.warning(
            "The dataset graph serialized from dataset object is not a dict. Its type is %r.",
            type(description).__name__,
        )
        return graph
    if "children" in description:
        children = description.pop("children")
        if children:
            _graph_children(children, graph)
        _graph_node(description, graph)
    return graph


def _graph_children(children: list[Any], message: Any) -> None:
    for child in children:
        if child:
            node = message.children.add()
            grandchildren = child.pop("children")
            if grandchildren:
                _graph_children(grandchildren, node)
            _graph_node(child, node)


def _graph_node(operation: dict[str, Any], message: Any) -> None:
    for key, value in operation.items():
        if value and key == "operations":
            for operator in value:
                _graph_operation(operator, message.operations.add())
        elif value and key == "sampler":
            _graph_operation(value, message.sampler)
        else:
            _graph_parameter(key, value, message.parameter)


def _graph_operation(operation: dict[str, Any] | None, message: Any) -> None:
    if operation is None:
        logger.warning(
            "Summary cannot collect the operation for dataset graph as the operation is none."
            "it may due to the custom operation cannot be pickled."
        )
        return
    for key, value in operation.items():
        if isinstance(value, (list, tuple)):
            if all(isinstance(item, int) for item in value):
                message.size.extend(value)
            else:
                message.weights.extend(value)
        else:
            _graph_parameter(key, value, message.operationParam)


def _graph_parameter(key: str, value: Any, message: Any) -> None:
    """One parameter of a dataset operation, in the map its type goes to."""
    if isinstance(value, str):
        message.mapStr[key] = value
    elif isinstance(value, bool):
        message.mapBool[key] = value
    elif isinstance(value, int):
        message.mapInt[key] = value
    elif isinstance(value, float):
        message.mapDouble[key] = value
    elif isinstance(value, (list, tuple)) and key != "operations":
        if value:
            message.mapStrList[key].strValue.extend(
                "" if item is None else json.dumps(item) for item in value
            )
    elif isinstance(value, dict):
        try:
            message.mapStr[key] = json.dumps(value)
        except TypeError as exc:
            logger.warning(
                "Transform the value of parameter %r to string failed. Detail: %s.", key, exc
            )
    elif value is None:
        message.mapStr[key] = "None"
    else:
        logger.warning(
            "The parameter %r is not recorded, because its type is not supported in event "
            "package, Its type should be in ['str', 'bool', 'int', 'float', '(list, tuple)', "
            "'dict', 'None'], but got type is %r.",
            key,
            type(value).__name__,
        )
