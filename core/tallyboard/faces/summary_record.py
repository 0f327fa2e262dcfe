"""The ``mindspore.SummaryRecord`` face.

Same constructor, methods, validation and error types as MindSpore's ``SummaryRecord``. Values
are pooled by ``add_value`` and handed, once per ``record()``, to the ``mindspore`` sink (a
plugin), which writes MindSpore's summary and lineage files. The face knows no file format.

Differences from MindSpore (see ``docs/mindspore.md``): values may be NumPy arrays, torch
tensors and other array-likes as well as MindSpore Tensors; ``tensorboard=True`` also writes
TensorBoard event files; write errors reach the caller (``raise_exception=True``) at the next
``record``/``flush``/``close``; an existing file is never truncated.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tallyboard import paths
from tallyboard.faces import mindspore_operators, ops
from tallyboard.faces.hints import add_value_order
from tallyboard.faces.mindspore_values import is_tensor_type as _is_ms_tensor_type
from tallyboard.faces.mindspore_values import scalar as _ms_scalar
from tallyboard.faces.snapshots import Snapshots
from tallyboard.plugin.registry import get_registry
from tallyboard.plugin.sinks import (
    Sink,
    SinkEntry,
    SinkFastPath,
    SinkOptions,
    parse_sink,
    parse_sinks,
)
from tallyboard.ranks import discovery as ranks
from tallyboard.records import lifecycle
from tallyboard.values import check_utf8
from tallyboard.warn import cannot_encode

__all__ = ["SummaryRecord", "Recorded", "PLUGINS"]

logger = logging.getLogger("tallyboard.faces.summary_record")
_now = time.time
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
#: The plugin name ``plugin_filter`` is given for a pooled kind, where the two differ.
_PLUGIN_OF_KIND = {"anf_graph": "graph"}
_NAME_RE = re.compile(r"^\w+[0-9a-zA-Z\_\.]*$", re.ASCII)
_OP_KEY_RE = re.compile(r"(.+)\[:(.+)\]")
_EXPORT_OPTIONS = {"tensor_format": {"npy", None}}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ms_pending = mindspore_operators.pending
_ndarray = np.ndarray
#: Scalar values pooled as a Python float (what the encoders store: float32 of ``.item()``).
_FLOAT_TYPES = frozenset({np.float16, np.float32, np.float64})

_count = 0
_count_lock = threading.Lock()
_live: weakref.WeakSet[SummaryRecord] = weakref.WeakSet()


class Recorded:
    """What one ``record()`` hands a sink: ``items`` are ``(kind, tag, payload)`` in order."""

    __slots__ = ("step", "wall_time", "items")

    def __init__(self, step: int, wall_time: float, items: list[tuple[str, str, Any]]) -> None:
        self.step = step
        self.wall_time = wall_time
        self.items = items

    def __repr__(self) -> str:
        return f"Recorded(step={self.step}, items={[(k, t) for k, t, _ in self.items]})"


def _type_error(arg: str, value: Any, expected: str) -> TypeError:
    return TypeError(
        f"The type of '{arg}' should be {expected}, but got type '{type(value).__name__}'."
    )


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


def _make_dir(log_dir: Any, arg: str = "log_dir") -> str:
    """The real path of directory ``log_dir`` (the argument named ``arg``), created (0o700) if
    missing, checked as MindSpore checks it."""
    if isinstance(log_dir, os.PathLike):
        log_dir = os.fspath(log_dir)
    if not isinstance(log_dir, str):
        raise TypeError(f"The {arg} is invalid, the type should be string.")
    if not log_dir.strip():
        raise ValueError(f"The {arg} is invalid, it should be non-blank.")
    path = os.path.realpath(log_dir)
    if len(path) > 1024:
        raise ValueError(f"The {arg} length is too long, it should be limited in 1024.")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise NotADirectoryError(
                f"The path({path}) is a file path, it should be a directory path."
            )
        return path
    paths.check_log_dir(path, arg)  # a file on the way to it
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except PermissionError:
        raise TypeError("No write permission on the directory.") from None
    return path


def check_export_options(options: Any) -> dict[str, str | None] | None:
    """``export_options`` checked as MindSpore's ``SummaryRecord`` checks it (types, keys, values)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise _type_error("export_options", options, "one of '['dict', 'NoneType']'")
    for key, value in options.items():
        if not isinstance(key, str):
            raise _type_error("export_option", key, "'str'")
        if value is not None and not isinstance(value, str):
            raise _type_error("export_format", value, "one of '['str', 'NoneType']'")
    unexpected = set(options) - set(_EXPORT_OPTIONS)
    if unexpected:
        raise ValueError(
            f'For "SummaryRecord", the keys {unexpected} of "export_options" are unsupported, '
            f"expect the follow keys: {list(_EXPORT_OPTIONS)}"
        )
    for key, value in options.items():
        if value not in _EXPORT_OPTIONS[key]:
            raise ValueError(
                f'For "SummaryRecord", the export_format {{{value!r}}} of "export_options" are unsupported '
                f"for {key}, expect the follow values: {list(_EXPORT_OPTIONS[key])}"
            )
    return dict(options)


