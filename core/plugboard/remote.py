"""Appending to files on remote storage through fsspec (completed in the remote-storage work)."""

from __future__ import annotations


class RemoteAppendFile:
    """An append-only object on an fsspec file system."""

    def __init__(self, path: str) -> None:
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        if fs.exists(root):
            raise FileExistsError(path)
        self.name = path
        self._fs = fs
        self._path = root
        self._file = fs.open(root, "wb")

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def flush(self) -> None:
        self._file.flush()

    def truncate(self, size: int) -> None:
        raise OSError(f"cannot truncate remote file {self.name}")

    def close(self) -> None:
        self._file.close()
