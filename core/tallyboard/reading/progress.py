"""A progress bar for long reads, shown only in a terminal.

tqdm draws it when installed, else one line of counts; nothing is drawn when stderr is not a
terminal (a script's log stays clean), nor for a read that ends within ``delay`` seconds.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Counts files read out of ``total`` (None: not known); :meth:`close` ends the line.
    ``show``: True draws, False never does, None draws when stderr is a terminal."""

    def __init__(
        self, total: int | None, what: str = "read", delay: float = 1.0, show: bool | None = None
    ) -> None:
        self.total, self.what, self.delay = total, what, delay
        tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.on = tty if show is None else show
        self._bar: Any = None
        self._start = time.monotonic()
        self._drawn = False
        if self.on:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="file", desc=what, delay=delay, file=sys.stderr)

    def __call__(self, done: int) -> None:
        if not self.on:
            return
        if self._bar is not None:
            self._bar.update(done - self._bar.n)
        elif time.monotonic() - self._start >= self.delay:
            self._drawn = True
            of = "" if self.total is None else f"/{self.total}"
            print(f"\r{self.what}: {done}{of} files", end="", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._drawn:
            print(file=sys.stderr)
