"""A writer's life: opening its sinks, flushing, closing, and starting afresh in a forked child.

A writer opens its sinks when made (and again on the first call after :meth:`close`); its open
sinks and their routes live in one :class:`~tallyboard.faces.sink_router.SinkRouter`, replaced
whole on every open, close and fork.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from tallyboard.faces.file_writer import FileWriter
from tallyboard.faces.sink_router import (
    Route,
    RouteKey,
    SinkRouter,
    close_quietly,
    raise_first,
    warn_failed,
)
from tallyboard.plugin.registry import Registry
from tallyboard.plugin.sinks import Sink, SinkTarget
from tallyboard.ranks import reduce as distributed
from tallyboard.ranks.discovery import in_dataloader_worker


class WriterLifecycle:
    """Open, flush, close and fork handling of a writer (and of its sub-run writers)."""

    if TYPE_CHECKING:  # set by the writer (SummaryWriter._setup)
        _dir: str
        _plan: distributed.RankPlan
        _registry: Registry
        _targets: list[SinkTarget]
        _children: dict[str, Any]
        _file_writer: FileWriter | None
        _rank_sync: distributed.RankSync | None
        max_queue: int
        flush_secs: float
        filename_suffix: str
        purge_step: int | None
        sink_errors: str

        def _route_emit(self) -> None: ...

        def sync(self) -> None: ...

    _lock: threading.RLock
    _closed: bool
    _router: SinkRouter
    _routes: dict[RouteKey, list[Route]]

    def _use(self, router: SinkRouter) -> None:
        """Write through ``router`` from now on (``emit`` reads its routes directly)."""
        self._router = router
        self._routes = router.routes

    @property
    def _sinks(self) -> list[tuple[str, Sink]]:
        """The open sinks, as (name, sink), in the order of ``sinks=``."""
        return self._router.sinks

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
                    close_quietly(sink)
                raise
            for target, error in failed:
                warn_failed(target.text, "open", error)
            self.purge_step = None  # applied once, as torch does
            self._use(SinkRouter(self._registry, self.sink_errors, self._lock, opened))
            self._closed = False
        self._registry.call_lifecycle("writer_opened", self)

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
        self._router.call_each("flush", errors)
        raise_first(errors)

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
            self._router.call_each("close", errors)
            self._use(SinkRouter(self._registry, self.sink_errors, self._lock))
            self._closed = True
        raise_first(errors)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _after_fork(self) -> None:
        # The child must not touch the parent's files: drop them; the next add opens new ones.
        abandon = self._router
        self._lock = threading.RLock()
        self._use(SinkRouter(self._registry, self.sink_errors, self._lock))
        self._closed = True
        self._children.clear()
        abandon.abandon()


def _collect_error(errors: list[BaseException], fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:
        errors.append(exc)
