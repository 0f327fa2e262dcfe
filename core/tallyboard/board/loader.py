"""The provider's loader: reads what is new under the log dir, pass after pass, into the store.

A pass lists the log dir (under a deadline), drops the runs whose files are gone, and reads each
file from where the last pass stopped (the reader plugins keep byte offsets; on a store only the
objects that grew are fetched). What a file yields goes into the store at once, so a large first
load shows runs as they arrive. A local file is read a window of :data:`WINDOW` bytes at a
time, so memory holds one window's values besides the points kept, whatever the file's size.

Problems are logged once each (logger ``tallyboard.board``): a damaged record (the reader's
warning, with file and offset; what is readable is shown), a value that cannot be shown, a
failed listing or read (tried again next pass). Until a listing first succeeds, the service
answers every request with the failure's status.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import Any

from tallyboard.board.ingest import Ingest
from tallyboard.board.store import Store
from tallyboard.reading.fetch import Prefetched
from tallyboard.reading.runs import RunReader
from tallyboard.records.remote import bounded

log = logging.getLogger("tallyboard.board")

#: Bytes of a local file decoded at once (its values are then in the store, downsampled).
WINDOW = 32 << 20


class _Tree(RunReader):
    """A :class:`RunReader` that remembers the files of its last listing (deleted ones go)."""

    listed: set[str] = set()

    def _files(self) -> list[tuple[str, bool, int]]:
        found = super()._files()
        self.listed = {path for path, _, _ in found}
        return found


class _Capped:
    """A file system showing ``path`` as if it ended at ``limit`` bytes (a read window)."""

    def __init__(self, fs: Any, path: str, limit: int) -> None:
        self.fs, self.path, self.limit = fs, path, limit

    def open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        f = self.fs.open(path, mode, **kwargs)
        return _CappedFile(f, self.limit) if path == self.path and mode == "rb" else f

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fs, name)


class _CappedFile:
    def __init__(self, f: Any, limit: int) -> None:
        import os

        self._f = f
        real = getattr(f, "size", None)
        if not isinstance(real, int):
            real = os.fstat(f.fileno()).st_size
        self.size = min(real, limit)
        self.real_size = real

    def __enter__(self) -> _CappedFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def _status(exc: BaseException) -> str:
    """The gRPC status code name for a failure to list the log dir."""
    if isinstance(exc, PermissionError):
        return "PERMISSION_DENIED"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or (
        isinstance(exc, ValueError) and "is not a directory" in str(exc)
    ):
        return "NOT_FOUND"
    if isinstance(exc, OSError) and "did not finish within" in str(exc):
        return "DEADLINE_EXCEEDED"
    return "UNAVAILABLE"


class Loader:
    """Passes over the log dir into ``store``; also the service's gate (first listing)."""

    def __init__(self, logdir: str, store: Store, deadline: float) -> None:
        self.logdir = logdir
        self.store = store
        self.deadline = deadline
        self.ingest = Ingest(store, self.note)
        self._tree: _Tree | None = None
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
        return self._listed.wait(seconds)

    def failure(self) -> tuple[str, str] | None:
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
        """One pass; returns the points offered to the store."""
        start = time.monotonic()
        with self._pass_done:
            self.started += 1
        points = 0
        try:
            files = self._list()
        except Exception as exc:
            self._failed_listing(exc)
        else:
            points = self._read(files)
        with self._pass_done:
            self.last_points = points
            self.passes += 1
            self._pass_done.notify_all()
        log.debug("pass %d: %d points in %.3f s", self.passes, points, time.monotonic() - start)
        return points

    def _list(self) -> list[tuple[str, str, Any]]:
        what = f"listing {self.logdir}"
        if self._tree is None:
            self._tree = bounded(lambda: _Tree(self.logdir), what, self.deadline)
        tree = self._tree
        found = bounded(tree.discover, what, self.deadline)
        # files gone since the last listing: their readers go, and runs left with no file
        gone = [path for path in tree._open if path not in tree.listed]
        for path in gone:
            del tree._open[path]
        alive = {run for run, _ in tree._open.values()}
        dead = set(self.store.runs) - alive
        if dead:
            self.store.drop_runs(dead)
            for run in dead:
                self.ingest.forget(run)
                tree._chosen.pop(f"{tree.root}/{run}" if run != "." else tree.root, None)
            log.info("runs gone from %s: %s", self.logdir, ", ".join(sorted(dead)))
        if not self._listed_ok:
            self._listed_ok = True
            self._failure = None
        self._listed.set()
        return [(path, *tree._open[path]) for path in tree._open] if found is not None else []

    def _failed_listing(self, exc: BaseException) -> None:
        message = f"{self.logdir}: {exc}"
        if not self._listed_ok:
            self._failure = (_status(exc), message)
        self.note(("listing", message), f"{message} (tried again next pass)")
        self._listed.set()

    def _read(self, files: list[tuple[str, str, Any]]) -> int:
        tree = self._tree
        assert tree is not None
        points = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if not isinstance(tree._source, Prefetched):
                for path, run, reader in files:
                    points += self._read_local(path, run, reader, tree.size(path))
                    self._flush_warnings(caught)
            else:
                try:
                    for _path, run, batch in tree.iter_read(workers=1, discover=False):
                        points += self.ingest.add(run, batch)
                        self._flush_warnings(caught)
                except Exception as exc:  # a fetch failed: what was read stays; next pass
                    self.note(("read", str(exc)), f"{self.logdir}: {exc} (tried again next pass)")
            self._flush_warnings(caught)
        return points

    def _read_local(self, path: str, run: str, reader: Any, size: int) -> int:
        """Read what ``path`` gained, a window at a time; a file no larger than the offset the
        reader keeps is not even opened."""
        offset = getattr(reader, "offset", None)
        if not isinstance(offset, int) or not hasattr(reader, "fs"):
            return self._read_some(path, run, reader)  # a reader of its own kind: as it reads
        points = 0
        while reader.offset < size and not getattr(reader, "dead", False):
            before = reader.offset
            fs = reader.fs
            reader.fs = _Capped(fs, path, before + WINDOW)
            try:
                points += self._read_some(path, run, reader)
            finally:
                reader.fs = fs
            if reader.offset == before:  # a torn tail, or one unit wider than the window
                if size - before > WINDOW:
                    points += self._read_some(path, run, reader)
                break
        return points

    def _read_some(self, path: str, run: str, reader: Any) -> int:
        try:
            batch = reader.read_new()
        except FileNotFoundError:
            return 0  # deleted since the listing: gone at the next one
        except OSError as exc:
            self.note(("read", path, str(exc)), f"{path}: {exc} (tried again next pass)")
            return 0
        return self.ingest.add(run, batch)

    def _flush_warnings(self, caught: list[Any]) -> None:
        for w in caught:
            self.note(("warning", str(w.message)), str(w.message))
        del caught[:]
