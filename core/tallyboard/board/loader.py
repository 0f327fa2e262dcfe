"""The provider's loader: reads what is new under the log dir, pass after pass, into the store.

Each pass is one :meth:`tallyboard.Reader.poll` (the incremental reader ``tallyboard.read`` and
``ls`` use too): it lists the log dir, says which runs appeared and which are gone, and reads
only the files that grew, from the byte offset the last read stopped at (on a store, only the
objects that changed are fetched). The runs gone are dropped from the store, the news put in.

A pass runs on its own thread, watched: a store that has given no sign of progress (a listing
done, a file read) for ``deadline`` seconds is reported stalled. Requests arriving before the
first pass is in wait for it (a deadline at most), so a page opened at once shows the runs.
Until a listing first succeeds the service answers every request with the failure's status;
afterwards it serves what it has while the store is away. A new pass never starts while a
stalled one still waits on the store.

Problems are logged once each (logger ``tallyboard.board``): a damaged record (the reader's
warning, with file and offset; what is readable is shown), a value that cannot be shown, a
failed or stalled listing or read (tried again next pass).
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


def _status(exc: BaseException) -> str:
    """The gRPC status code name for a failure to list the log dir."""
    if isinstance(exc, PermissionError):
        return "PERMISSION_DENIED"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or (
        isinstance(exc, ValueError) and "is not a directory" in str(exc)
    ):
        return "NOT_FOUND"
    if isinstance(exc, _Stalled):
        return "DEADLINE_EXCEEDED"
    return "UNAVAILABLE"


class _Stalled(OSError):
    """The store gave no sign of progress within the deadline."""


class _Poll:
    """One ``Reader.poll`` on its own thread, with the time of its last sign of progress."""

    def __init__(self, reader: Reader | None, make: Any) -> None:
        self.reader = reader
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.progress_at = time.monotonic()
        self.warnings: list[Any] = []
        self._make = make
        threading.Thread(target=self._run, name="tallyboard-board-poll", daemon=True).start()

    def _tick(self, files: int) -> None:
        self.progress_at = time.monotonic()

    def _run(self) -> None:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if self.reader is None:
                    self.reader = self._make()
                    self.progress_at = time.monotonic()
                self.result = self.reader.poll(progress=self._tick)
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
        self._poll: _Poll | None = None
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
            update = self._wait_poll()
        except Exception as exc:
            self._failed(exc)
        else:
            if update is not None:
                points = self._apply(update)
                self._listed.set()  # the first pass is in: requests held for it go on
        with self._pass_done:
            self.last_points = points
            self.passes += 1
            self._pass_done.notify_all()
        log.debug("pass %d: %d values in %.3f s", self.passes, points, time.monotonic() - start)
        return points

    def _make_reader(self) -> Reader:
        return Reader(self.logdir, workers=1)

    def _forget_listings(self) -> None:
        """Drop the store's cached listings (fsspec shares one file system instance per store):
        an object another client added to a known folder would be listed, then refused."""
        import fsspec

        fs = fsspec.core.url_to_fs(self.logdir)[0]
        if not getattr(fs, "local_file", False) and hasattr(fs, "invalidate_cache"):
            fs.invalidate_cache()

    def _wait_poll(self) -> Any:
        """The update of a poll, started now unless one is still waiting on the store (then
        that one's, when it is done); None while it still waits. Raises :class:`_Stalled` when
        it has shown no progress for the deadline, or what the poll raised."""
        poll = self._poll
        if poll is None or poll.done.is_set():
            self._forget_listings()
            poll = self._poll = _Poll(self._reader, self._make_reader)
        while not poll.done.wait(min(0.1, self.deadline)):
            idle = time.monotonic() - poll.progress_at
            if idle > self.deadline:
                raise _Stalled(
                    f"the store did not answer within {self.deadline:g} s (no listing or read "
                    "finished); still waiting for it"
                )
        self._reader = poll.reader
        for w in poll.warnings:
            if issubclass(w.category, ReadWarning):
                self.note(("warning", str(w.message)), str(w.message))
            else:  # another thread's (the capture is process-wide): shown as it would have been
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if poll.error is not None:
            raise poll.error
        self._listed_ok = True
        self._failure = None
        return poll.result

    def _failed(self, exc: BaseException) -> None:
        message = f"{self.logdir}: {exc}"
        if not self._listed_ok:
            self._failure = (_status(exc), message)
        key = ("stalled",) if isinstance(exc, _Stalled) else ("failed", message)
        self.note(key, f"{message} (tried again next pass)")
        self._listed.set()

    def _apply(self, update: Any) -> int:
        """Drop the runs gone, put the news in; the batches are let go one by one."""
        gone = set(update.removed)
        if gone:
            self.store.drop_runs(gone)
            for run in gone:
                self.ingest.forget(run)
            log.info("runs gone from %s: %s", self.logdir, ", ".join(sorted(gone)))
        self._noted.discard(("stalled",))
        points = 0
        batches = update.batches
        update.batches = {}
        for run in list(batches):
            points += self.ingest.add(run, batches.pop(run))
        return points
