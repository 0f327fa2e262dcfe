"""Run discovery and incremental reads: every file a reader plugin recognises under a log dir."""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterable

from tallyboard.plugin.readers import Batch, FileReader, ReaderSpec
from tallyboard.warn import ReadWarning


def _format_names(
    formats: str | Iterable[str] | None, readers: dict[str, ReaderSpec]
) -> set[str] | None:
    if formats is None:
        return None
    names = {formats} if isinstance(formats, str) else formats
    if not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"formats must be None, a str or an iterable of str, got {formats!r}")
    unknown = sorted(set(names) - set(readers))
    if unknown:
        raise ValueError(
            f"formats: unknown format(s) {unknown}; readable formats: {sorted(readers)}"
        )
    return set(names)


def local_files(root: str) -> list[tuple[str, bool]]:
    """``(path, regular)`` for every file under the local directory ``root``, symlinked folders
    followed as TensorBoard follows them, but never into a folder the path is already inside (a
    link loop); ``regular`` is False for a FIFO, socket, device or dangling link, which are
    never opened (a FIFO would block the reader)."""
    out: list[tuple[str, bool]] = []
    st = os.stat(root)
    todo = [(root, frozenset({(st.st_dev, st.st_ino)}))]
    while todo:
        top, inside = todo.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                st = os.stat(entry.path)
            except OSError:
                out.append((entry.path, False))
                continue
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key not in inside:
                    todo.append((entry.path, inside | {key}))
            else:
                out.append((entry.path, stat.S_ISREG(st.st_mode)))
    return out


def _reader_for(readers: dict[str, ReaderSpec], basename: str) -> ReaderSpec | None:
    for spec in readers.values():
        if spec.matches(basename):
            return spec
    return None


class RunReader:
    """Reads every recognised file under a log dir; calling :meth:`read` again yields only new data.

    Runs are directories holding readable files, named by their path relative to the log dir
    (``"."`` for the log dir itself).
    """

    def __init__(
        self, logdir: str, formats: str | Iterable[str] | None = None, kind: str | None = None
    ) -> None:
        import fsspec

        from tallyboard.plugin.registry import get_registry

        if not isinstance(logdir, str) or not logdir:
            raise TypeError(f"logdir must be a non-empty str path or URL, got {logdir!r}")
        reg = get_registry()
        self._readers = reg.readers
        self._decoders = reg.decoders
        self.formats = _format_names(formats, self._readers)
        self.kind = kind
        self.fs, root = fsspec.core.url_to_fs(logdir)
        self.root = root.rstrip("/") or "/"
        if not self.fs.isdir(self.root):
            raise ValueError(f"logdir {logdir!r} is not a directory")
        self._open: dict[str, tuple[str, FileReader]] = {}
        self._not_files: set[str] = set()  # special files already reported
        self._chosen: dict[str, str] = {}  # run directory -> the competing format read there
        #: run directory -> competing formats found there but not read (same values again).
        self.skipped: dict[str, set[str]] = {}

    def _choose(self, parent: str, present: set[str]) -> str | None:
        """The competing format read in ``parent``: kept once chosen, so re-reads stay whole."""
        chosen = self._chosen.get(parent)
        if chosen is None and present:
            able = {
                f
                for f in present
                if (f, self.kind) in self._decoders or self.kind in (None, "scalar")
            }
            chosen = min(able or present, key=lambda f: (self._readers[f].priority, f))
            self._chosen[parent] = chosen
        if chosen is not None and present - {chosen}:
            self.skipped.setdefault(parent, set()).update(present - {chosen})
        return chosen

    def discover(self) -> list[tuple[str, FileReader]]:
        """``(run, reader)`` for every recognised file, new files included: read them one by one
        (``reader.read_new()``) to hold one file's records at a time."""
        found: dict[str, list[tuple[str, ReaderSpec]]] = {}
        for path, regular in self._files():
            spec = _reader_for(self._readers, path.rsplit("/", 1)[-1])
            if spec is not None and not regular:
                if path not in self._not_files:
                    self._not_files.add(path)
                    warnings.warn(
                        f"{path}: not a regular file (a FIFO, socket, device or dangling link);"
                        " skipped",
                        ReadWarning,
                        2,
                    )
                continue
            if spec is not None and (self.formats is None or spec.name in self.formats):
                found.setdefault(path.rsplit("/", 1)[0], []).append((path, spec))
        for parent, files in found.items():
            chosen = None
            if self.formats is None:  # asked for no format: one of the competing ones
                chosen = self._choose(parent, {s.name for _, s in files if s.priority is not None})
            for path, spec in files:
                if path in self._open or (
                    spec.priority is not None and chosen not in (None, spec.name)
                ):
                    continue
                run = parent[len(self.root) :].strip("/") or "."
                decoders = {k: fn for (fmt, k), fn in self._decoders.items() if fmt == spec.name}
                self._open[path] = (run, spec.open(self.fs, path, decoders))
        return list(self._open.values())

    def _files(self) -> list[tuple[str, bool]]:
        """``(path, regular)`` of every file under the log dir, sorted."""
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(self.fs, LocalFileSystem):
            return sorted((p.replace(os.sep, "/"), r) for p, r in local_files(self.root))
        return sorted((p, True) for p in self.fs.find(self.root))  # no FIFOs in a store

    def read(self) -> list[tuple[str, Batch]]:
        """``(run, batch)`` per file, holding what was appended since the last call."""
        return [(run, reader.read_new()) for run, reader in self.discover()]
