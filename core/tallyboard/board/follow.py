"""The kernel's word that something changed under a local log dir, so the loader polls at once.

Between two reloads the provider would see a new value only at its next poll (``--reload``
seconds apart). On Linux, :class:`Follow` watches every folder of a local log dir through the
reader's own inotify wrapper (:class:`tallyboard.reading.watch.Watch`) and tells the loader when
one changes; the loader then polls at once, but starts at most one such poll per reload
interval, so a run written to all the time is still read once per interval. Where the tree
cannot be watched whole (a file system other hosts change, no watch left) it gives up and says
so once; with no kernel events at all (not Linux) it says nothing. Either way the polls keep
their interval.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from tallyboard.reading.watch import Watch

#: Seconds between two looks at the kernel's events.
EVERY = 0.05


class Follow:
    """Calls ``changed()`` (from its own thread) each time a look finds that a folder or file
    under ``logdir`` changed, and ``gave_up()`` once if the tree cannot be watched whole (a
    file system other hosts change, no watch left; not called when there are no kernel events
    at all, nor when stopped); :meth:`stop` ends it."""

    def __init__(
        self,
        logdir: str,
        changed: Callable[[], None],
        gave_up: Callable[[], None] = lambda: None,
    ) -> None:
        self._stop = threading.Event()
        self._gave_up = gave_up
        #: set once every folder is watched (for tests); cleared when it gives up or stops
        self.watching = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(logdir, changed), name="tallyboard-board-follow", daemon=True
        )
        self._thread.start()

    def _run(self, logdir: str, changed: Callable[[], None]) -> None:
        watch = Watch.open(logdir)
        if watch is None:  # no kernel events here (not Linux): polls as TensorBoard's
            return
        try:
            if not _watch_tree(watch, logdir, self._stop):
                self._give_up()
                return
            self.watching.set()
            while not self._stop.wait(EVERY):
                try:
                    got = watch.changes()
                except ValueError:  # its instance was closed under it: the interpreter exits
                    return
                if not (got.lost or got.folders or got.files):
                    continue
                for path in got.created:  # a new run's folder: watched too
                    if os.path.isdir(path) and not _watch_tree(watch, path, self._stop):
                        self._give_up()
                        return
                changed()
        finally:
            self.watching.clear()
            watch.close()

    def stop(self) -> None:
        """Stop watching (within :data:`EVERY` seconds)."""
        self._stop.set()

    def _give_up(self) -> None:
        if not self._stop.is_set():
            self._gave_up()


def _watch_tree(watch: Watch, root: str, stop: threading.Event) -> bool:
    """Watch every folder under ``root``; False when one cannot be watched, or once ``stop`` is
    set (a tree of thousands of runs takes a while)."""
    for folder, _, _ in os.walk(root):
        if stop.is_set():
            return False
        try:
            dev = os.stat(folder).st_dev
        except OSError:  # gone since listed: its parent's events say so
            continue
        if not watch.add(folder, dev):
            return False
    return True
