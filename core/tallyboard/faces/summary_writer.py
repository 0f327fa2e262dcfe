"""The ``torch.utils.tensorboard.SummaryWriter`` face.

The writer itself knows no data kind: every ``add_*`` method comes from a kind plugin and ends
in :meth:`SummaryWriter.emit`, which hands the payload to each open sink through the encoder
registered for that (kind, sink) pair.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from tallyboard import paths, warn
from tallyboard.faces.writer_methods import WriterMethods
from tallyboard.plugin.registry import Registry, get_registry
from tallyboard.plugin.sinks import (  # parse_sinks, SinkTarget: here too for older imports
    Deferred,
    Sink,
    SinkEntry,
    SinkTarget,
    parse_sinks,
)
from tallyboard.ranks import reduce as distributed
from tallyboard.ranks.discovery import in_dataloader_worker
from tallyboard.records import lifecycle
from tallyboard.values import (
    Pending,
    check_int,
    check_positive_number,
    check_step,
    check_tag,
    check_walltime,
    defer_device,
    on_device,
)
from tallyboard.warn import SinkWarning

_now = __import__("time").time
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_valid_tags: set[str] = set()
_live_writers: weakref.WeakSet[SummaryWriter] = weakref.WeakSet()
SINK_ERRORS = ("raise", "warn")
# How a route hands a payload to its sink: encoded now, as a Deferred encode (heavy kinds), or
# as a row (key, tag, step, wall_time, payload) that the sink frames in batches later: for an
# encoder with a ``batch`` attribute and a sink with ``write_row`` and ``row_key`` (the key that
# stands for ``batch``), as RecordFile.write_row describes.
_NOW, _DEFERRED, _ROW = 0, 1, 2
_Route = tuple[Callable[..., Any], Callable[[Any], None], int]


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``.

    ``comment`` ends one folder name inside ``runs/``: a separator, ``..`` or control character
    in it is refused with ValueError, so no comment can place the run elsewhere.
    """
    if "/" in comment or "\\" in comment:
        raise ValueError(
            f"comment {comment!r} must not contain a path separator: it ends the run's folder name"
        )
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    name = paths.safe_relpath(f"{stamp}_{socket.gethostname()}{comment}", "comment")
    return os.path.join("runs", name)


