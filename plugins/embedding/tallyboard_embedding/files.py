"""Whole-file writes under a log directory, local or fsspec URL, each atomic (temp file + rename)."""

from __future__ import annotations

import os
import uuid

from tallyboard.paths import is_url
from tallyboard.records import storage


def exists(path: str) -> tuple[bool, bool]:
    """(exists, is a directory) for a local path or URL."""
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        return bool(fs.exists(root)), bool(fs.exists(root) and fs.isdir(root))
    return os.path.lexists(path), os.path.isdir(path)


def read_text(path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        if not fs.exists(root):
            return None
        with fs.open(root, "rb") as f:
            return bytes(f.read()).decode("utf-8")
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        return None


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a part."""
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path)
        tmp = f"{root}.tmp-{uuid.uuid4().hex}"
        with fs.open(tmp, "wb") as f:
            f.write(data)
        fs.mv(tmp, root)
        return
    tmp = os.path.join(os.path.dirname(path), f".tmp-{uuid.uuid4().hex}-{os.path.basename(path)}")
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666
    )  # the umask applies, as for open()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


makedirs = storage.makedirs