def _device_id() -> dict[str, int]:
    """MindSpore's file-name ``device_id`` is the rank when the job has more than one."""
    info = ranks.current()
    return {"device_id": info.rank} if info.world_size > 1 else {}


def _mindspore() -> Any:
    """The mindspore module if the program already imported it (a Cell implies it did)."""
    return sys.modules.get("mindspore")


def _is_cell(value: Any) -> bool:
    ms = _mindspore()
    if ms is None:
        return False
    try:
        return isinstance(value, ms.nn.Cell)
    except AttributeError:
        return False


class SummaryRecord:
    """Log a training run as MindSpore does: scalars, images, tensors, histograms, lineage.

    What a MindSpore user does most, unchanged but for the import: pool values with
    :meth:`add_value` (or let summary operators in the network produce them) and write them as
    one step with :meth:`record`::

        with SummaryRecord("./summary_dir") as record:
            for step in range(1, 101):
                loss = train_one_step()                # a mindspore.Tensor, NumPy, torch, float
                record.add_value("scalar", "loss", loss)
                record.record(step)                    # also takes the summary operators' values

    ``record()`` in ``'train'`` mode (:meth:`set_mode`) also writes the values of MindSpore's
    summary operators (``mindspore.ops.ScalarSummary``, ``ImageSummary``, ``TensorSummary``,
    ``HistogramSummary``) that ran in the user's Cells since the last record, in PyNative and
    GRAPH_MODE, exactly as MindSpore's record takes them; and those of :mod:`tallyboard.ops`,
    the same operators for code without MindSpore. MindSpore itself is optional and never
    imported by tallyboard.

    The files are MindSpore's: ``<prefix>.out.events.summary.<time>.<rank>.<host><suffix>`` for
    values and graphs and the same name ending ``_lineage`` for lineage, created on the first
    write, read-only after :meth:`close`; MindInsight-era tools and :func:`tallyboard.read` read
    them. ``tensorboard=True`` also writes TensorBoard event files, so ``tensorboard --logdir``
    shows the run live. Values are encoded and written by a thread; only one ``SummaryRecord``
    may be open in a process (MindSpore's rule: the operators' values are process-wide).

    Args:
        log_dir: The directory of the files, a str or path; created (mode 0o700) if missing.
            Blank strings and paths longer than 1024 characters are refused.
        file_prefix: Start of the file names: ASCII letters, digits, ``_`` and ``.``, not
            starting with ``.``. Default ``"events"``.
        file_suffix: End of the summary file's name, same pattern. Default ``"_MS"``.
        num_process: Accepted for MindSpore compatibility and ignored (MindSpore sizes a pool
            of writer processes with it; tallyboard writes from one thread). Default ``32``.
        network: A ``mindspore.nn.Cell`` whose compiled graph is written once, at the first
            :meth:`record` (MindSpore must be installed). Default ``None``: no graph.
        max_file_size: Most bytes each file may hold, an int; the first record that does not
            fit stops that file (later ones are dropped with a warning, as MindSpore drops
            them). A negative value is warned about and means no limit; ``0`` leaves an empty
            file. Default ``None``: no limit.
        raise_exception: ``True`` raises a write error (disk full, permissions) in the caller
            at the next :meth:`record`, :meth:`flush` or :meth:`close`; ``False`` logs it and
            stops that file. Default ``False``.
        export_options: ``{"tensor_format": "npy"}`` also saves each ``tensor`` value as
            ``export_<time>/tensor/<tag>_<step>.npy``. Default ``None``: no export.
        tensorboard: Also write TensorBoard event files into ``log_dir`` (keyword only).
            Default ``False``.
        sinks: Further sinks for the same values, by name (keyword only), e.g. ``["csv"]``;
            each receives every value it can encode. Default ``()``.

    Raises:
        RuntimeError: Another ``SummaryRecord`` is open in this process.
        TypeError: ``log_dir`` not a str or path, or not writable; ``max_file_size`` not an
            int; ``file_prefix``/``file_suffix`` not str; ``raise_exception`` or ``tensorboard``
            not a bool; ``export_options`` or ``sinks`` of the wrong type; ``network`` given
            without MindSpore.
        ValueError: A blank or too long ``log_dir``; a prefix or suffix outside the pattern;
            an unknown export option; an unknown sink.
        NotADirectoryError: ``log_dir`` is a file.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, ops
        >>> with SummaryRecord("runs/ms_face", tensorboard=True) as record:
        ...     for step in range(1, 4):
        ...         record.add_value("scalar", "loss", np.float32(1 / step))
        ...         ops.HistogramSummary()("weights", np.random.randn(100))  # operator style
        ...         ok = record.record(step)
        >>> ok
        True
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        file_prefix: str = "events",
        file_suffix: str = "_MS",
        num_process: int = 32,
        network: Any = None,
        max_file_size: int | None = None,
        raise_exception: bool = False,
        export_options: dict[str, str | None] | None = None,
        *,
        tensorboard: bool = False,
        sinks: Sequence[SinkEntry] = (),
    ) -> None:
        global _count
        with _count_lock:
            if _count > 0:
                raise RuntimeError(
                    "For 'SummaryRecord', only one instance is supported in a training process, you are trying "
                    f"to create a new one when the existing instance number is {_count}. Please check your scripts."
                )
            _count += 1
        self._counted = True
        self._closed = True
        self._plain = False  # record() may take its hot path: open, no graph to add, no mirror
        try:
            self._initialize(
                log_dir, file_prefix, file_suffix, num_process, network, max_file_size,
                raise_exception, export_options, tensorboard, sinks,
            )  # fmt: skip
        except BaseException:
            self._release()
            raise
        self._closed = False
        self._update_plain()
        _live.add(self)

    def _initialize(
        self,
        log_dir: Any,
        file_prefix: Any,
        file_suffix: Any,
        num_process: Any,
        network: Any,
        max_file_size: Any,
        raise_exception: Any,
        export_options: Any,
        tensorboard: Any,
        sinks: Any,
    ) -> None:
        self.base_log_dir = log_dir
        path = _make_dir(log_dir)
        if not isinstance(max_file_size, (int, type(None))):
            raise TypeError(
                f"For 'SummaryRecord', the 'max_file_size' should be int type, but got type {type(max_file_size)}"
            )
        if not isinstance(file_prefix, str) or not isinstance(file_suffix, str):
            raise TypeError(
                f"For 'SummaryRecord', `file_prefix` and `file_suffix`  should be str, but got type {type(file_prefix)}"
            )
        for target in (file_prefix, file_suffix):
            if _NAME_RE.match(target) is None:
                raise ValueError(
                    f"The '{target}' is illegal, it must be match regular'{_NAME_RE.pattern}' by flags'{re.ASCII}.'"
                )
        if max_file_size is not None and max_file_size < 0:
            logger.warning(
                "For 'SummaryRecord', the 'max_file_size' should be greater than 0. but got value %s.",
                max_file_size,
            )
            max_file_size = None
        if not isinstance(raise_exception, bool):
            raise _type_error("raise_exception", raise_exception, "'bool'")
        if not isinstance(tensorboard, bool):
            raise _type_error("tensorboard", tensorboard, "'bool'")
        self._export_options = check_export_options(export_options)
        if network is not None and _mindspore() is None:
            raise TypeError(
                "The 'network' argument needs MindSpore (a mindspore.nn.Cell); without MindSpore pass "
                "network=None and add graphs with add_value('graph', name, model_proto_bytes)."
            )
        if network is not None and not _is_cell(network):  # MindSpore would fail at record()
            raise _type_error("network", network, "one of '['Cell', 'NoneType']'")
        self.file_prefix = file_prefix
        self.file_suffix = file_suffix
        self.network = network
        self.max_file_size = max_file_size
        self.raise_exception = raise_exception
        self._num_process = num_process
        self._dir = path
        self._mode = "train"
        self._has_graph = False
        # The pool: one flat list of (kind, name, payload), never replaced. add_value appends
        # (atomic under the GIL); record() copies it and deletes what it copied, so a value
        # added meanwhile by another thread stays for the next record. No lock on the hot path.
        # Duplicate names are looked for when a step holds more than one value.
        self._pool: list[tuple[str, str, Any]] = []
        self._snapshots = Snapshots()  # the arrays add_value copies, their memory reused
        registry = get_registry()
        self._kinds = registry.kinds
        options = SinkOptions(
            log_dir=path,
            max_queue=10,
            flush_secs=2.0,
            extra={
                "file_prefix": file_prefix,
                "file_suffix": file_suffix,
                "max_file_size": max_file_size,
                "raise_exception": raise_exception,
                "export_options": self._export_options,
                "time_second": int(_now()),
                **_device_id(),
            },
        )
        self._sink: Sink = registry.sink(DEFAULT_SINK).open(options)
        # A sink may take a record() directly as write_record(step, wall_time, items), sparing
        # the Recorded wrapper on the hot path; any other sink gets write(Recorded(...)). It may
        # take a step of one value as write_value(step, wall_time, (kind, tag, payload)), and
        # forget its buffers in a forked child with abandon() (see OptionalSink).
        self._fast = SinkFastPath.of(self._sink)
        self._write_record: Callable[[int, float, list[tuple[str, str, Any]]], None] = (
            self._fast.write_record
            or (lambda step, wall_time, items: self._sink.write(Recorded(step, wall_time, items)))
        )
        self._write_value = self._fast.write_value
        # sinks= takes what SummaryWriter(sinks=...) takes, checked here by the same function
        targets = parse_sinks(registry, sinks, allow_empty=True)
        if tensorboard and not any(t.spec.name == "tfevents" and not t.location for t in targets):
            targets.append(parse_sink(registry, "tfevents"))
        self._extra_sinks = [t.entry for t in targets]
        self._mirrored_kinds = {
            kind
            for kind in registry.kinds
            for t in targets
            if (kind, t.spec.name) in registry.encoders or ("*", t.spec.name) in registry.encoders
        }
        # The kinds the mindspore sink holds (those with a mindspore encoder): another kind is
        # not handed to it, only to the sinks above that encode it (see add_value).
        encoders = registry.encoders
        self._held_kinds = (
            set(registry.kinds)
            if ("*", DEFAULT_SINK) in encoders
            else {kind for kind, sink in encoders if sink == DEFAULT_SINK}
        )
        self._foreign = False  # the pool holds a value of a kind the mindspore sink does not
        self._mirror: Any = None
        mindspore_operators.discard_graph_values()  # as MindSpore's constructor does

    # -- properties --------------------------------------------------------------------------

    @property
    def log_dir(self) -> str:
        """The full path of the summary file, as MindSpore's ``log_dir`` is (not the directory).

        The file itself is created on the first write.

        Example:
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_path") as record:
            ...     print(record.log_dir.split(".out.")[1][:15])
            events.summary.
        """
        return str(getattr(self._sink, "path", self._dir))

    @property
    def file_info(self) -> dict[str, str]:
        """``{"file_name": ..., "file_path": ...}`` of the summary file, as in MindSpore.

        Example:
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_info", file_suffix="_x") as record:
            ...     print(record.file_info["file_name"].endswith("_x"))
            True
        """
        return {"file_name": os.path.basename(self.log_dir), "file_path": self.log_dir}

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (then :meth:`record` returns ``False``).

        Example:
            >>> from tallyboard import SummaryRecord
            >>> record = SummaryRecord("runs/ms_closed")
            >>> record.close()
            >>> record.closed
            True
        """
        return self._closed

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self) -> SummaryRecord:
        """Use the record in a ``with`` block, which closes it at the end.

        Returns:
            SummaryRecord: this record.

        Raises:
            ValueError: The record is already closed.

        Example:
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_with") as record:
            ...     record.closed
            False
        """
        if self._closed:
            raise ValueError(
                'For "SummaryRecord", SummaryRecord has been closed, please check if close() method is called'
            )
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the record (:meth:`close`); an exception leaving the block goes on."""
        self.close()

    # -- API ---------------------------------------------------------------------------------

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
            if kind not in self._held_kinds and not self._reachable(kind):
                return
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
            check_utf8(name, "name")
        if self._closed:
            logger.warning(
                "SummaryRecord is closed: the %r value %r is pooled but will never be written",
                plugin,
                name,
            )
        self._pool.append((kind, name, payload))

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

    def _reachable(self, kind: str) -> bool:
        """Whether a value of ``kind``, which the mindspore sink does not hold, reaches another
        sink of this record; if not, the mindspore sink's one warning per kind says so (at the
        caller's ``add_value`` line) and the value is not kept."""
        if kind not in self._mirrored_kinds:
            cannot_encode(DEFAULT_SINK, kind)
            return False
        self._foreign = True
        return True

    def flush(self) -> None:
        """Write everything recorded so far to the files and to disk (fsync), then return.

        The writer thread also writes what is pending every two seconds on its own; call this
        when another program must read the files now. A closed record logs an error, as
        MindSpore's does.

        Raises:
            OSError: With ``raise_exception=True``, a write error.
            RuntimeError: With ``raise_exception=True``, too little free disk space.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_flush") as record:
            ...     record.add_value("scalar", "loss", np.float32(0.5))
            ...     ok = record.record(1)
            ...     record.flush()  # the step is in the file now
        """
        if self._closed:
            logger.error(
                "For 'SummaryRecord', the record writer is closed and can not flush, please check if close() "
                "method is called"
            )
            return
        self._sink.flush()
        if self._mirror is not None:
            self._mirror.flush()

    def close(self) -> None:
        """Write everything, close the files and make them read-only (0o400).

        A second call does nothing. Afterwards another ``SummaryRecord`` may be opened.

        Raises:
            OSError: With ``raise_exception=True``, a write error (the files are closed anyway).
            RuntimeError: With ``raise_exception=True``, too little free disk space.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord
            >>> record = SummaryRecord("runs/ms_close")
            >>> record.add_value("scalar", "loss", np.float32(0.5))
            >>> ok = record.record(1)
            >>> record.close()
            >>> record.record(2)  # logs an error: closed
            False
        """
        with _count_lock:
            if self._closed:
                return
            self._closed = True
            self._plain = False
        _live.discard(self)
        try:
            self._sink.close()
        finally:
            self._release()
            if self._mirror is not None:
                self._mirror.close()

    # -- internals ---------------------------------------------------------------------------

    def _release(self) -> None:
        global _count
        with _count_lock:
            if self._counted:
                self._counted = False
                _count -= 1

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

    def _after_fork(self) -> None:
        abandon = self._fast.abandon
        if abandon is not None:
            abandon()
        self._closed = True
        self._plain = False
        self._counted = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SummaryRecord {self.log_dir!r} {state}>"


def close_all() -> None:
    """Close every open SummaryRecord (run at interpreter exit)."""
    for record in list(_live):
        try:
            record.close()
        except Exception as exc:
            logger.error("closing %r at exit failed: %s", record, exc)


def _after_fork() -> None:
    global _count, _count_lock
    _count_lock = threading.Lock()
    for record in list(_live):
        record._after_fork()
    _live.clear()
    _count = 0


def __getattr__(name: str) -> Any:
    """Message classes that kinds expose (``TrainLineage``, ``LossLandscape``, ...)."""
    for kind in get_registry().kinds.values():
        classes = getattr(kind.convert, "message_classes", None)
        if classes and name in classes:
            return classes[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


lifecycle.on_exit(lifecycle.WRITERS - 1, close_all)
lifecycle.on_fork_child(_after_fork)
