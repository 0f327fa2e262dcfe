"""``TensorBoard``: Keras 3's TensorBoard callback, written through tallyboard without TensorFlow."""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import keras
import numpy as np
from tallyboard.values import check_int


def _update_freq(value: Any) -> int | None:
    """None for ``"epoch"``, else the batch interval (``"batch"`` is 1)."""
    if value == "epoch":
        return None
    if value == "batch":
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"update_freq must be 'epoch', 'batch' or an int, got {value!r}")
    if value < 1:
        raise ValueError(f"update_freq must be at least 1, got {value}")
    return value


class TensorBoard(keras.callbacks.Callback):
    """Write TensorBoard logs of ``model.fit`` on any Keras backend (torch, JAX, TensorFlow).

    Keras' own callback needs TensorFlow even on the torch and JAX backends; this one writes
    the same runs through tallyboard's ``SummaryWriter``: ``<log_dir>/train`` and
    ``<log_dir>/validation`` with ``epoch_<metric>`` per epoch (``epoch_learning_rate`` too),
    ``batch_<metric>`` every ``update_freq`` batches when it is ``"batch"`` or an int,
    ``evaluation_<metric>_vs_iterations`` after each validation, with ``write_graph`` the
    model's config (tag ``keras``) that TensorBoard's GRAPHS tab draws, weight histograms
    (``<weight path>/histogram``) every ``histogram_freq`` epochs and, with ``write_images``,
    1-D and 2-D weights as images. ``write_steps_per_second`` logs ``*_steps_per_second``.
    ``sinks`` (keyword only) chooses the writers' sinks, e.g. ``["tfevents", "mlflow"]``.
    Writers are created on first use and closed at the end of training.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] = "logs",
        histogram_freq: int = 0,
        write_graph: bool = True,
        write_images: bool = False,
        write_steps_per_second: bool = False,
        update_freq: str | int = "epoch",
        *,
        sinks: list[str] | None = None,
        flush_secs: float = 120.0,
    ) -> None:
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir must be a str or os.PathLike, got {type(log_dir).__name__}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = check_int(histogram_freq, "histogram_freq", minimum=0)
        self.write_graph = bool(write_graph)
        self.write_images = bool(write_images)
        self.write_steps_per_second = bool(write_steps_per_second)
        self.update_freq = "epoch" if update_freq == "epoch" else update_freq
        self._batch_every = _update_freq(update_freq)
        self.sinks = sinks
        self.flush_secs = flush_secs
        self._writers: dict[str, Any] = {}
        self._train_batch = 0
        self._batch_start = 0.0
        self._epoch_start = 0.0
        self._epoch_first_iteration = 0
        if self.sinks is not None:  # fail here, not at the first epoch
            from tallyboard.plugin.registry import get_registry
            from tallyboard.plugin.sinks import parse_sinks

            parse_sinks(get_registry(), self.sinks)

    def _writer(self, run: str) -> Any:
        writer = self._writers.get(run)
        if writer is None:
            from tallyboard import SummaryWriter

            writer = self._writers[run] = SummaryWriter(
                os.path.join(self.log_dir, run), flush_secs=self.flush_secs, sinks=self.sinks
            )
        return writer

    def _close_writers(self) -> None:
        writers, self._writers = list(self._writers.values()), {}
        for writer in writers:
            writer.close()

    def _iterations(self) -> int:
        optimizer = getattr(self.model, "optimizer", None)
        iterations = getattr(optimizer, "iterations", None)
        if iterations is None:
            return self._train_batch
        return int(keras.ops.convert_to_numpy(iterations))

    def _learning_rates(self) -> dict[str, float]:
        optimizer: Any = getattr(self.model, "optimizer", None)
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # LossScaleOptimizer
        if hasattr(optimizer, "optimizers"):
            return {
                f"learning_rate_{opt.name}": float(keras.ops.convert_to_numpy(opt.learning_rate))
                for opt in optimizer.optimizers
            }
        if isinstance(optimizer, keras.optimizers.Optimizer):
            return {"learning_rate": float(keras.ops.convert_to_numpy(optimizer.learning_rate))}
        return {}

    # -- Keras' hooks ------------------------------------------------------------------------

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._train_batch = 0
        if self.write_graph and type(self.model).__name__ in ("Functional", "Sequential"):
            try:
                config = self.model.to_json()
            except Exception as exc:  # as Keras: a model that cannot serialize trains on
                warnings.warn(
                    f"the model's config could not be serialized ({exc!r}); no graph is written",
                    RuntimeWarning,
                    stacklevel=2,
                )
            else:
                from tallyboard_graph import GRAPH_TAG

                from .model_graph import layer_graph

                writer = self._writer("train")
                writer.add_keras_model("keras", config, 0)
                # a run graph of the layers too: TensorBoard's GRAPHS tab opens a run on its op
                # graph, which a model config alone lacks ("Malformed GraphDef")
                writer.emit("graph", GRAPH_TAG, layer_graph(config))

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._close_writers()

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self.write_steps_per_second:
            self._epoch_first_iteration = self._iterations()
            self._epoch_start = time.perf_counter()

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._train_batch += 1
        if self.write_steps_per_second:
            self._batch_start = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        every = self._batch_every
        if every is None or self._train_batch % every:
            return
        writer, step = self._writer("train"), self._train_batch
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._batch_start
            if elapsed > 0:
                writer.add_scalar("batch_steps_per_second", 1.0 / elapsed, step)
        for name, value in (logs or {}).items():
            writer.add_scalar(f"batch_{name}", value, step)

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if not logs or getattr(self.model, "optimizer", None) is None:
            return
        writer, step = self._writer("validation"), self._iterations()
        for name, value in logs.items():
            writer.add_scalar(f"evaluation_{name}_vs_iterations", value, step)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        train.update(self._learning_rates())
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._epoch_start
            if elapsed > 0:
                train["steps_per_second"] = (
                    self._iterations() - self._epoch_first_iteration
                ) / elapsed
        if train:
            writer = self._writer("train")
            for name, value in train.items():
                writer.add_scalar(f"epoch_{name}", value, epoch)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val:
            writer = self._writer("validation")
            for name, value in val.items():
                writer.add_scalar(f"epoch_{name}", value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _log_weights(self, epoch: int) -> None:
        writer = self._writer("train")
        for layer in self.model.layers:
            for weight in layer.weights:
                name = weight.path.replace(":", "_")
                values = np.asarray(keras.ops.convert_to_numpy(weight))
                writer.add_histogram_raw(f"{name}/histogram", *tf_histogram(values), epoch)
                if self.write_images:
                    images = weight_images(values)
                    if images is not None:
                        writer.add_images(f"{name}/image", images, epoch, dataformats="NHWC")
        writer.flush()


#: TensorFlow's (and so Keras') number of histogram buckets.
BUCKETS = 30


def tf_histogram(values: np.ndarray, buckets: int = BUCKETS) -> tuple[Any, ...]:
    """``add_histogram_raw`` arguments for TensorFlow's histogram of ``values``: ``buckets``
    equal-width buckets from the minimum to the maximum, a value on an inner edge counted in
    the bucket to its right and the maximum in the last; all values equal: every bucket is
    ``[v, v]`` and the last holds them all; no values: all zeros. TensorBoard shows these
    exactly as the ``[buckets, 3]`` tensor Keras' callback writes."""
    data = np.asarray(values, dtype=np.float64).reshape(-1)
    counts = np.zeros(buckets)
    if data.size == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, np.zeros(buckets), counts
    low, high = float(data.min()), float(data.max())
    if high == low:
        counts[-1] = data.size
        edges = np.full(buckets + 1, low)
    else:
        width = (high - low) / buckets
        index = np.minimum(np.floor((data - low) / width).astype(np.int64), buckets - 1)
        counts = np.bincount(index, minlength=buckets).astype(np.float64)
        edges = np.linspace(low, high, buckets + 1)
        edges[-1] = high
    total = float(data.sum())
    return low, high, float(data.size), total, float(data.dot(data)), edges[1:], counts


def weight_images(values: np.ndarray) -> np.ndarray | None:
    """A weight as Keras' callback draws it (NHWC), or None where Keras draws none: squeezed,
    a vector (a bias) is one column, a matrix is wider than tall, a 3-D conv kernel is one
    image per output channel (the first three, as ``max_outputs``); a scalar (a bias of shape
    ``(1,)``) and anything else gets no image."""
    w = np.squeeze(values)
    if w.ndim == 1:
        return w.reshape(1, w.shape[0], 1, 1)
    if w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        return w.reshape(1, w.shape[0], w.shape[1], 1)
    if w.ndim == 3:
        if keras.backend.image_data_format() == "channels_last":
            w = np.transpose(w, (2, 0, 1))
        return w.reshape(w.shape[0], w.shape[1], w.shape[2], 1)[:3]
    return None