class FileWriter:
    """torch's ``FileWriter`` over a :class:`SummaryWriter`: what ``writer.file_writer`` gives.

    Code written for torch's writer internals (Lightning's ``TensorBoardLogger`` calls
    ``writer._get_file_writer().add_summary(summary, step)``) keeps working: ``add_event`` and
    ``add_summary`` take TensorBoard protobufs and are the writer's methods of the same names;
    ``flush``, ``close`` and ``get_logdir`` are the writer's too.

    Args:
        writer: The writer whose sinks receive the protobufs.

    Example:
        >>> from tensorboard.compat.proto.summary_pb2 import Summary
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/file_writer") as writer:
        ...     summary = Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])
        ...     writer.file_writer.add_summary(summary, 1)
    """

    __slots__ = ("writer",)

    def __init__(self, writer: SummaryWriter) -> None:
        self.writer = writer

    def add_event(self, event: Any, step: Any = None, walltime: Any = None) -> None:
        """Write a TensorBoard ``Event`` as is: :meth:`SummaryWriter.add_event`."""
        self.writer.add_event(event, step, walltime)

    def add_summary(self, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Write a TensorBoard ``Summary`` in its own event: :meth:`SummaryWriter.add_summary`."""
        self.writer.add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        """The run's directory as a str (torch's FileWriter gives a str)."""
        return self.writer._dir

    def flush(self) -> None:
        """:meth:`SummaryWriter.flush`."""
        self.writer.flush()

    def close(self) -> None:
        """:meth:`SummaryWriter.close`."""
        self.writer.close()


class SummaryWriter(WriterMethods):
    """Log what a model does while it trains, for TensorBoard: torch's ``SummaryWriter``'s calls.

    Make a writer for a run directory, call its ``add_*`` methods in the training loop, and
    close it (``with`` does). ``tensorboard --logdir runs`` then shows every run under ``runs``:

        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/exp1") as writer:
        ...     for step in range(100):
        ...         writer.add_scalar("loss/train", 1 / (step + 1), step)
        ...     writer.add_text("notes", "first try", 0)

    One method per thing to log: :meth:`add_scalar` (a point of a line), :meth:`add_scalars`
    (lines on one chart), :meth:`add_histogram`, :meth:`add_image`, :meth:`add_images`,
    :meth:`add_figure`, :meth:`add_video`, :meth:`add_audio`, :meth:`add_text`,
    :meth:`add_pr_curve`, :meth:`add_mesh`, :meth:`add_embedding`, :meth:`add_graph`,
    :meth:`add_hparams`, :meth:`add_custom_scalars`, :meth:`add_tensor`, and :meth:`add_value`
    for any kind an installed plugin adds. Each takes torch's arguments, checks them in the call
    (a ``TypeError``/``ValueError`` naming the argument, and the fix where one is likely),
    copies the data and queues it; a background thread writes it, so a call costs microseconds.
    :meth:`flush` returns once everything accepted is written, :meth:`close` also closes the
    files, and whatever is still queued at interpreter exit is written.

    TensorBoard shows the same for the same calls as for torch's writer. What differs, on
    purpose: event files are created exclusively (two writers never share one), a forked child
    writes its own file and never hangs, an I/O error (disk full) is raised once from the next
    call, no tag, key or run name can write outside ``log_dir``, a float ``global_step`` or a
    non-finite ``walltime`` is an error, images take integers as 0..255, and ``add_video`` needs
    no moviepy.

    Args:
        log_dir: The run's directory: a path, or an fsspec URL (``s3://bucket/runs/exp1``,
            ``memory://...``). Created if missing; files already there are never truncated.
            Default ``None``: ``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``, as torch.
            ``.log_dir`` keeps it as given (a ``Path`` stays a ``Path``).
        comment: Appended to the default ``log_dir``'s name; ignored when ``log_dir`` is given
            (as in torch). No path separator. Default ``""``.
        purge_step: Start this run again from this step: TensorBoard drops the points of an
            earlier session at or after it (a restarted job resumed at step ``purge_step``).
            Applied to the first file only. Default ``None``.
        max_queue: How many records may wait before the background thread writes them, an int >=
            1. Default ``10``. (Memory waiting to be written is also bounded, 64 MiB by default:
            beyond it the caller waits for the disk.)
        flush_secs: The longest an accepted record stays unwritten, in seconds, a number > 0.
            Default ``120``.
        filename_suffix: Appended to the event file's name, without path separators. Default
            ``""``.
        write_to_disk: ``False`` checks every call and writes nothing (tensorboardX's option,
            handy on non-zero ranks). Default ``True``.
        logdir: tensorboardX's name for ``log_dir`` (keyword only); give one of the two.
        sinks: Where records go (keyword only): sink names such as ``["tfevents", "csv"]`` (the
            same values as TensorBoard files and ``scalars.csv``), or ``"<sink>+<url>"`` for a
            sink writing elsewhere (``"csv+s3://bucket/run"``), either with the sink's settings
            beside it (``("mlflow+http://host:5000", {"deadline": 5.0})``, see
            :func:`tallyboard.plugin.sinks.parse_sink`). ``tallyboard plugins`` lists the
            installed sinks. Default ``None``: ``["tfevents"]``.
        sink_errors: What a failing sink does (keyword only): ``"raise"`` (its error reaches the
            caller) or ``"warn"`` (one warning naming the sink, which is then dropped while the
            others go on). Default ``None``: ``"raise"`` with one sink, ``"warn"`` with several.
        ranks: In a ``torch.distributed`` job (or under torchrun, Slurm, Open MPI), who writes
            (keyword only): ``"zero"`` (rank 0; the others check calls and write nothing),
            ``"each"`` (a sub-run ``rank_<k>`` per rank) or ``"all"`` (one run, tags ending in
            ``/rank_<k>``). Default ``None``: ``"zero"``. DataLoader workers never write.
        reduce: Make scalars one value per step for the whole job (keyword only, with
            ``ranks="zero"``): ``"mean"``, ``"sum"``, ``"min"``, ``"max"``, or ``{tag: op}``
            with ``"*"`` for the other tags. Values are reduced in one batch at :meth:`sync`,
            which :meth:`flush` and :meth:`close` call: every rank must call them equally often.
            Default ``None``.
        sync_timeout: Seconds a rank waits for the others at :meth:`sync` before raising
            :class:`~tallyboard.ranks.reduce.RankSyncError` (keyword only). Default ``60``.

    Raises:
        TypeError: An argument has the wrong type (``log_dir`` not a str or path, ``sinks`` not
            a list of names, URLs or (entry, settings) pairs, ...).
        ValueError: ``log_dir`` and ``logdir`` both given; ``comment`` or ``filename_suffix``
            holds a path separator; an unknown or repeated sink; an unknown ``sink_errors``,
            ``ranks`` or ``reduce``; ``reduce`` with ``ranks`` other than ``"zero"``;
            ``max_queue`` < 1; ``flush_secs`` or ``sync_timeout`` not > 0.
        OSError: The directory or the first file cannot be created.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> writer = SummaryWriter("runs/exp2", sinks=["tfevents", "csv"])
        >>> for step in range(10):
        ...     writer.add_scalar("loss", 1 / (step + 1), step)
        >>> writer.close()  # runs/exp2 holds an event file and scalars.csv
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        write_to_disk: bool = True,
        *,
        logdir: str | os.PathLike[str] | None = None,
        sinks: Sequence[SinkEntry] | None = None,
        sink_errors: str | None = None,
        ranks: str | None = None,
        reduce: str | dict[str, str] | None = None,
        sync_timeout: float = distributed.DEFAULT_SYNC_TIMEOUT,
    ) -> None:
        if logdir is not None:  # tensorboardX's name for log_dir
            if log_dir is not None:
                raise ValueError("give log_dir or logdir (tensorboardX's name for it), not both")
            log_dir = logdir
        if not isinstance(write_to_disk, bool):
            raise TypeError(f"write_to_disk must be a bool, got {type(write_to_disk).__name__}")
        self._setup(
            log_dir, comment, purge_step, max_queue, flush_secs, filename_suffix, sinks,
            sink_errors, ranks, reduce, sync_timeout, write_to_disk=write_to_disk,
        )  # fmt: skip

    def _setup(
        self,
        log_dir: str | os.PathLike[str] | None,
        comment: str,
        purge_step: int | None,
        max_queue: int,
        flush_secs: float,
        filename_suffix: str,
        sinks: Sequence[SinkEntry] | None,
        sink_errors: str | None,
        ranks: str | None,
        reduce: str | dict[str, str] | None,
        sync_timeout: float,
        _targets: list[SinkTarget] | None = None,
        _plan: distributed.RankPlan | None = None,
        write_to_disk: bool = True,
    ) -> None:
        """The constructor's work; a sub-run writer also passes its parent's targets and plan."""
        if not isinstance(comment, str):
            raise TypeError(f"comment must be a str, got {type(comment).__name__}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {type(filename_suffix).__name__}")
        if "/" in filename_suffix or "\\" in filename_suffix or "\0" in filename_suffix:
            raise ValueError(
                f"filename_suffix {filename_suffix!r} must not contain path separators or NUL"
            )
        check_tag(filename_suffix, "filename_suffix")  # a lone surrogate: no file can be named
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir must be a str or os.PathLike, got {type(log_dir).__name__}")
        self.log_dir: Any = log_dir if log_dir else default_log_dir(comment)
        self._dir = os.fspath(self.log_dir)
        plan = _plan if _plan is not None else distributed.plan_ranks(ranks)
        if not write_to_disk:  # tensorboardX: every add_* is checked, nothing is written
            plan = dataclasses.replace(plan, writes=False)
        self._plan = plan
        #: tensorboardX's record of what ``add_scalars`` logged, for :meth:`export_scalars_to_json`.
        self.scalar_dict: dict[str, list[list[Any]]] = {}
        self._file_writer: FileWriter | None = FileWriter(self)
        if plan.subdir:
            self.log_dir = self._dir = paths.join(self._dir, plan.subdir)
        if reduce is not None and plan.mode != "zero":
            raise ValueError(
                f"reduce= writes one value per step from rank 0: use ranks='zero', not {plan.mode!r}"
            )
        self._sync_timeout = distributed.check_timeout(sync_timeout)
        self._rank_sync = None if reduce is None else distributed.RankSync(reduce, sync_timeout)
        self.purge_step = check_step(purge_step, "purge_step")
        self.max_queue = check_int(max_queue, "max_queue", minimum=1)
        self.flush_secs = check_positive_number(flush_secs, "flush_secs")
        self.filename_suffix = filename_suffix
        self._registry: Registry = get_registry()  # also sets the plugins' add_* (WriterMethods)
        if _targets is None:
            _targets = parse_sinks(self._registry, sinks)
            if plan.subdir:  # a rank's run: a sink given a place writes there in the same subdir
                _targets = [t.for_child(plan.subdir) for t in _targets]
        self._targets = list(_targets)
        self._sink_names = tuple(t.text for t in self._targets)
        if sink_errors is None:
            sink_errors = "raise" if len(self._targets) == 1 else "warn"
        if sink_errors not in SINK_ERRORS:
            raise ValueError(f"sink_errors must be one of {SINK_ERRORS}, got {sink_errors!r}")
        self.sink_errors = sink_errors
        self._lock = threading.RLock()
        self._sinks: list[tuple[str, Sink]] = []
        self._routes: dict[str, list[_Route]] = {}
        self._children: dict[str, SummaryWriter] = {}
        self._closed = True
        if plan.writes:
            paths.check_log_dir(self._dir)
            self._open()
        self._route_emit()
        _live_writers.add(self)

    # -- lifecycle ---------------------------------------------------------------------------

    def _open(self) -> None:
        with self._lock:
            if self._file_writer is None:
                self._file_writer = FileWriter(self)
            if not self._closed or not self._plan.writes:
                return
            if in_dataloader_worker():
                self._plan = distributed.RankPlan(self._plan.mode, writes=False)
                self._route_emit()
                return
            opened: list[tuple[str, Sink]] = []
            failed: list[tuple[SinkTarget, BaseException]] = []
            try:
                for target in self._targets:
                    options = target.options(
                        self._dir,
                        max_queue=self.max_queue,
                        flush_secs=self.flush_secs,
                        filename_suffix=self.filename_suffix,
                        purge_step=self.purge_step,
                    )
                    try:
                        opened.append((target.spec.name, target.spec.open(options)))
                    except Exception as exc:
                        if self.sink_errors == "raise":
                            raise
                        failed.append((target, exc))
                if not opened:
                    raise failed[0][1]
            except BaseException:
                for _, sink in opened:
                    _close_quietly(sink)
                raise
            for target, error in failed:
                _warn_failed(target.text, "open", error)
            self.purge_step = None  # applied once, as torch does
            self._sinks = opened
            self._routes = {}
            self._closed = False
        self._registry.call_lifecycle("writer_opened", self)

    def get_logdir(self) -> Any:
        """The run's directory, as given to the constructor (a ``Path`` stays a ``Path``).

        Returns:
            ``log_dir`` as given, or the default ``runs/...`` name the writer chose; with
            ``ranks="each"``, the rank's sub-run ``<log_dir>/rank_<k>``.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/logdir") as writer:
            ...     print(writer.get_logdir())
            runs/logdir
        """
        return self.log_dir

    @property
    def writes(self) -> bool:
        """Whether this writer writes: False on a rank that only checks calls (``ranks="zero"`` on a
        non-zero rank, ``write_to_disk=False``) and in a DataLoader worker process.
        """
        return self._plan.writes

    def _route_emit(self) -> None:
        """Bind ``emit`` for this rank: as is, validation only, rank-tagged, or into the reduction."""
        self.__dict__.pop("emit", None)
        if not self._plan.writes:
            self.emit = _check_only  # type: ignore[method-assign]
        elif self._plan.suffix:
            self.emit = functools.partial(_emit_tagged, self, self._plan.suffix)  # type: ignore[method-assign]
        if self._rank_sync is not None:
            self.emit = functools.partial(_emit_reduced, self, self.emit)  # type: ignore[method-assign]

    def rank_sync(self) -> distributed.RankSync:
        """The buffer of values this writer reduces across ranks at :meth:`sync` (made on demand).

        Used by :class:`~tallyboard.monitor.TensorboardEventHandler` with ``across_ranks=True``;
        most code never calls it.

        Returns:
            The writer's :class:`~tallyboard.ranks.reduce.RankSync`.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/rank_sync") as writer:
            ...     print(type(writer.rank_sync()).__name__)
            RankSync
        """
        if self._rank_sync is None:
            self._rank_sync = distributed.RankSync(None, self._sync_timeout)
        return self._rank_sync

    def sync(self) -> None:
        """Reduce the values buffered since the last sync across ranks; rank 0 writes them.

        Only with ``reduce=`` (or a Stat handler with ``across_ranks=True``); otherwise it does
        nothing. Every rank must call it the same number of times (:meth:`flush` and :meth:`close`
        do): it costs one ``all_reduce`` of one number and one ``gather``, however many values.

        Raises:
            tallyboard.ranks.reduce.RankSyncError: A rank did not arrive within ``sync_timeout``
            seconds (no later sync is tried), the ranks synced different writers at once, or a
            launcher says there are several ranks but torch.distributed has no process group.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/sync", reduce="mean") as writer:  # one process: rank 0
            ...     writer.add_scalar("loss", 0.5, 0)
            ...     writer.sync()  # the mean over ranks of step 0's loss is written now
        """
        if self._rank_sync is None:
            return
        points = self._rank_sync.run()
        if self._plan.writes:
            for kind, tag, step, value, wall in points:
                SummaryWriter.emit(self, kind, tag, value, step, wall)

    def _get_file_writer(self) -> FileWriter:
        """torch's internal file-writer face, for code that writes protobufs through it.

        Lightning's ``TensorBoardLogger`` calls ``_get_file_writer().add_summary(summary, step)``;
        the returned :class:`FileWriter` hands such protobufs to this writer's sinks.
        """
        if self._file_writer is None:
            self._open()
            self._file_writer = FileWriter(self)
        return self._file_writer

    @property
    def file_writer(self) -> FileWriter | None:
        """torch's public attribute: the run's :class:`FileWriter`, None once closed.

        An ``add_*`` call or ``_get_file_writer()`` after :meth:`close` opens a new one.
        """
        return self._file_writer

    def export_scalars_to_json(self, path: str | os.PathLike[str]) -> None:
        """Write every value :meth:`add_scalars` logged since the last export to ``path``, as JSON.

        tensorboardX's method, with its format: ``{"<log_dir>/<main_tag>/<key>": [[wall_time, step,
        value], ...]}``. The values were kept in memory since they were logged; once written they
        are forgotten (they stay in the event files), so memory does not grow between exports.

        Args:
            path: The JSON file to write (str or ``os.PathLike``), replaced if it exists.

        Raises:
            TypeError: ``path`` is not a str or path.
            OSError: The file cannot be written.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/export") as writer:
            ...     writer.add_scalars("acc", {"train": 0.9, "val": 0.8}, 0)
            ...     writer.export_scalars_to_json("runs/export/scalars.json")
        """
        import json

        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.scalar_dict, fh)
        self.scalar_dict = {}

    def flush(self) -> None:
        """Return once everything accepted so far is written (sub-runs included).

        Waits for the background thread to write every queued record and flushes the files, so a
        reader (TensorBoard, :func:`tallyboard.read`) sees them. Does nothing after :meth:`close`.
        With ``reduce=`` it first calls :meth:`sync`, so every rank must call it.

        Raises:
            OSError: A write failed since the last call (disk full, file too large): raised once,
                with its own type; the records written before it stay readable.

        Example:
            >>> from tallyboard import SummaryWriter, read
            >>> writer = SummaryWriter("runs/flush")
            >>> writer.add_scalar("loss", 0.25, 0)
            >>> writer.flush()  # now on disk: read() sees it
            >>> float(read("runs/flush")["value"].iloc[0])
            0.25
            >>> writer.close()
        """
        self.sync()
        if self._closed:
            return
        self._registry.call_lifecycle("writer_flushing", self)
        errors: list[BaseException] = []
        for child in list(self._children.values()):
            _collect_error(errors, child.flush)
        for name, sink in list(self._sinks):
            self._sink_call(errors, name, sink, "flush")
        _raise_first(errors)

    def close(self) -> None:
        """Flush and close every file (sub-runs included) and release the thread; idempotent.

        Afterwards ``file_writer`` is None, and an ``add_*`` call opens a new event file in the same
        directory (as torch does; nothing is truncated). ``with SummaryWriter(...) as writer:``
        calls it on leaving the block. With ``reduce=`` it first calls :meth:`sync` once.

        Raises:
            OSError: A write failed (disk full, file too large); the files are released all the
                same.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> writer = SummaryWriter("runs/close")
            >>> writer.add_scalar("loss", 0.25, 0)
            >>> writer.close()
            >>> writer.close()  # a second close does nothing
        """
        sync = self._rank_sync
        try:
            if sync is not None and not sync.closed:  # a second close() is no collective
                self.sync()
        finally:
            if sync is not None:
                sync.closed = True
            self._file_writer = None
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._registry.call_lifecycle("writer_closing", self)
            errors: list[BaseException] = []
            for child in list(self._children.values()):
                _collect_error(errors, child.close)
            self._children.clear()
            for name, sink in list(self._sinks):
                self._sink_call(errors, name, sink, "close")
            self._sinks = []
            self._routes = {}
            self._closed = True
        _raise_first(errors)

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _after_fork(self) -> None:
        # The child must not touch the parent's files: drop them; the next add opens new ones.
        abandon = [s for _, s in self._sinks]
        self._lock = threading.RLock()
        self._sinks, self._routes, self._closed = [], {}, True
        self._children.clear()
        for sink in abandon:
            drop = getattr(sink, "abandon", None)
            if drop is not None:
                drop()

    # -- logging -----------------------------------------------------------------------------

    def emit(
        self,
        kind: str,
        tag: str,
        payload: Any,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Send one checked payload of ``kind`` to every sink: where every ``add_*`` method ends.

        For plugin authors: a kind's method converts its input into its payload, then calls this;
        each sink gets the payload through the encoder registered for (kind, sink), now or, for a
        heavy kind, on the writer's thread. A sink with no encoder for the kind is skipped with one
        warning. Users call :meth:`add_value` instead.

        Args:
            kind: A registered kind's name, such as ``"scalar"``.
            tag: The tag, a str.
            payload: What the kind's ``convert`` returns (already checked).
            global_step: An int within int64, or None (no step). Default ``None``.
            walltime: Seconds since the epoch, finite, or None (now). Default ``None``.

        Raises:
            TypeError: ``tag`` is not a str, ``global_step`` not an int.
            ValueError: ``global_step`` outside int64, ``walltime`` not finite; an unknown kind.
            OSError: A sink failed to write (with ``sink_errors="raise"``).

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/emit") as writer:
            ...     writer.emit("scalar", "loss", 0.25, 0)  # what add_scalar("loss", 0.25, 0) does
        """
        if type(tag) is not str or tag not in _valid_tags:
            tag = check_tag(tag)
            if len(_valid_tags) < 100_000:
                _valid_tags.add(tag)
        if global_step is not None and (
            type(global_step) is not int or not _INT64_MIN <= global_step <= _INT64_MAX
        ):
            global_step = check_step(global_step)
        walltime = _now() if walltime is None else check_walltime(walltime)
        if self._closed:
            self._open()
        try:
            routes = self._routes[kind]
        except KeyError:
            routes = self._build_routes(kind)
        try:
            for encode, write, mode in routes:
                if mode is _ROW:
                    write((encode, tag, global_step, walltime, payload))
                elif mode:
                    write(
                        Deferred(encode, (tag, global_step, walltime, payload), _size_hint(payload))
                    )
                else:
                    write(encode(tag, global_step, walltime, payload))
        except Exception as exc:
            self._route_failed(routes, encode, write, exc, (tag, global_step, walltime, payload))

    def emit_deferred(
        self,
        kind: str,
        tag: str,
        payload: Pending,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """:meth:`emit` for a payload still on its way from a device (a ``jax.Array``, a CUDA
        tensor): the call checks tag, step and wall time (``None`` is now) and queues the
        payload; each sink's writer thread materialises it (``payload.result()``, see
        ``tallyboard.values.Pending``) and encodes it, in the order of the calls. A failure to
        make it is raised by a later call, as a sink's write error is.

        On a rank that writes nothing it only checks; where the tag is reduced across ranks
        (``reduce=``) the value is materialised in the call.
        """
        plan = self._plan
        if not plan.writes:
            _check_only(kind, tag, payload, global_step, walltime)
            return
        sync = self._rank_sync
        if plan.suffix or (sync is not None and type(tag) is str and sync.op_for(tag)):
            self.emit(kind, tag, payload.result(), global_step, walltime)
            return
        tag = check_tag(tag)
        global_step = check_step(global_step)
        walltime = _now() if walltime is None else check_walltime(walltime)
        if self._closed:
            self._open()
        args = (tag, global_step, walltime, payload)
        errors: list[BaseException] = []
        for name, sink in list(self._sinks):
            encode = self._encoder(kind, name)
            if encode is None:
                continue
            try:
                encode = functools.partial(_encode_pending, encode)
                sink.write(Deferred(encode, args, payload.nbytes))
            except Exception as exc:
                if self.sink_errors == "raise":
                    errors.append(exc)
                else:
                    self._detach(name, sink, "write", exc)
        _raise_first(errors)

    def add_value(
        self, kind: str, tag: str, value: Any, global_step: Any = None, walltime: Any = None
    ) -> None:
        """Log ``value`` as data kind ``kind``: any kind by name, including those of other plugins.

        ``writer.add_value("histogram", "w", values, 3)`` does what ``writer.add_histogram("w",
        values, 3)`` does; a third-party plugin's kind needs no method of its own. ``tallyboard
        plugins`` lists the installed kinds. The value takes the form the kind's ``convert``
        accepts: for the built-in kinds, what the ``add_*`` method takes as its value.

        Args:
            kind: The kind's name: ``"scalar"``, ``"histogram"``, ``"image"``, ``"text"``,
                ``"audio"``, ``"tensor"``, ``"pr_curve"``, ``"mesh"``, ... or a plugin's.
            tag: The tag, a str.
            value: The value to log.
            global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
            walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

        Raises:
            ValueError: No installed plugin provides ``kind`` (the message lists those that do), or
                the value is out of range for it.
            TypeError: The value has the wrong type for the kind.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/add_value") as writer:
            ...     writer.add_value("scalar", "lr", 0.1, global_step=0)
            ...     writer.add_value("histogram", "weights", np.random.randn(100), 0)
        """
        k = self._registry.kind(kind)
        if k.log is not None:
            k.log(self, tag, value, global_step, walltime)
        elif on_device(value):  # a device value: converted on the writer's side
            (pending,) = defer_device(k.convert, [value])
            self.emit_deferred(k.name, tag, pending, global_step, walltime)
        else:
            self.emit(k.name, tag, k.convert(value), global_step, walltime)

    def child(self, run: str, *, arg: str = "run") -> SummaryWriter:
        """The writer of sub-run ``<log_dir>/<run>``, a run of its own, closed with this writer.

        ``add_scalars`` and ``add_hparams`` write through such writers; the same ``run`` gives the
        same writer until it is closed. It has this writer's sinks, ``max_queue`` and
        ``flush_secs``.

        Args:
            run: A path relative to ``log_dir`` that stays inside it (``"val"``, ``"a/b"``).
            arg: The argument name error messages use for ``run``. Default ``"run"``.

        Returns:
            The sub-run's :class:`SummaryWriter`.

        Raises:
            ValueError: ``run`` is empty, absolute, holds ``..`` or a control character.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/child") as writer:
            ...     writer.child("val").add_scalar("loss", 0.3, 0)  # run runs/child/val
        """
        rel = paths.safe_relpath(run, arg)
        with self._lock:
            child = self._children.get(rel)
            if child is None or child._closed:
                run_dir = paths.resolve_inside(self._dir, rel, arg)
                if self._closed:
                    self._open()
                child = SummaryWriter.__new__(SummaryWriter)
                child._setup(
                    run_dir, "", None, self.max_queue, self.flush_secs,
                    self.filename_suffix, None, self.sink_errors, None, None,
                    distributed.DEFAULT_SYNC_TIMEOUT,
                    _targets=[t.for_child(rel) for t in self._targets],
                    _plan=dataclasses.replace(self._plan, subdir=None),  # inside this rank's dir
                )  # fmt: skip
                self._children[rel] = child
        return child

    def _encoder(self, kind: str, sink_name: str) -> Callable[..., Any] | None:
        """The encoder of ``kind`` for sink ``sink_name``, or None (after one warning)."""
        encoders = self._registry.encoders
        encode = encoders.get((kind, sink_name))
        if encode is None:
            encode_any = encoders.get(("*", sink_name))
            if encode_any is None:
                warn.cannot_encode(sink_name, kind)
                return None
            encode = functools.partial(encode_any, kind)
        return encode

    def _build_routes(self, kind: str) -> list[_Route]:
        k = self._registry.kind(kind)
        routes: list[_Route] = []
        for sink_name, sink in self._sinks:
            encode = self._encoder(kind, sink_name)
            if encode is None:
                continue
            batch = getattr(encode, "batch", None)
            write_row = getattr(sink, "write_row", None)
            if batch is not None and write_row is not None and not k.heavy:
                routes.append((sink.row_key(batch), write_row, _ROW))  # type: ignore[attr-defined]
            else:
                routes.append((encode, sink.write, _DEFERRED if k.heavy else _NOW))
        self._routes[kind] = routes
        return routes

    def _sink_of(self, write: Callable[[Any], None]) -> tuple[str, Sink] | None:
        for name, sink in self._sinks:
            if sink.write == write or getattr(sink, "write_row", None) == write:
                return name, sink
        return None

    def _route_failed(
        self,
        routes: list[_Route],
        encode: Callable[..., Any],
        write: Callable[[Any], None],
        exc: Exception,
        args: tuple[Any, Any, Any, Any],
    ) -> None:
        """A sink failed in ``emit``: finish the other sinks, then raise or warn and detach."""
        index = next(i for i, r in enumerate(routes) if r[0] is encode and r[1] == write)
        failures = [(write, exc)]
        for encode2, write2, mode in routes[index + 1 :]:
            try:
                if mode is _ROW:
                    write2((encode2, *args))
                elif mode:
                    write2(Deferred(encode2, args, _size_hint(args[3])))
                else:
                    write2(encode2(*args))
            except Exception as exc2:
                failures.append((write2, exc2))
        errors: list[BaseException] = []
        for failed_write, error in failures:
            found = self._sink_of(failed_write)
            name = found[0] if found else "?"
            if self.sink_errors == "raise" or found is None:
                errors.append(error)
            else:
                self._detach(name, found[1], "write", error)
        _raise_first(errors)

    def _sink_call(self, errors: list[BaseException], name: str, sink: Sink, method: str) -> None:
        """``sink.flush()`` or ``sink.close()``, its error collected or (warn mode) reported."""
        try:
            getattr(sink, method)()
        except Exception as exc:
            if self.sink_errors == "raise":
                errors.append(exc)
            else:
                self._detach(name, sink, method, exc)

    def _detach(self, name: str, sink: Sink, action: str, exc: BaseException) -> None:
        """Warn once that sink ``name`` failed, close it quietly and stop writing to it."""
        with self._lock:
            self._sinks = [(n, s) for n, s in self._sinks if s is not sink]
            self._routes = {}
        _warn_failed(name, action, exc)
        if action != "close":
            _close_quietly(sink)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SummaryWriter log_dir={self._dir!r} sinks={list(self._sink_names)} {state}>"


def _check_only(
    kind: str, tag: Any, payload: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """``emit`` on a rank that writes nothing: the same checks, then nothing (no file, no folder)."""
    if type(tag) is not str or tag not in _valid_tags:
        check_tag(tag)
    if global_step is not None and (
        type(global_step) is not int or not _INT64_MIN <= global_step <= _INT64_MAX
    ):
        check_step(global_step)
    if walltime is not None:
        check_walltime(walltime)


def _emit_tagged(
    writer: SummaryWriter,
    suffix: str,
    kind: str,
    tag: Any,
    payload: Any,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """``emit`` with the rank in the tag (``ranks="all"``)."""
    SummaryWriter.emit(writer, kind, check_tag(tag) + suffix, payload, global_step, walltime)


def _emit_reduced(
    writer: SummaryWriter,
    emit: Callable[..., None],
    kind: str,
    tag: Any,
    payload: Any,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """``emit`` that queues plain numbers of reduced tags for :meth:`SummaryWriter.sync`."""
    sync = writer._rank_sync
    op = sync.op_for(tag) if sync is not None and type(tag) is str else None
    if op is None or type(payload) is not float:
        emit(kind, tag, payload, global_step, walltime)
        return
    check_tag(tag)
    sync.add(kind, tag, op, check_step(global_step), payload, check_walltime(walltime))  # type: ignore[union-attr]


def _encode_pending(
    encode: Callable[..., Any], tag: str, step: int | None, wall_time: float, payload: Pending
) -> Any:
    """A sink's encode of a deferred device value, on the sink's writer thread."""
    return encode(tag, step, wall_time, payload.result())


def _size_hint(payload: Any) -> int:
    return int(getattr(payload, "nbytes", 0) or 0)


def _close_quietly(sink: Sink) -> None:
    try:
        sink.close()
    except Exception:
        pass


def _warn_failed(name: str, action: str, exc: BaseException) -> None:
    warn.warn(
        f"sink {name!r} failed in {action} ({type(exc).__name__}: {exc}); it is dropped and the "
        "other sinks go on (pass sink_errors='raise' to get such errors instead)",
        SinkWarning,
    )


def _collect_error(errors: list[BaseException], fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:
        errors.append(exc)


def _raise_first(errors: list[BaseException]) -> None:
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(f"also: {type(other).__name__}: {other}")
        raise first


def close_all_writers() -> None:
    """Drain and close every open writer (run at interpreter exit, after Stats close)."""
    for writer in sorted(_live_writers, key=_sync_order):
        try:
            writer.close()
        except Exception as exc:
            warnings.warn(f"closing {writer!r} at exit failed: {exc}", SinkWarning, stacklevel=1)


def _sync_order(writer: SummaryWriter) -> int:
    """Writers that sync across ranks close in creation order, the same on every rank."""
    sync = writer._rank_sync
    return -1 if sync is None else sync.serial


def _after_fork() -> None:
    for writer in list(_live_writers):
        writer._after_fork()


lifecycle.on_exit(lifecycle.WRITERS, close_all_writers)
lifecycle.on_fork_child(_after_fork)
