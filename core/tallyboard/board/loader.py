"""The provider's loader: reads what is new under the log dir, pass after pass, into the store.

Each pass is one :meth:`tallyboard.Reader.iter_poll` (the incremental reader, over the same
reader plugins as ``tallyboard.read`` and ``ls``): it lists the log dir, says which runs
appeared and which are gone, and reads only the files that grew, from the byte offset the last read stopped at (on a store,
only the bytes that changed are fetched), a window of :data:`WINDOW` bytes at a time. Each
window goes into the store as it comes, so memory holds one window's values besides the points
kept, and a long first load shows its runs as they arrive. Every call to a remote store runs
under the deadline (the reader's), and a pass that shows no progress for :func:`stall_after`
the deadline (twice it; a local file system that hangs) is reported stalled too. A stalled pass
goes on in the background; when it ends, the next pass first reports what it found (its
problems, its values) and then reads on. :meth:`Loader.stop` ends a pass between two windows.

Requests arriving before the first pass is in wait for it (until it would be reported stalled,
then they get what is there), so a page opened at once shows the runs; ``ListRuns`` waits only
until every run of the first listing is in the store's list of runs. A pass reads a little
ahead of what it puts into the store (at most :data:`READ_AHEAD` bytes of values, never more
than a window): each run read is listed, with its start, before its values go in, so on a log
dir of many small runs every run is listed as soon as the files are read, before the values are
all in. Until a listing first succeeds the service
answers every request with the failure's status; afterwards it serves what it has while the
store is away. A new pass never starts while a stalled one still waits on the store.

Problems are logged once each (logger ``tallyboard.board``): a damaged record (the reader's
warning, with file and offset; what is readable is shown), a value that cannot be shown, a
failed or stalled listing or fetch (tried again next pass, unless passes run only once).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, cast

import numpy as np

from tallyboard import paths
from tallyboard.board.follow import Follow
from tallyboard.board.ingest import Ingest
from tallyboard.board.store import Store
from tallyboard.plugin.readers import Batch
from tallyboard.reading.incremental import Reader
from tallyboard.warn import ReadWarning, own_prefixes

log = logging.getLogger("tallyboard.board")

#: Bytes of a file decoded at once (its values then go into the store, downsampled).
WINDOW = 32 << 20
#: Bytes of values (about) a pass holds read but not yet in the store (at most a window's).
READ_AHEAD = 8 << 20
#: A pass that shows no progress for this many deadlines is reported stalled.
STALL_DEADLINES = 2


def stall_after(deadline: float) -> float:
    """Seconds without progress after which a pass counts as stalled: the loader reports it
    then, and the service waits that long (and a little) for the first listing."""
    return STALL_DEADLINES * deadline


def is_not_a_directory(exc: BaseException) -> bool:
    """Whether ``exc`` says the log dir is not a directory (the reader raises
    ``NotADirectoryError``; older readers a ``ValueError`` saying so)."""
    return isinstance(exc, (FileNotFoundError, NotADirectoryError)) or (
        isinstance(exc, ValueError) and "is not a directory" in str(exc)
    )


def _status(exc: BaseException) -> str:
    """The gRPC status code name for a failure to list the log dir."""
    if isinstance(exc, PermissionError):
        return "PERMISSION_DENIED"
    if is_not_a_directory(exc):
        return "NOT_FOUND"
    if isinstance(exc, TimeoutError):
        return "DEADLINE_EXCEEDED"
    return "UNAVAILABLE"


class _Stalled(TimeoutError):
    """A pass gave no sign of progress within :func:`stall_after` the deadline."""


class _Stopped(Exception):
    """The loader was stopped while a pass ran."""


class _Pass:
    """One pass (a poll read into the store) on its own thread, with the time of its last sign
    of progress."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.stop = loader._stop
        self.points = 0
        self.error: BaseException | None = None
        self.done = threading.Event()
        #: its results (problems, values) reported by a :meth:`Loader.load`
        self.handled = False
        self.progress_at = time.monotonic()
        self.warnings: list[Any] = []
        self.failed: list[str] = []
        threading.Thread(target=self._run, name="tallyboard-board-pass", daemon=True).start()

    def _tick(self, files: int = 0) -> None:
        self.progress_at = time.monotonic()

    def _run(self) -> None:
        loader = self.loader
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if loader._reader is None:
                    loader._reader = Reader(
                        loader.logdir, workers=1, deadline=loader.deadline, summaries=True
                    )
                    self._tick()
                reader = loader._reader
                # a generator (closed below, so the reader commits no window not taken)
                news = cast(
                    "Generator[tuple[str, Batch], None, None]",
                    reader.iter_poll(max_bytes=WINDOW, progress=self._tick),
                )
                try:
                    got = next(news, None)  # the listing is done: runs added and removed known
                    self._tick()
                    loader._listed_once()
                    update = reader.last_update
                    if not self.stop.is_set():
                        loader._drop(set(update.removed))
                    self._put(news, got)
                finally:
                    news.close()
                    loader.store.publish()
                self.failed = list(update.failed)
            self.warnings = caught
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def _put(self, news: Generator[tuple[str, Batch], None, None], got: Any) -> None:
        """Put every batch of ``news`` (``got``: the first, or None) into the store, reading
        ahead: each run is listed as soon as a batch of it is read (values or not), and once
        all are read the loader says so (:meth:`Loader.wait_runs`), while the values read
        ahead still go in. Stop is looked at between windows (what was read ahead is then
        dropped: the provider is going away)."""
        loader = self.loader
        ahead: deque[tuple[str, Batch, int]] = deque()
        held, limit = 0, min(READ_AHEAD, WINDOW)
        while True:
            while got is not None and (held < limit or not ahead) and not self.stop.is_set():
                loader._started(*got)
                ahead.append((*got, _weight(got[1])))
                held += ahead[-1][2]
                got = next(news, None)
                self._tick()
            if self.stop.is_set():
                return
            if got is None:
                loader._all_listed()
            if not ahead:
                return
            run, batch, weight = ahead.popleft()
            held -= weight
            with np.errstate(over="ignore"):  # 1e300 as float32 is inf, as in files
                self.points += loader.ingest.add(run, batch)
            del batch
            self._tick()


