"""Files under a log directory: local paths, or URLs through fsspec.

Sinks open files here so that every sink gets the same guarantees: a new file is created
exclusively (never truncating or sharing another writer's file), and appends go straight to the
operating system so nothing sits in a user-space buffer a forked child could duplicate. On
remote storage (any fsspec URL) appends are uploaded as part objects, so the bytes sent grow
linearly with the data (see :mod:`tallyboard.records.remote`).

Helpers for sinks that write text lines (CSV, JSONL, logs): :func:`create_unique` picks a free
file name, :class:`BatchWriter` batches lines, :func:`write_new` writes a whole side file.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from tallyboard.paths import is_url, join


class AppendFile(Protocol):
    """A file opened for appending by one writer."""

    name: str

    def write(self, data: bytes) -> None: ...

    def flush(self) -> None: ...

    def truncate(self, size: int) -> None: ...

    def close(self) -> None: ...


class LocalAppendFile:
    """An exclusively created local file written with unbuffered appends."""

    def __init__(self, path: str) -> None:
        self.name = path
        self._file = open(path, "xb", buffering=0)  # noqa: SIM115 - lifetime managed by the writer

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._file.write(view)
            if not written:
                raise OSError(f"short write to {self.name}")
            view = view[written:]

    def flush(self) -> None:
        """Bytes are already with the OS after each write; nothing is buffered here."""

    def truncate(self, size: int) -> None:
        self._file.truncate(size)
        self._file.seek(size)

    def tell(self) -> int:
        """Bytes in the file so far (after a failed write: how far it got)."""
        return self._file.seek(0, os.SEEK_END)

    def close(self) -> None:
        self._file.close()

    def fsync(self) -> None:
        os.fsync(self._file.fileno())


def makedirs(path: str) -> None:
    """Create a directory (and parents) if it does not exist."""
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        fs.makedirs(root, exist_ok=True)
    else:
        os.makedirs(path, exist_ok=True)


def create_exclusive(path: str) -> AppendFile:
    """Create ``path`` for appending; FileExistsError if it already exists."""
    if is_url(path):
        from tallyboard.records.remote import RemoteAppendFile

        return RemoteAppendFile(path)
    return LocalAppendFile(path)


def create_unique(log_dir: str, stem: str, ext: str) -> tuple[str, AppendFile]:
    """Create ``<log_dir>/<stem><ext>`` or, if taken, ``<stem>.1<ext>``, ``<stem>.2<ext>`` ...

    Never truncates or shares an existing file. Returns the path and the open file.
    """
    makedirs(log_dir)
    n = 0
    while True:
        name = f"{stem}{ext}" if n == 0 else f"{stem}.{n}{ext}"
        path = join(log_dir, name)
        try:
            return path, create_exclusive(path)
        except FileExistsError:
            n += 1


def write_new(path: str, data: bytes) -> None:
    """Write a whole new file (never overwriting one): binary payloads next to a sink's file."""
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        if fs.exists(root):
            raise FileExistsError(path)
        fs.pipe_file(root, data)
        return
    with open(path, "xb") as f:
        f.write(data)


class BatchWriter:
    """Collect encoded lines and append them to a file in batches.

    Lines reach the file every ``max_lines`` lines, when the oldest waiting line is older than
    ``flush_secs`` (checked at the next write), and on :meth:`flush` / :meth:`close`. ``header``
    is written first. After a fork, :meth:`abandon` drops the parent's lines in the child.

    A line may be given as a function that makes it (a value still on a device, an image to
    encode): it is called when its batch is written, in order, not in :meth:`write`. If it
    raises, the other lines are still written and the error is raised once: by the next
    :meth:`write` (which then takes its line only once called again), or by :meth:`flush` or
    :meth:`close` after they have written everything else.
    """

    def __init__(
        self,
        handle: AppendFile,
        *,
        header: bytes = b"",
        max_lines: int = 10,
        flush_secs: float = 120.0,
    ):
        self.handle = handle
        self.name = handle.name
        self._lines: list[str | Callable[[], str]] = []
        self._max_lines = max(1, int(max_lines))
        self._flush_secs = float(flush_secs)
        self._since = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._abandoned = False
        self._error: BaseException | None = None
        if header:
            handle.write(header)

    def write(self, line: str | Callable[[], str]) -> None:
        """Queue one line (with its newline), or a function that makes it when written."""
        if self._error is not None:
            self._raise_error()
        lines = self._lines
        if not lines:
            if self._closed:
                raise ValueError(f"write to closed file {self.name}")
            self._since = time.monotonic()
        lines.append(line)
        if len(lines) >= self._max_lines or time.monotonic() - self._since >= self._flush_secs:
            self._write_out()

    def _write_out(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
            if lines and not self._abandoned:
                self.handle.write("".join(map(self._made, lines)).encode("utf-8"))

    def _made(self, line: str | Callable[[], str]) -> str:
        if type(line) is str:
            return line
        try:
            return line()  # type: ignore[operator]
        except Exception as exc:  # the other lines are still written
            self._error = self._error or exc
            return ""

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        assert error is not None
        raise error

    def flush(self) -> None:
        """Write every queued line and flush the file (uploads a part on remote storage)."""
        if self._closed or self._abandoned:
            return
        self._write_out()
        self.handle.flush()
        if self._error is not None:
            self._raise_error()

    def close(self) -> None:
        """Flush and release the file; idempotent, and the file is released even on error."""
        if self._closed:
            return
        self._closed = True
        if self._abandoned:
            return
        try:
            self._write_out()
            self.handle.flush()
        finally:
            self.handle.close()
        if self._error is not None:
            self._raise_error()

    def abandon(self) -> None:
        """In a forked child: forget queued lines, never touch the parent's file."""
        self._abandoned = True
        self._closed = True
        self._lines = []
        self._lock = threading.Lock()
