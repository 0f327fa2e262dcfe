"""Files under a log directory: local paths, or URLs through fsspec.

Sinks open files here so that every sink gets the same guarantees: a new file is created
exclusively (never truncating or sharing another writer's file), and appends go straight to the
operating system so nothing sits in a user-space buffer a forked child could duplicate.
"""

from __future__ import annotations

import os
from typing import Protocol

from .paths import is_url


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
        from .remote import RemoteAppendFile

        return RemoteAppendFile(path)
    return LocalAppendFile(path)
