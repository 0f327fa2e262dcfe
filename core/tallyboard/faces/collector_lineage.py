"""The lineage a :class:`~tallyboard.faces.summary_collector.SummaryCollector` writes: the
train and eval lineage, the custom lineage and the dataset pipeline's graph."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from tallyboard.faces import mindspore_values, summary_record
from tallyboard.faces.collector_mindspore import mindspore
from tallyboard.faces.collector_options import CollectorState

logger = logging.getLogger("tallyboard.faces.summary_collector")


class CollectorLineage(CollectorState):
    """A collector's lineage and dataset graph."""

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


def _message(name: str) -> Any:
    """A new lineage message of tallyboard's class ``name`` (a plugin provides the classes)."""
    return getattr(summary_record, name)()


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
