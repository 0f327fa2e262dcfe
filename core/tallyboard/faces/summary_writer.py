"""The ``torch.utils.tensorboard.SummaryWriter`` face.

The writer itself knows no data kind: every ``add_*`` method comes from a kind plugin and ends
in :meth:`SummaryWriter.emit`, which hands the payload to each open sink through the encoder
registered for that (kind, sink) pair.

The writer is assembled from parts that each do one thing: its options
(:mod:`~tallyboard.faces.writer_options`), the road of a value (:mod:`~tallyboard.faces.writer_emit`),
the sinks and routes (:mod:`~tallyboard.faces.sink_router`), opening and closing
(:mod:`~tallyboard.faces.writer_lifecycle`) and torch's file-writer face
(:mod:`~tallyboard.faces.file_writer`); this module makes it and its sub-run writers.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
import weakref
from collections.abc import Sequence
from typing import Any

from tallyboard import paths
from tallyboard.faces.file_writer import FileWriter, FileWriterFace
from tallyboard.faces.sink_router import SINK_ERRORS, SinkRouter
from tallyboard.faces.writer_emit import ValueRoad
from tallyboard.faces.writer_lifecycle import WriterLifecycle
from tallyboard.faces.writer_methods import WriterMethods
from tallyboard.faces.writer_options import WriterOptions, default_log_dir
from tallyboard.plugin.registry import Registry, get_registry
from tallyboard.plugin.sinks import (  # parse_sinks, SinkTarget: here too for older imports
    SinkEntry,
    SinkTarget,
    parse_sinks,
)
from tallyboard.ranks import reduce as distributed
from tallyboard.records import lifecycle
from tallyboard.values import check_int, check_positive_number, check_step, check_tag
from tallyboard.warn import SinkWarning

__all__ = ["SummaryWriter", "FileWriter", "default_log_dir", "SinkWarning", "SINK_ERRORS"]
_live_writers: weakref.WeakSet[SummaryWriter] = weakref.WeakSet()


class SummaryWriter(WriterLifecycle, ValueRoad, FileWriterFace, WriterMethods):
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
            WriterOptions(
                log_dir=log_dir,
                comment=comment,
                purge_step=purge_step,
                max_queue=max_queue,
                flush_secs=flush_secs,
                filename_suffix=filename_suffix,
                sinks=sinks,
                sink_errors=sink_errors,
                ranks=ranks,
                reduce=reduce,
                sync_timeout=sync_timeout,
                write_to_disk=write_to_disk,
            )
        )

    def _setup(self, options: WriterOptions) -> None:
        """The constructor's work; a sub-run writer's options also hold its parent's targets
        and plan."""
        log_dir, comment, filename_suffix = (
            options.log_dir,
            options.comment,
            options.filename_suffix,
        )
        reduce, sync_timeout, sink_errors = (
            options.reduce,
            options.sync_timeout,
            options.sink_errors,
        )
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
        plan = options.plan if options.plan is not None else distributed.plan_ranks(options.ranks)
        if not options.write_to_disk:  # tensorboardX: every add_* is checked, nothing is written
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
        self.purge_step = check_step(options.purge_step, "purge_step")
        self.max_queue = check_int(options.max_queue, "max_queue", minimum=1)
        self.flush_secs = check_positive_number(options.flush_secs, "flush_secs")
        self.filename_suffix = filename_suffix
        self._registry: Registry = get_registry()  # also sets the plugins' add_* (WriterMethods)
        targets: Sequence[SinkTarget] | None = options.targets
        if targets is None:
            targets = parse_sinks(self._registry, options.sinks)
            if plan.subdir:  # a rank's run: a sink given a place writes there in the same subdir
                targets = [t.for_child(plan.subdir) for t in targets]
        self._targets = list(targets)
        self._sink_names = tuple(t.text for t in self._targets)
        if sink_errors is None:
            sink_errors = "raise" if len(self._targets) == 1 else "warn"
        if sink_errors not in SINK_ERRORS:
            raise ValueError(f"sink_errors must be one of {SINK_ERRORS}, got {sink_errors!r}")
        self.sink_errors = sink_errors
        self._lock = threading.RLock()
        self._use(SinkRouter(self._registry, sink_errors, self._lock))
        self._children: dict[str, SummaryWriter] = {}
        self._closed = True
        if plan.writes:
            paths.check_log_dir(self._dir)
            self._open()
        self._route_emit()
        _live_writers.add(self)

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
                    WriterOptions(
                        log_dir=run_dir,
                        max_queue=self.max_queue,
                        flush_secs=self.flush_secs,
                        filename_suffix=self.filename_suffix,
                        sink_errors=self.sink_errors,
                        targets=tuple(t.for_child(rel) for t in self._targets),
                        plan=dataclasses.replace(self._plan, subdir=None),  # inside this rank's dir
                    )
                )
                self._children[rel] = child
        return child

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SummaryWriter log_dir={self._dir!r} sinks={list(self._sink_names)} {state}>"


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
