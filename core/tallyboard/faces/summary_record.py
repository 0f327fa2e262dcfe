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

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from tallyboard.faces import mindspore_operators
from tallyboard.faces.record_lifecycle import RecordLifecycle, _live, claim, close_all
from tallyboard.faces.record_options import (
    _device_id,
    _make_dir,
    check_arguments,
    check_export_options,
)
from tallyboard.faces.record_steps import Recorded, RecordSteps
from tallyboard.faces.record_values import DEFAULT_SINK, PLUGINS
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

__all__ = ["SummaryRecord", "Recorded", "PLUGINS", "check_export_options", "close_all"]

_now = time.time


class SummaryRecord(RecordLifecycle, RecordSteps):
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
        >>> with SummaryRecord("runs/ms_face") as record:
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
        claim()  # one open SummaryRecord in a process, as MindSpore allows
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
        max_file_size, self._export_options = check_arguments(
            file_prefix, file_suffix, max_file_size, raise_exception, tensorboard, export_options,
            network,
        )  # fmt: skip
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

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SummaryRecord {self.log_dir!r} {state}>"


def __getattr__(name: str) -> Any:
    """Message classes that kinds expose (``TrainLineage``, ``LossLandscape``, ...)."""
    for kind in get_registry().kinds.values():
        classes = getattr(kind.convert, "message_classes", None)
        if classes and name in classes:
            return classes[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
