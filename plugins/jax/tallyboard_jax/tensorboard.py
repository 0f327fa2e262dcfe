"""Flax's ``flax.metrics.tensorboard.SummaryWriter``, writing through tallyboard without
TensorFlow.

Switch with one line: ``from tallyboard_jax.tensorboard import SummaryWriter`` in place of
``from flax.metrics.tensorboard import SummaryWriter``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from tallyboard import SummaryWriter as _Writer
from tallyboard.values import check_int, check_tag, on_device, to_float

from . import deferred
from .metric_writers import _hparam, _summary

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Flax's ``SummaryWriter``: the same constructor and methods, the same files for
    TensorBoard (scalars as float32 tensors, TensorFlow's histograms), no TensorFlow.

    A jax array is never waited for: one still being computed is read on the writer's side.

    Args:
        log_dir: The run's directory (created if missing; a path or fsspec URL).
        auto_flush: Flax flushes after every value: here each value is handed to the writer
            thread at once (the call does not wait for it to be written). ``False`` lets
            values gather for up to ``flush_secs`` (120 s) as tallyboard's writer does.
    """

    def __init__(self, log_dir: str | os.PathLike[str], auto_flush: bool = True) -> None:
        if not isinstance(auto_flush, bool):
            raise TypeError(f"auto_flush must be a bool, got {type(auto_flush).__name__}")
        self._writer = _Writer(os.fspath(log_dir), max_queue=1 if auto_flush else 10)
        self._closed = False

    def close(self) -> None:
        """Flush and close the file; later calls are errors, as in Flax."""
        if not self._closed:
            self._writer.close()
            self._closed = True

    def flush(self) -> None:
        """Write out everything accepted (waits for device values still computing)."""
        self._writer.flush()

    def scalar(self, tag: str, value: Any, step: int) -> None:
        """Save one number (a float32 tensor, as TensorFlow's ``tf.summary.scalar``)."""
        if on_device(value):  # read on the writer's side by the scalar kind itself
            try:
                self._writer.add_scalar(tag, value, step, new_style=True)
            except (TypeError, ValueError) as exc:
                message = str(exc)
                if not message.startswith("scalar_value "):
                    raise
                # the argument named as Flax names it
                raise type(exc)("value " + message.removeprefix("scalar_value ")) from None
        else:
            self._writer.add_scalar(tag, to_float(value, "value"), step, new_style=True)

    def image(self, tag: str, image: Any, step: int, max_outputs: int = 3) -> None:
        """Save images: ``[H, W]``, ``[H, W, 1]``, ``[H, W, 3]``, ``[K, H, W]``, ``[K, H, W, 1]``
        or ``[K, H, W, 3]`` (a 3-D array whose last axis is 1 or 3 is one image); uint8, or
        floats in [0, 1]. Gray is saved as RGB, as Flax does. At most ``max_outputs`` of K are
        saved: one image under ``tag``, more under ``<tag>/image/<i>``."""
        check_int(max_outputs, "max_outputs", minimum=1)
        image = image if on_device(image) else np.array(image)
        shape = np.shape(image)
        if len(shape) not in (2, 3) and (len(shape) != 4 or shape[-1] not in (1, 3)):
            raise ValueError(
                f"image must have shape [H, W], [H, W, C] or [K, H, W, C] with C 1 or 3, got {shape}"
            )
        single = len(shape) == 2 or (len(shape) == 3 and shape[-1] in (1, 3))
        count = 1 if single else min(shape[0], max_outputs)
        for i, name in enumerate(deferred.samples(tag, count, "image")):
            deferred.call(
                self._writer, "add_image", name, image, step,
                deferred.sample(i, step, _rgb), dataformats="HWC",
            )  # fmt: skip

    def audio(
        self, tag: str, audiodata: Any, step: int, sample_rate: int = 44100, max_outputs: int = 3
    ) -> None:
        """Save clips ``[N, frames, channels]`` as 16-bit WAV, amplitudes clipped to [-1, 1]
        as Flax clips them; at most ``max_outputs``: one under ``tag``, more under
        ``<tag>/audio/<i>``."""
        check_int(max_outputs, "max_outputs", minimum=1)
        data = audiodata if on_device(audiodata) else np.array(audiodata)
        if len(np.shape(data)) != 3:
            raise ValueError(
                f"audiodata must have shape [N, frames, channels], got {np.shape(data)}"
            )
        count = min(int(np.shape(data)[0]), max_outputs)
        for i, name in enumerate(deferred.samples(tag, count, "audio")):
            deferred.call(
                self._writer, "add_audio", name, data, step,
                deferred.sample(i, step, _clipped, sample_rate),
            )  # fmt: skip

    def histogram(self, tag: str, values: Any, step: int, bins: int | None = None) -> None:
        """Save the histogram of ``values`` (flattened): TensorFlow's, ``bins`` equal-width
        buckets (30 by default) from the least to the greatest value."""
        deferred.histogram(self._writer, tag, values, step, bins)

    def text(self, tag: str, textdata: str | bytes, step: int) -> None:
        """Save text (Markdown, rendered by TensorBoard's TEXT tab)."""
        if not isinstance(textdata, (str, bytes)):
            raise ValueError("`textdata` should be of the type `str` or `bytes`.")
        if isinstance(textdata, bytes):
            textdata = textdata.decode("utf-8")
        self._writer.add_text(check_tag(tag), textdata, step)

    def write(self, tag: str, tensor: Any, step: int, metadata: Any = None) -> None:
        """Save an arbitrary tensor, with a ``SummaryMetadata`` (proto or bytes) when given
        (that path needs the ``tensorboard`` package and reads the value in the call)."""
        if metadata is None:
            deferred.call(self._writer, "add_tensor", tag, tensor, step)
        else:
            self._writer.add_summary(_summary(tag, tensor, metadata), step)

    def hparams(self, hparams: Mapping[str, Any]) -> None:
        """Save hyper-parameters into this run, flattened as Flax flattens them (nested keys
        joined with ``.``; values other than numbers, str and bool as their str)."""
        self._writer.add_hparams(dict(_flatten(hparams)), {}, own_run=True)


def _clipped(clips: np.ndarray, i: int) -> np.ndarray:
    """Clip ``i`` of ``[N, frames, channels]`` with its amplitudes clipped to [-1, 1]."""
    return np.clip(clips[i].astype(np.float32), -1, 1)


def _rgb(image: np.ndarray, i: int) -> np.ndarray:
    """Image ``i`` of what :meth:`SummaryWriter.image` takes, as ``[H, W, 3]`` (gray repeated,
    as Flax does)."""
    if image.ndim == 2:
        image = image[None, :, :, None]
    elif image.ndim == 3:
        image = image[None] if image.shape[-1] in (1, 3) else image[..., None]
    one = image[i]
    return np.repeat(one, 3, axis=-1) if one.shape[-1] == 1 else one


def _flatten(d: Mapping[str, Any], parent: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in d.items():
        name = f"{parent}.{key}" if parent else str(key)
        if isinstance(value, dict):
            out += _flatten(value, name)
        else:
            out.append((name, _hparam(value)))
    return out
