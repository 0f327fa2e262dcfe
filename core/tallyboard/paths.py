"""Paths under a log directory: whatever a tag, key, run name or step says, nothing escapes it."""

from __future__ import annotations

import os
import re

_DRIVE = re.compile(r"^[A-Za-z]:")


def is_url(path: str) -> bool:
    """True for fsspec-style URLs such as ``s3://bucket/run`` or ``memory://x``."""
    return "://" in path and not _DRIVE.match(path)


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_relpath(rel: str, arg: str) -> str:
    """Validate a relative path built from user input; return it with '/' separators.

    Raises ValueError for anything that could leave the directory it is joined to: an absolute
    path, a drive letter, a ``..`` or empty component, a NUL or other control character.
    """
    if not isinstance(rel, str):
        raise TypeError(f"{arg} must be a str, got {type(rel).__name__}")
    problem = ""
    if not rel:
        problem = "it is empty"
    elif not rel.isascii() and not encodable(rel):
        problem = "it holds a lone surrogate, which no file name can hold as UTF-8"
    elif any(ord(c) < 32 for c in rel):
        problem = "it contains a control character (NUL, newline, ...)"
    elif rel.startswith(("/", "\\")) or _DRIVE.match(rel):
        problem = "it is an absolute path"
    else:
        parts = re.split(r"[/\\]", rel)
        if any(p in ("", ".", "..") for p in parts):
            problem = "it has an empty, '.' or '..' path component"
    if problem:
        raise ValueError(f"{arg} {rel!r} cannot be used as a path inside log_dir: {problem}")
    return rel.replace("\\", "/")


def join(base: str, rel: str) -> str:
    """Join a validated relative path to a local directory or a URL."""
    if is_url(base):
        return base.rstrip("/") + "/" + rel
    return os.path.join(base, *rel.split("/"))


def resolve_inside(base: str, rel: str, arg: str) -> str:
    """``join(base, rel)`` for a validated ``rel``, refusing a path that a symlink leads out of ``base``.

    ``base`` itself may be a symlink (runs on another disk); what must not happen is a symlink
    inside it, at ``rel`` or on the way there, pointing elsewhere. URLs have no symlinks.
    """
    path = join(base, rel)
    if is_url(base):
        return path
    root = os.path.realpath(base)
    real = os.path.realpath(path)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise ValueError(
            f"{arg} {rel!r} leads outside the log dir {base!r} through a symlink (to {real!r})"
        )
    return path


def check_log_dir(log_dir: str | os.PathLike[str], arg: str = "log_dir") -> None:
    """Refuse a local log dir that is a file, or lies under one, before anything is written.

    Every face calls this where it takes its log dir, so each says the same thing (a missing
    directory is fine: the writer creates it). URLs are left to their store.

    Raises:
        NotADirectoryError: ``log_dir``, or a folder on the way to it, is a file (or anything
            else that is not a directory).
    """
    path = os.fspath(log_dir)
    if is_url(path):
        return
    probe = os.path.abspath(path)
    while not os.path.isdir(probe):
        # (made a directory in between by another process, another rank: not an error)
        if os.path.lexists(probe) and not os.path.isdir(probe):
            where = (
                "is a file" if probe == os.path.abspath(path) else f"lies under the file {probe!r}"
            )
            raise NotADirectoryError(
                f"{arg} {path!r} {where}, not a directory: give the path of a directory for the"
                " run (one that does not exist yet is created)"
            )
        parent = os.path.dirname(probe)
        if parent == probe:
            return
        probe = parent
