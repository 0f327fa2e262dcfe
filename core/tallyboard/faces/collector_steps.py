"""What a :class:`~tallyboard.faces.summary_collector.SummaryCollector` collects at a step: the
loss, the input images, the optimizer's parameters as histograms, the summary operators'
tensors, the metrics and the graph."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tallyboard.faces import mindspore_values
from tallyboard.faces.collector_mindspore import mindspore
from tallyboard.faces.collector_options import (
    _HISTOGRAMS_BY_DEFAULT,
    _TENSOR_SUMMARY_LIMIT,
    CollectorState,
)

logger = logging.getLogger("tallyboard.faces.summary_collector")


class CollectorSteps(CollectorState):
    """A collector's per-step collection."""

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


def _only_tensor(plugin: str) -> bool:
    return plugin == "tensor"


def _not_tensor(plugin: str) -> bool:
    return plugin != "tensor"
