"""CLU's ``metric_writers`` (CLU 0.0.12): ``MetricWriter`` and ``create_default_writer``,
writing TensorBoard files through tallyboard, without TensorFlow, torch or CLU.

Switch with one line: ``from tallyboard_jax import metric_writers`` in place of
``from clu import metric_writers``. Where CLU's own ``clu.metric_writers`` has been imported
(it needs TensorFlow), a tallyboard writer is an instance of its ``MetricWriter`` too.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from tallyboard import SummaryWriter
from tallyboard.values import (
    check_int,
    check_step,
    check_text,
    defer_floats,
    on_device,
    to_array,
    to_float,
)

from . import deferred

__all__ = ["MetricWriter", "create_default_writer", "write_values"]

_log = logging.getLogger("tallyboard_jax.metric_writers")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class MetricWriter:
    """CLU's ``MetricWriter`` over a tallyboard :class:`~tallyboard.SummaryWriter`.

    Every ``write_*`` method takes CLU's arguments and returns at once: values are checked in
    the call, jax arrays are copied off the device on the writer's side (the call never waits
    for the step that computes them), and a background thread writes the event file that
    TensorBoard reads. Each method also logs a line as CLU's ``LoggingWriter`` does when
    ``log=True`` (device values are logged once the writer has read them).

    Args:
        logdir: The run's directory (a path or fsspec URL); ``None`` writes no file (only logs).
        collection: Named in each log line, as CLU's ``LoggingWriter`` names it.
        log: Log every value at INFO level to the ``tallyboard_jax.metric_writers`` logger.
            Default ``False``.
        asynchronous: CLU's meaning. ``True`` (default): a jax array still being computed is
            read on the writer's side, so the call never waits for the device (a scalar's log
            line comes once it is read). ``False``: each call reads its device values itself,
            waiting for the step that computes them, and logs them in the call, as CLU's
            synchronous writer (``create_default_writer(asynchronous=False)``) does. Writing
            the file is left to tallyboard's writer thread either way, as TensorFlow's writer
            under CLU's buffers it until ``flush()``.
        **writer_args: Passed to :class:`tallyboard.SummaryWriter` (``sinks=``, ``ranks=``,
            ``reduce=``, ``flush_secs=``, ...).
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str] | None,
        *,
        collection: str | None = None,
        log: bool = False,
        asynchronous: bool = True,
        **writer_args: Any,
    ) -> None:
        if not isinstance(asynchronous, bool):
            raise TypeError(f"asynchronous must be a bool, got {type(asynchronous).__name__}")
        _register_with_clu()
        self._wait = not asynchronous
        self._writer = None if logdir is None else SummaryWriter(logdir, **writer_args)
        self._collection = f" collection={collection}" if collection else ""
        self._log = log

    @property
    def writer(self) -> SummaryWriter | None:
        """The tallyboard writer underneath (``None`` when no file is written)."""
        return self._writer

    def _host(self, value: Any) -> Any:
        """``value`` read now when this writer is synchronous and it is a device value still
        being computed (waiting for it); else as it is."""
        if self._wait and on_device(value):  # a jax array, a CUDA tensor: waited for here
            return to_array(value, "value", allow_empty=True)
        return value

    def _info(self, step: int | None, text: str, *args: Any) -> None:
        if self._log:
            _log.info("[%s]%s " + text, step, self._collection, *args)

    def write_summaries(
        self,
        step: int,
        values: Mapping[str, Any],
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Save arbitrary tensors: as tensor summaries, with the ``SummaryMetadata`` (a proto or
        its bytes) of ``metadata[key]`` when given (that path needs the ``tensorboard``
        package, and reads the value in the call)."""
        step = _step(step)
        items = [(k, self._host(v)) for k, v in _mapping(values, "values")]
        self._info(step, "Got raw tensors: %s.", {k: np.shape(v) for k, v in items})
        if self._writer is None:
            return
        for key, value in items:
            md = None if metadata is None else metadata.get(key)
            if md is None:
                deferred.call(self._writer, "add_tensor", key, value, step)
            else:
                self._writer.add_summary(_summary(key, value, md), step)

    def write_scalars(self, step: int, scalars: Mapping[str, Any]) -> None:
        """Write one number per metric for ``step``: a point of each metric's line in the
        SCALARS tab. A jax array is read on the writer's side: the call never waits for the
        step that computes it."""
        if type(step) is not int or not _INT64_MIN <= step <= _INT64_MAX:
            step = _step(step)
        # Loops, not comprehensions, and an error's argument name made only for the error:
        # right after a step is dispatched every line of the call costs (docs/jax.md, Measured)
        items = scalars.items() if type(scalars) is dict else _mapping(scalars, "scalars")
        if self._wait:
            items = [(k, self._host(v)) for k, v in items]
        log = self._log
        devices = []
        for key, value in items:
            if type(key) is not str:
                _mapping(scalars, "scalars")  # raises, naming the key
            if on_device(value):
                devices.append((value, ("scalars", key), self._logged(step, key) if log else None))
        if devices:  # one call for all of them
            emit = (self._writer or _Nowhere()).emit_deferred
            for (_, (_, key), _), pending in zip(devices, defer_floats(devices)):
                emit("scalar", key, pending, step, None)
            if len(devices) == len(items):
                return
        writer = self._writer
        for key, value in items:
            if on_device(value):
                continue
            if type(value) is not float:  # a number, a NumPy array
                value = to_float(value, f"scalars[{key!r}]")
            if log:
                self._info(step, "%s", _shown(key, value))
            if writer is not None:
                writer.add_scalar(key, value, step)

    def _logged(self, step: int | None, key: str) -> Any:
        """``wrap`` for a device scalar: logs it once read, returns it as is."""

        def wrap(number: float) -> float:
            self._info(step, "%s", _shown(key, number))
            return number

        return wrap

    def write_images(self, step: int, images: Mapping[str, Any]) -> None:
        """Write images of shape ``[N, H, W, C]`` or ``[H, W, C]`` (C 1, 3 or 4; floats in
        [0, 1], integers 0..255). One image takes the key as its tag; N images take
        ``<key>/image/<i>``, as TensorFlow 1 named them."""
        self._write_samples(
            step, images, "images", ("[N, H, W, C]", "[H, W, C]"), "image", "add_image",
            None, dataformats="HWC",
        )  # fmt: skip

    def write_videos(self, step: int, videos: Mapping[str, Any]) -> None:
        """Write videos of shape ``[N, T, H, W, C]`` or ``[T, H, W, C]`` as animated GIFs (CLU's
        own writers only log them); N videos take ``<key>/video/<i>``."""
        self._write_samples(
            step, videos, "videos", ("[N, T, H, W, C]", "[T, H, W, C]"), "video", "add_video",
            _frames,
        )  # fmt: skip

    def write_audios(self, step: int, audios: Mapping[str, Any], *, sample_rate: int) -> None:
        """Write clips of shape ``[N, T, C]`` (amplitudes in [-1, 1], C 1 or 2) as 16-bit WAV;
        N clips take ``<key>/audio/<i>``."""
        rate = check_int(sample_rate, "sample_rate", minimum=1)
        self._write_samples(
            step, audios, "audios", ("[N, T, C]",), "audio", "add_audio", None, sample_rate=rate
        )

    def _write_samples(
        self,
        step: int,
        values: Mapping[str, Any],
        arg: str,
        shapes: tuple[str, ...],
        kind: str,
        method: str,
        pick: Any,
        **kwargs: Any,
    ) -> None:
        """Each value is a batch (``shapes[0]``) or one sample (``shapes[1]``): one tag per
        sample, ``<key>/<kind>/<i>`` when a batch holds several; sample ``i`` is
        ``pick(batch, i)`` (``batch[i]`` by default), taken on the host."""
        step = _step(step)
        items = _mapping(values, arg)
        self._info(step, f"Got {arg}: %s.", {k: np.shape(v) for k, v in items})
        batched = shapes[0].count(",") + 1
        for key, value in items:
            value = _array(self._host(value))
            shape = np.shape(value)
            if len(shape) not in (batched, batched - len(shapes) + 1):
                raise ValueError(
                    f"{arg}[{key!r}] must have shape {' or '.join(shapes)}, got {shape}"
                )
            if self._writer is None:
                continue
            count = shape[0] if len(shape) == batched else 1
            for i, tag in enumerate(deferred.samples(key, count, kind)):
                one = pick is None and len(shape) < batched  # a single image: as it is
                arguments = None if one else deferred.sample(i, step, pick)
                deferred.call(self._writer, method, tag, value, step, arguments, **kwargs)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Write text snippets (Markdown, as TensorBoard's TEXT tab renders it)."""
        step = _step(step)
        items = [(k, check_text(v, f"texts[{k!r}]")) for k, v in _mapping(texts, "texts")]
        self._info(step, "Got texts: %s.", dict(items))
        if self._writer is not None:
            for key, value in items:
                self._writer.add_text(key, value, step)

    def write_histograms(
        self,
        step: int,
        arrays: Mapping[str, Any],
        num_buckets: Mapping[str, int] | None = None,
    ) -> None:
        """Write the histogram of each array, TensorFlow's: ``num_buckets[key]`` equal-width
        buckets (30 by default) from its least to its greatest value. A pytree (a dict of
        params) gives one histogram per leaf, tagged ``<key>/<path>/<to>/<leaf>``."""
        step = _step(step)
        items = _mapping(arrays, "arrays")
        for key, value in items:
            buckets = None if num_buckets is None else num_buckets.get(key)
            for tag, leaf in deferred.leaves(key, value):
                self._info(step, "Histogram for %r", tag)
                if self._writer is not None:
                    deferred.histogram(self._writer, tag, self._host(leaf), step, buckets)

    def write_pointcloud(
        self,
        step: int,
        point_clouds: Mapping[str, Any],
        *,
        point_colors: Mapping[str, Any] | None = None,
        configs: Mapping[str, Any] | None = None,
    ) -> None:
        """Write point clouds ``[N, 3]`` (or ``[B, N, 3]``), with colours ``[N, 3]`` 0..255,
        to TensorBoard's MESH tab (newer CLU's method; CLU 0.0.12 has none). Read in the
        call."""
        step = _step(step)
        items = _mapping(point_clouds, "point_clouds")
        self._info(step, "Got point clouds: %s.", {k: np.shape(v) for k, v in items})
        if self._writer is None:
            return
        for key, value in items:
            points = np.asarray(value)
            colors = None if point_colors is None else point_colors.get(key)
            if points.ndim == 2:
                points = points[None]
                colors = None if colors is None else np.asarray(colors)[None]
            config = None if configs is None else dict(configs)
            self._writer.add_mesh(key, points, colors=colors, global_step=step, config_dict=config)

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Write hyper-parameters into this run (TensorBoard's HPARAMS tab), flattened as CLU
        flattens them: nested keys joined with ``.``, lists by index, ``None`` as ``""``."""
        flat = dict(_flatten(_mapping_dict(hparams, "hparams")))
        self._info(None, "%s", flat)
        if self._writer is not None:
            self._writer.add_hparams(flat, {}, own_run=True)

    def flush(self) -> None:
        """Write out everything accepted so far (waits for device values still computing)."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the files."""
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> MetricWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def create_default_writer(
    logdir: str | os.PathLike[str] | None = None,
    *,
    just_logging: bool = False,
    asynchronous: bool = True,
    collection: str | None = None,
) -> MetricWriter:
    """CLU's ``create_default_writer``: a writer that logs every value and writes TensorBoard
    files into ``logdir`` (``logdir/collection`` with a ``collection``).

    ``just_logging=True``, ``logdir=None``, or a process whose ``jax.process_index()`` is not 0
    (in a multi-host job, only the first host writes files, as CLU's callers arrange with
    ``just_logging=jax.process_index() > 0``) logs only. ``asynchronous=False`` makes each
    call read its device values itself and log them in the call, as CLU's synchronous writer
    does (see :class:`MetricWriter`); the file is written by tallyboard's writer thread either
    way.
    """
    if not isinstance(asynchronous, bool):
        raise TypeError(f"asynchronous must be a bool, got {type(asynchronous).__name__}")
    if collection is not None and not isinstance(collection, str):
        raise TypeError(f"collection must be a str or None, got {type(collection).__name__}")
    jax = sys.modules.get("jax")
    if just_logging or logdir is None or (jax is not None and jax.process_index() != 0):
        return MetricWriter(None, collection=collection, log=True, asynchronous=asynchronous)
    path = os.path.join(os.fspath(logdir), collection) if collection else logdir
    return MetricWriter(path, collection=collection, log=True, asynchronous=asynchronous)


def write_values(writer: MetricWriter, step: int, metrics: Mapping[str, Any]) -> None:
    """CLU's ``write_values`` for plain values: numbers and one-element arrays go to
    :meth:`MetricWriter.write_scalars`, other arrays to ``write_histograms``."""
    scalars: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    for key, value in _mapping(metrics, "metrics"):
        size = getattr(value, "size", 1)
        (scalars if size <= 1 else arrays)[key] = value
    if scalars:
        writer.write_scalars(step, scalars)
    if arrays:
        writer.write_histograms(step, arrays)


class _Nowhere:
    """The writer of a MetricWriter that writes no file: device scalars are still read (and
    logged) on a background thread instead of the caller's."""

    _pool: Any = None

    def emit_deferred(self, kind: str, tag: Any, pending: Any, *args: Any) -> None:
        if _Nowhere._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _Nowhere._pool = ThreadPoolExecutor(1, thread_name_prefix="tallyboard-jax-log")
        _Nowhere._pool.submit(_quietly, pending)


def _quietly(pending: Any) -> None:
    try:
        pending.result()
    except Exception as exc:
        _log.warning("a device value could not be read: %s", exc)


def _frames(videos: np.ndarray, i: int) -> np.ndarray:
    """Video ``i`` of ``[N, T, H, W, C]`` (or the one ``[T, H, W, C]``) as torch's
    ``(1, T, C, H, W)``."""
    video = videos[i] if videos.ndim == 5 else videos
    return video.transpose(0, 3, 1, 2)[None]


def _array(value: Any) -> Any:
    """A device value as it is (read later); anything else as a NumPy array now."""
    return value if on_device(value) else np.asarray(value)


def _step(step: Any) -> int:
    value = check_step(step, "step")
    if value is None:
        raise TypeError("step must be an int, got None")
    return value


def _mapping(values: Any, arg: str) -> list[tuple[str, Any]]:
    """The ``(key, value)`` pairs of a Mapping whose keys are str, else TypeError naming ``arg``."""
    if type(values) is not dict and not isinstance(values, Mapping):
        raise TypeError(f"{arg} must be a mapping from name to value, got {type(values).__name__}")
    for key in values:
        if type(key) is not str and not isinstance(key, str):
            raise TypeError(f"{arg} keys must be str, got {type(key).__name__}: {key!r}")
    return list(values.items())


def _mapping_dict(values: Any, arg: str) -> Mapping[str, Any]:
    if not (isinstance(values, Mapping) or hasattr(values, "items")):
        raise TypeError(f"{arg} must be a mapping, got {type(values).__name__}")
    return values  # type: ignore[no-any-return]


def _flatten(d: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """CLU's ``flatten_dict`` for hparams: ``a.b`` keys, lists by index, ``None`` as ``""``."""
    out: list[tuple[str, Any]] = []
    for key, value in d.items():
        if isinstance(value, Mapping) or hasattr(value, "items"):
            out += _flatten(value, (*prefix, str(key)))
        elif isinstance(value, (list, tuple)):
            out += _flatten({str(i): v for i, v in enumerate(value)}, (*prefix, str(key)))
        else:
            out.append((".".join((*prefix, str(key))), "" if value is None else _hparam(value)))
    return out


def _hparam(value: Any) -> Any:
    """A hyper-parameter TensorBoard can hold: numbers, str and bool as they are, NumPy and jax
    scalars as Python ones, anything else as its str."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) or getattr(value, "shape", None) == ():
        return np.asarray(value).item()
    return str(value)


def _shown(key: str, value: Any) -> str:
    """``key=value`` as CLU's LoggingWriter shows it (floats with 6 significant digits)."""
    return f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}"


def _summary(tag: str, value: Any, metadata: Any) -> Any:
    """A TensorBoard ``Summary`` of one tensor with the given ``SummaryMetadata``."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.util.tensor_util import make_tensor_proto

    if isinstance(metadata, bytes):
        metadata = SummaryMetadata.FromString(metadata)
    tensor = make_tensor_proto(np.asarray(value))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=metadata)])


_registered = False


def _register_with_clu() -> None:
    """Make tallyboard's writers instances of CLU's ``MetricWriter`` where CLU's interface is
    imported (it needs TensorFlow); nothing is imported here."""
    global _registered
    if not _registered:
        interface = sys.modules.get("clu.metric_writers.interface")
        if interface is not None:
            interface.MetricWriter.register(MetricWriter)
            _registered = True