def _weight(batch: Batch) -> int:
    """About the bytes ``batch`` holds (its values and its objects), to bound what a pass
    holds read ahead."""
    scalars = len(batch.tags) + sum(len(c[1]) for c in batch.columns)
    rows = sum(len(r) for r in batch.rows.values())
    return 2048 + 32 * scalars + 512 * rows + sum(len(s[2]) for s in batch.summaries)


def _earliest(batch: Batch) -> float | None:
    """The earliest wall time of ``batch``'s values (None: it holds none)."""
    walls: list[float] = [min(batch.wall_times)] if batch.wall_times else []
    walls += [float(c[3].min()) for c in batch.columns if len(c[3])]
    for rows in batch.rows.values():
        walls += [w for r in rows if isinstance(w := r.get("wall_time"), (int, float))]
    return min(walls) if walls else None


class Loader:
    """Passes over the log dir into ``store``; also the service's gate (first listing)."""

    def __init__(
        self, logdir: str, store: Store, deadline: float, reader: Reader | None = None
    ) -> None:
        self.logdir = logdir
        self.store = store
        self.deadline = deadline
        self._ingest: Ingest | None = None
        #: the log dir's reader; None until a pass makes it (when making it failed in
        #: :func:`~tallyboard.board.serve`: a store away)
        self._reader = reader
        self._pass: _Pass | None = None
        self._listed = threading.Event()
        self._runs = threading.Event()
        self._listed_ok = False
        self._failure: tuple[str, str] | None = None
        self._noted: set[Any] = set()
        #: every distinct problem logged, in order (for tests and ``status``)
        self.problems: list[str] = []
        #: passes finished, and a condition notified after each
        self.passes = 0
        #: passes started
        self.started = 0
        #: True when one pass is all there will be (no reload)
        self.once = False
        #: values the last pass read (what was new)
        self.last_points = 0
        #: whether the last pass listed and read without failing or stalling
        self.last_ok = False
        self._pass_done = threading.Condition()
        self._wake = threading.Event()  # a pass asked for now (wake, wait_fresh, stop)
        self._changed = threading.Event()  # the kernel said something changed (Follow)
        self._stir = threading.Event()  # either: the wait between passes looks again
        #: when the last pass started for a change began (at most one such per interval)
        self._followed_at = -math.inf
        self._follow: Follow | None = None
        self._stop = threading.Event()
        self._late_points = 0  # values of a stalled pass reported by the next

    # -- the gate ------------------------------------------------------------------------------

    def wait_listed(self, seconds: float) -> bool:
        """True once the first pass is in the store, or failed, within ``seconds``."""
        return self._listed.wait(seconds)

    def set_reader(self, reader: Reader | None) -> None:
        """Read the log dir with ``reader`` (made by :func:`~tallyboard.board.serve` once the
        service listens; None: the first pass makes it). Before :meth:`run` only."""
        self._reader = reader

    def wait_runs(self, seconds: float) -> bool:
        """True once every run of the first listing is in the store's list of runs (its values
        may still be going in), or the first pass is in or failed, within ``seconds``."""
        return self._runs.wait(seconds)

    @property
    def ingest(self) -> Ingest:
        """The bridge from batches to series, made when the first values go in (it imports
        TensorBoard's migrations: not before the runs are listed)."""
        if self._ingest is None:
            self._ingest = Ingest(self.store, self.note)
        return self._ingest

    def failure(self) -> tuple[str, str] | None:
        """``(status code name, message)`` while no listing ever succeeded and one failed, or
        ``UNAVAILABLE`` once :meth:`stop` was called (the provider is going away)."""
        if self._stop.is_set():
            return "UNAVAILABLE", f"the provider of {self.logdir} is stopping"
        return None if self._listed_ok else self._failure

    # -- problems, once each ---------------------------------------------------------------------

    def note(self, key: Any, message: str, level: int = logging.WARNING) -> None:
        """Log ``message`` the first time ``key`` is met."""
        if key in self._noted:
            return
        self._noted.add(key)
        self.problems.append(message)
        log.log(level, message)

    # -- passes ------------------------------------------------------------------------------------

    def wait_pass(self, after: int, timeout: float) -> bool:
        """Wait until more than ``after`` passes are done; False on timeout."""
        with self._pass_done:
            return self._pass_done.wait_for(lambda: self.passes > after, timeout)

    def wait_fresh(self, timeout: float) -> bool:
        """Start a pass now (or right after the one under way) and wait until it is done:
        everything written before this call is then served (when passes run only once, wait
        for that one). False on timeout, or when that pass failed or stalled (the reason is in
        :attr:`problems` and the log)."""
        with self._pass_done:
            started = 0 if self.once else self.started
            self.wake()
        with self._pass_done:
            done = self._pass_done.wait_for(lambda: self.passes > started, timeout)
            return done and self.last_ok

    def wake(self) -> None:
        """Start the next pass now instead of after the reload interval."""
        self._wake.set()
        self._stir.set()

    def changed(self) -> None:
        """Something under the log dir changed (the kernel says): the next pass starts now,
        unless a pass started for a change less than the reload interval ago."""
        self._changed.set()
        self._stir.set()

    def stop(self, timeout: float) -> bool:
        """Stop passing: the pass under way stops at its next window (nothing more goes into
        the store) and :meth:`run` returns; requests waiting for the first listing are released
        at once (answered ``UNAVAILABLE``: :meth:`failure`). Waits up to ``timeout`` seconds
        for the pass to end; False when it did not (stuck in a call to the store, or in a
        window being read)."""
        self._stop.set()
        self.wake()
        self._listed.set()
        self._runs.set()
        if self._follow is not None:
            self._follow.stop()
        run = self._pass
        return run is None or run.done.wait(timeout)

    def run(self, interval: float, follow: bool = False) -> None:
        """Passes until :meth:`stop`, ``interval`` seconds apart (one pass when 0); with
        ``follow``, on a local log dir the kernel's change events start one sooner
        (:mod:`~tallyboard.board.follow`, watching from the end of the first pass)."""
        self.once = interval <= 0
        try:
            while not self._stop.is_set():
                for event in (self._wake, self._changed, self._stir):
                    event.clear()
                self.load()
                if interval <= 0:
                    return
                if follow and self._follow is None and not paths.is_url(self.logdir):
                    self._follow = Follow(self.logdir, self.changed, self._not_followed(interval))
                    if self._stop.is_set():  # stop() came before it was there to stop
                        self._follow.stop()
                if self._rest(interval):
                    self._followed_at = time.monotonic()
        finally:
            if self._follow is not None:
                self._follow.stop()

    def _not_followed(self, interval: float) -> Callable[[], None]:
        def say() -> None:
            log.warning(
                "changes under %s are read every %g s (--reload), not as they happen: its "
                "folders cannot all be watched (a network file system, or too few inotify "
                "watches: sysctl fs.inotify.max_user_watches)",
                self.logdir,
                interval,
            )

        return say

    def _rest(self, interval: float) -> bool:
        """Wait ``interval`` seconds before the next pass, less when woken or when a change
        is seen (then as soon as ``interval`` has passed since the last pass started for a
        change); True when the next pass is for a change."""
        deadline = time.monotonic() + interval
        while not (self._stop.is_set() or self._wake.is_set()):
            now = time.monotonic()
            if now >= deadline:
                return False
            until = deadline
            if self._changed.is_set():
                if now >= self._followed_at + interval:
                    return True
                until = min(deadline, self._followed_at + interval)
            self._stir.wait(until - now)
            self._stir.clear()
        return False

    def load(self) -> int:
        """One pass; returns the values put into the store."""
        start = time.monotonic()
        with self._pass_done:
            self.started += 1
        points, ok = 0, False
        try:
            points = self._wait_pass()
            ok = not self._stop.is_set()
        except _Stopped:
            pass
        except Exception as exc:
            self._failed(exc)
        with self._pass_done:
            points += self._late_points
            self._late_points = 0
            self.last_points = points
            self.last_ok = ok
            self.passes += 1
            self._pass_done.notify_all()
        log.debug("pass %d: %d values in %.3f s", self.passes, points, time.monotonic() - start)
        return points

    def _wait_pass(self) -> int:
        """Run a pass (unless a stalled one still runs: then wait for that one) and return the
        values it put in. Raises what the pass raised, :class:`_Stalled` when it has shown no
        progress for :func:`stall_after` the deadline, or :class:`_Stopped`. A stalled pass
        that has ended since is reported first (its values count in :attr:`last_points`)."""
        run = self._pass
        if run is not None and run.done.is_set() and not run.handled:
            try:
                self._late_points += self._handle(run)
            except Exception as exc:  # what it failed with, reported; this pass reads on
                self._failed(exc)
        if run is None or run.done.is_set():
            if self._stop.is_set():
                raise _Stopped
            run = self._pass = _Pass(self)
        stall = stall_after(self.deadline)
        while not run.done.wait(0.05):
            if self._stop.is_set():
                raise _Stopped
            if time.monotonic() - run.progress_at > stall:
                raise _Stalled(
                    f"no listing or read finished for {stall:g} s; still waiting for the store"
                )
        return self._handle(run)

    def _handle(self, run: _Pass) -> int:
        """Report what the ended pass ``run`` found; its values, or raise what it raised."""
        run.handled = True
        own = own_prefixes()
        for w in run.warnings:
            if issubclass(w.category, ReadWarning):
                self.note(("warning", str(w.message)), str(w.message))
            elif os.path.abspath(w.filename).startswith(own):  # tallyboard's: a log line
                what = f"{w.category.__name__}: {w.message}"
                self.note(("warning", what), what)
            else:  # another thread's (the capture is process-wide): shown as it would have been
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if run.error is not None:
            raise run.error
        self._noted.discard(("stalled",))
        for path in run.failed:
            self.note(("fetch", path), f"{path}: could not be read this pass{self._again()}")
        self._all_listed()
        self._listed.set()
        return run.points

    def _started(self, run: str, batch: Batch) -> None:
        """A batch of ``run`` arrived: the run is served from now on, values or not (as
        TensorBoard lists a run with a file), and its start is its file's first event when the
        reader says it (``Batch.start_time``), else its earliest value's (a format with no
        header), so the run is listed before its values go in."""
        got = self.store.run(run)
        got.began(getattr(batch, "start_time", None))
        if got.start_time is None:
            first = _earliest(batch)
            if first is not None:
                got.saw(first)

    def _all_listed(self) -> None:
        """Every run the pass read is in the store's list of runs: served from now on."""
        self.store.publish()
        self._runs.set()

    def _listed_once(self) -> None:
        """A listing succeeded: from now on the service serves what the store holds."""
        self._listed_ok = True
        self._failure = None

    def _drop(self, gone: set[str]) -> None:
        """Stop serving the runs whose files are all gone."""
        if gone:
            self.store.drop_runs(gone)
            if self._ingest is not None:
                for run in gone:
                    self._ingest.forget(run)
            log.info("runs gone from %s: %s", self.logdir, ", ".join(sorted(gone)))

    def _failed(self, exc: BaseException) -> None:
        message = f"{self.logdir}: {exc}"
        if not self._listed_ok:
            self._failure = (_status(exc), message)
        key = ("stalled",) if isinstance(exc, TimeoutError) else ("failed", message)
        self.note(key, message + self._again())
        self._listed.set()
        self._runs.set()

    def _again(self) -> str:
        """What happens next to what failed, for the messages."""
        return " (not tried again: reload is 0)" if self.once else " (tried again next pass)"
