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

import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tallyboard.faces.collector_landscape import CollectorLandscape
from tallyboard.faces.collector_lineage import CollectorLineage
from tallyboard.faces.collector_mindspore import Callback as _Callback
from tallyboard.faces.collector_options import (
    _check_export_options,
    _check_type,
    check_landscape,
    check_positive,
    custom_lineage,
    specified_data,
)
from tallyboard.faces.collector_steps import CollectorSteps
from tallyboard.faces.summary_record import SummaryRecord, _make_dir

__all__ = ["SummaryCollector"]

logger = logging.getLogger("tallyboard.faces.summary_collector")


class SummaryCollector(CollectorSteps, CollectorLineage, CollectorLandscape, _Callback):  # type: ignore[misc]
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
        check_positive("collect_freq", collect_freq)
        self._collect_freq = collect_freq
        check_positive("collect_tensor_freq", collect_tensor_freq, allow_none=True)
        self._collect_tensor_freq = collect_tensor_freq
        self._tensor_collect_range: range | None = None
        check_positive("max_file_size", max_file_size, allow_none=True)
        self._max_file_size = max_file_size
        self._export_options = _check_export_options(export_options)
        _check_type("keep_default_action", keep_default_action, [bool])
        self._collect_specified_data = specified_data(collect_specified_data, keep_default_action)
        landscape = self._collect_specified_data.get("collect_landscape")
        _check_type("collect_landscape", landscape, [dict, type(None)])
        self._is_collect_landscape = bool(landscape)
        self._epoch_group: defaultdict[int, list[int]] = defaultdict(list)
        self._model_params_file_map: dict[str, str] = {}
        if landscape:
            check_landscape(landscape)
            self._ckpt_dir = os.path.join(self._summary_dir, "ckpt_dir")
            _make_dir(self._ckpt_dir, "path")
            for i, interval in enumerate(landscape.get("intervals")):
                self._epoch_group[i].extend(interval)
        self._custom_lineage_data = custom_lineage(custom_lineage_data)
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

    # -- the loss landscape's checkpoints ---------------------------------------------------------
