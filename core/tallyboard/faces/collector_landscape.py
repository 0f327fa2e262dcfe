"""What a :class:`~tallyboard.faces.summary_collector.SummaryCollector` saves for MindSpore's
``SummaryLandscape``: checkpoints of the model's parameters and their metadata."""

from __future__ import annotations

import json
import logging
import os
import platform
import stat
from collections.abc import Callable
from typing import Any

from tallyboard.faces.collector_mindspore import mindspore
from tallyboard.faces.collector_options import CollectorState

logger = logging.getLogger("tallyboard.faces.summary_collector")


class CollectorLandscape(CollectorState):
    """A collector's loss-landscape checkpoints."""

    @staticmethod
    def _get_loss_fn(cb_params: Any) -> Any:
        if cb_params.loss_fn is not None:
            return cb_params.loss_fn
        network = cb_params.train_network if cb_params.mode == "train" else cb_params.eval_network
        for _, cell in network.cells_and_names():
            if isinstance(cell, mindspore.nn.LossBase):
                return cell
        return None

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
