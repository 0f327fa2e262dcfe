"""The provider's loader: reads what is new under the log dir, pass after pass, into the store.

Each pass is one :meth:`tallyboard.Reader.iter_poll` (the incremental reader ``tallyboard.read``
and ``ls`` use too): it lists the log dir, says which runs appeared and which are gone, and
reads only the files that grew, from the byte offset the last read stopped at (on a store,
only the bytes that changed are fetched), a window of :data:`WINDOW` bytes at a time. Each
window goes into the store as it comes, so memory holds one window's values besides the points
kept, and a long first load shows its runs as they arrive. Every call to a remote store runs
under the deadline (the reader's), and a pass that shows no progress for twice the deadline
(a local file system that hangs) is reported stalled too.

Requests arriving before the first pass is in wait for it (a deadline at most, then they get
what is there), so a page opened at once shows the runs. Until a listing first succeeds the service
answers every request with the failure's status; afterwards it serves what it has while the
store is away. A new pass never starts while a stalled one still waits on the store.

Problems are logged once each (logger ``tallyboard.board``): a damaged record (the reader's
warning, with file and offset; what is readable is shown), a value that cannot be shown, a
failed or stalled listing or fetch (tried again next pass).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import Any

from tallyboard.board.ingest import Ingest
from tallyboard.board.store import Store
from tallyboard.reading.incremental import Reader
from tallyboard.warn import ReadWarning

log = logging.getLogger("tallyboard.board")

#: Bytes of a file decoded at once (its values then go into the store, downsampled).
WINDOW = 32 << 20


def _status(exc: BaseException) -> str:
    """The gRPC status code name for a failure to list the log dir."""
    if isinstance(exc, PermissionError):
        return "PERMISSION_DENIED"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or (
        isinstance(exc, ValueError) and "is not a directory" in str(exc)
    ):
        return "NOT_FOUND"
    if isinstance(exc, TimeoutError):
        return "DEADLINE_EXCEEDED"
    return "UNAVAILABLE"


class _Stalled(TimeoutError):
    """A pass gave no sign of progress within twice the deadline."""


class _Pass:
    """One pass (a poll read into the store) on its own thread, with the time of its last sign
    of progress."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.points = 0
        self.error: BaseException | None = None
        self.done = threading.Event()
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
                    loader._reader = Reader(loader.logdir, workers=1, deadline=loader.deadline)
                    self._tick()
                reader = loader._reader
                news = reader.iter_poll(max_bytes=WINDOW, progress=self._tick)
                first = next(news, None)  # the listing is done: runs added and removed known
                self._tick()
                loader._listed_once()
                update = reader.last_update
                loader._drop(set(update.removed))
                if first is not None:
                    self.points += loader.ingest.add(*first)
                    del first
                    for run, batch in news:
                        self.points += loader.ingest.add(run, batch)
                        self._tick()
                self.failed = list(update.failed)
            self.warnings = caught
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


class Loader:
    """Passes over the log dir into ``store``; also the service's gate (first listing)."""

    def __init__(self, logdir: str, store: Store, deadline: float) -> None:
        self.logdir = logdir
        self.store = store
        self.deadline = deadline
        self.ingest = Ingest(store, self.note)
        self._reader: Reader | None = None
        self._pass: _Pass | None = None
        self._listed = threading.Event()
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
        self._pass_done = threading.Condition()
        self._wake = threading.Event()

    # -- the gate ------------------------------------------------------------------------------

    def wait_listed(self, seconds: float) -> bool:
        """True once the first pass is in the store, or failed, within ``seconds``."""
        return self._listed.wait(seconds)

    def failure(self) -> tuple[str, str] | None:
        """``(status code name, message)`` while no listing ever succeeded and one failed."""
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
        for that one). False on timeout."""
        with self._pass_done:
            started = 0 if self.once else self.started
            self._wake.set()
        return self.wait_pass(started, timeout)

    def wake(self) -> None:
        """Start the next pass now instead of after the reload interval."""
        self._wake.set()

    def run(self, stop: threading.Event, interval: float) -> None:
        """Passes until ``stop`` is set, ``interval`` seconds apart (one pass when 0)."""
        self.once = interval <= 0
        while not stop.is_set():
            self._wake.clear()
            self.load()
            if interval <= 0:
                return
            self._wake.wait(interval)

    def load(self) -> int:
        """One pass; returns the values put into the store."""
        start = time.monotonic()
        with self._pass_done:
            self.started += 1
        points = 0
        try:
            points = self._wait_pass()
        except Exception as exc:
            self._failed(exc)
        with self._pass_done:
            self.last_points = points
            self.passes += 1
            self._pass_done.notify_all()
        log.debug("pass %d: %d values in %.3f s", self.passes, points, time.monotonic() - start)
        return points

    def _wait_pass(self) -> int:
        """Run a pass (unless a stalled one still runs: then wait for that one) and return the
        values it put in. Raises what the pass raised, or :class:`_Stalled` when it has shown no
        progress for twice the deadline."""
        run = self._pass
        if run is None or run.done.is_set():
            run = self._pass = _Pass(self)
        while not run.done.wait(0.05):
            if time.monotonic() - run.progress_at > 2 * self.deadline:
                raise _Stalled(
                    f"no listing or read finished for {2 * self.deadline:g} s; still waiting "
                    "for the store"
                )
        for w in run.warnings:
            if issubclass(w.category, ReadWarning):
                self.note(("warning", str(w.message)), str(w.message))
            else:  # another thread's (the capture is process-wide): shown as it would have been
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if run.error is not None:
            raise run.error
        self._noted.discard(("stalled",))
        for path in run.failed:
            self.note(("fetch", path), f"{path}: could not be read this pass (tried again next)")
        self._listed.set()
        return run.points

    def _listed_once(self) -> None:
        """A listing succeeded: from now on the service serves what the store holds."""
        self._listed_ok = True
        self._failure = None

    def _drop(self, gone: set[str]) -> None:
        """Stop serving the runs whose files are all gone."""
        if gone:
            self.store.drop_runs(gone)
            for run in gone:
                self.ingest.forget(run)
            log.info("runs gone from %s: %s", self.logdir, ", ".join(sorted(gone)))

    def _failed(self, exc: BaseException) -> None:
        message = f"{self.logdir}: {exc}"
        if not self._listed_ok:
            self._failure = (_status(exc), message)
        key = ("stalled",) if isinstance(exc, TimeoutError) else ("failed", message)
        self.note(key, f"{message} (tried again next pass)")
        self._listed.set()
