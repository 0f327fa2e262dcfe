"""The note a reading command prints when a run holds its values in a format it did not read."""

from __future__ import annotations

import os
import stat
import sys

from tallyboard.reading.runs import RunReader

#: what a run's read files say in their first bytes when tallyboard wrote them (its event files
#: name their writer): the other formats beside them are then the mirror asked of it.
_OWN_MARK = b"tallyboard"
noted: set[str] = set()  # the notes said in this command (cleared when a command starts)


def note_skipped(reader: RunReader) -> None:
    """Say, once per command, which runs hold their values in another format too that was not
    read: only where that can surprise, not where tallyboard wrote both side by side (a
    ``SummaryRecord(..., tensorboard=True)`` or ``sinks=["tfevents", "csv"]`` run)."""
    by_names: dict[tuple[str, ...], list[str]] = {}
    for parent, names in sorted(reader.skipped.items()):
        if not _mirror_we_wrote(reader, parent, names):
            by_names.setdefault(tuple(sorted(names)), []).append(reader.run_of(parent))
    for formats, runs in by_names.items():
        shown = ", ".join(repr(r) for r in runs[:3]) + (
            f" and {len(runs) - 3} more" if len(runs) > 3 else ""
        )
        line = (
            f"note: run{'s' if len(runs) > 1 else ''} {shown} also hold{'' if len(runs) > 1 else 's'}"
            f" {', '.join(formats)} files with the same values; not read (--from {' --from '.join(formats)}"
            " reads them)"
        )
        if line not in noted:
            noted.add(line)
            print(line, file=sys.stderr)


def _mirror_we_wrote(reader: RunReader, parent: str, skipped: set[str]) -> bool:
    """Whether the files read in the run folder ``parent`` (those of a competing format not in
    ``skipped``) were each written by tallyboard. Local folders only: a remote store is not
    asked again for this."""
    from fsspec.implementations.local import LocalFileSystem

    from tallyboard.plugin.registry import get_registry

    if not isinstance(reader.fs, LocalFileSystem):
        return False
    read_here = [
        spec
        for spec in get_registry().readers.values()
        if spec.priority is not None and spec.name not in skipped
    ]
    try:
        names = os.listdir(parent)
    except OSError:
        return False
    files = [os.path.join(parent, n) for n in names if any(s.matches(n) for s in read_here)]
    return bool(files) and all(_OWN_MARK in _head(path) for path in files)


def _head(path: str) -> bytes:
    """The first bytes of the regular file ``path`` (b"" for anything else), never waiting in
    ``open`` (a FIFO put there)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)
