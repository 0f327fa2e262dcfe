"""Run discovery and incremental reads: every file a reader plugin recognises under a log dir."""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

from tallyboard.plugin.readers import Batch, FileReader, ReaderSpec
from tallyboard.reading.fetch import LocalFiles, Prefetched, fetch_ahead, is_local
from tallyboard.reading.pool import pool_size, read_files
from tallyboard.warn import ReadWarning


def names_or_globs(arg: str | Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    """``arg`` (None, a name or glob, or an iterable of them) as a tuple; checked."""
    if arg is None:
        return None
    if isinstance(arg, str):
        return (arg,)
    if isinstance(arg, Iterable):
        items = tuple(arg)
        if all(isinstance(a, str) for a in items):
            return items
    raise TypeError(f"{what} must be None, a str or an iterable of str, got {arg!r}")


def matcher(patterns: tuple[str, ...] | None) -> Callable[[str], bool]:
    """Whether a name is one of ``patterns`` or matches one as a glob (``*``, ``?``, ``[ab]``)."""
    if patterns is None:
        return lambda name: True
    exact = set(patterns)
    globs = [p for p in patterns if any(c in p for c in "*?[")]
    return lambda name: name in exact or any(fnmatchcase(name, g) for g in globs)


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


def local_files(root: str) -> list[tuple[str, bool, int]]:
    """``(path, regular, size)`` for every file under the local directory ``root``, symlinked folders
    followed as TensorBoard follows them, but never into a folder the path is already inside (a
    link loop); ``regular`` is False for a FIFO, socket, device or dangling link, which are
    never opened (a FIFO would block the reader)."""
    out: list[tuple[str, bool, int]] = []
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
                out.append((entry.path, False, 0))
                continue
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key not in inside:
                    todo.append((entry.path, inside | {key}))
            else:
                out.append((entry.path, stat.S_ISREG(st.st_mode), st.st_size))
    return out


def _reader_for(readers: dict[str, ReaderSpec], basename: str) -> ReaderSpec | None:
    for spec in readers.values():
        if spec.matches(basename):
            return spec
    return None


class RunReader:
    """Reads every recognised file under a log dir; calling :meth:`read` again yields only new data.

    Runs are directories holding readable files, named by their path relative to the log dir
    (``"."`` for the log dir itself). ``runs`` (names or globs) keeps only the runs matching one:
    the others are never opened, nor fetched from a remote store.
    """

    def __init__(
        self,
        logdir: str,
        formats: str | Iterable[str] | None = None,
        kind: str | None = None,
        runs: str | Iterable[str] | None = None,
    ) -> None:
        import fsspec

        from tallyboard.plugin.registry import get_registry

        if not isinstance(logdir, str) or not logdir:
            raise TypeError(f"logdir must be a non-empty str path or URL, got {logdir!r}")
        reg = get_registry()
        self._readers = reg.readers
        self._decoders = reg.decoders
        self.formats = _format_names(formats, self._readers)
        self._wanted_run = matcher(names_or_globs(runs, "runs"))
        self.kind = kind
        self.fs, root = fsspec.core.url_to_fs(logdir)
        self.root = root.rstrip("/") or "/"
        if not self.fs.isdir(self.root):
            raise ValueError(f"logdir {logdir!r} is not a directory")
        self._open: dict[str, tuple[str, FileReader]] = {}
        self._not_files: set[str] = set()  # special files already reported
        self._sizes: dict[str, int] = {}  # file -> size when last listed
        #: what readers open files through: on a remote store, one serving bytes fetched ahead.
        self._source: Any = LocalFiles(self.fs)
        if not is_local(self.fs):
            self._source = Prefetched(self.fs)
        self._format_decoders: dict[str, dict[str, Callable[..., Any]]] = {}
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
        for path, regular, size in self._files():
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
                self._sizes[path] = size
        for parent, files in found.items():
            run = parent[len(self.root) :].strip("/") or "."
            if not self._wanted_run(run):
                continue
            chosen = None
            if self.formats is None:  # asked for no format: one of the competing ones
                chosen = self._choose(parent, {s.name for _, s in files if s.priority is not None})
            for path, spec in files:
                if path in self._open or (
                    spec.priority is not None and chosen not in (None, spec.name)
                ):
                    continue
                self._open[path] = (run, spec.open(self._source, path, self._decoders_of(spec)))
        return list(self._open.values())

    def _decoders_of(self, spec: ReaderSpec) -> dict[str, Callable[..., Any]]:
        """The decoders of ``spec``'s format by kind: one dict shared by all its files."""
        found = self._format_decoders.get(spec.name)
        if found is None:
            found = self._format_decoders[spec.name] = {
                k: fn for (fmt, k), fn in self._decoders.items() if fmt == spec.name
            }
        return found

    def _files(self) -> list[tuple[str, bool, int]]:
        """``(path, regular, size)`` of every file under the log dir, sorted."""
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(self.fs, LocalFileSystem):
            return sorted((p.replace(os.sep, "/"), r, n) for p, r, n in local_files(self.root))
        listing = self.fs.find(self.root, detail=True)  # no FIFOs in a store
        return [(p, True, int(listing[p].get("size") or 0)) for p in sorted(listing)]

    def opened(self, path: str) -> FileReader:
        """The reader of ``path`` (a worker's copy once a pool has read it)."""
        return self._open[path][1]

    def size(self, path: str) -> int:
        """The size of ``path`` when last listed (0 when unknown)."""
        return self._sizes.get(path, 0)

    def read(
        self, workers: int | None = None, progress: Callable[[int], None] | None = None
    ) -> list[tuple[str, Batch]]:
        """``(run, batch)`` per file, holding what was appended since the last call (see
        :meth:`iter_read`)."""
        return [(run, batch) for _, run, batch in self.iter_read(workers, progress)]

    def iter_read(
        self,
        workers: int | None = None,
        progress: Callable[[int], None] | None = None,
        discover: bool = True,
    ) -> Iterator[tuple[str, str, Batch]]:
        """``(path, run, batch)`` per file in order, each batch holding what was appended to
        that file since it was last read.

        Local files are decoded by ``workers`` processes (default: the cores, when the files
        are big enough to pay for it; 1: here), a few files ahead of the caller. Remote files
        are fetched many at once (:mod:`tallyboard.reading.fetch`) and decoded here.
        ``progress(files_done)`` is called after each file. ``discover=False`` reads the files
        the last :meth:`discover` found (no second listing of a store)."""
        if discover:
            self.discover()
        paths = list(self._open)
        count = 0

        def done() -> None:
            nonlocal count
            count += 1
            if progress is not None:
                progress(count)

        if isinstance(self._source, Prefetched):
            yield from self._iter_remote(self._source, paths, done)
            return
        readers = [self._open[p][1] for p in paths]
        left = sum(
            max(self._sizes.get(p, 0) - getattr(r, "offset", 0), 0) for p, r in zip(paths, readers)
        )
        for i, reader, batch in read_files(readers, pool_size(workers, len(readers), left), done):
            run = self._open[paths[i]][0]
            self._open[paths[i]] = (run, reader)  # a worker's copy has the new offset
            yield paths[i], run, batch

    def _iter_remote(
        self, source: Prefetched, paths: list[str], done: Callable[[], None]
    ) -> Iterator[tuple[str, str, Batch]]:
        """Fetch the files ahead, many at once, and decode each here in its turn; a reader
        without a byte offset (or done with its file) reads from the store itself."""
        jobs = []
        for path in paths:
            reader = self._open[path][1]
            offset, size = getattr(reader, "offset", None), self._sizes.get(path, 0)
            if isinstance(offset, int) and size > offset and not getattr(reader, "dead", False):
                jobs.append((path, offset, size))  # only what has grown: nothing else is asked
        ahead = {path for path, _, _ in jobs}
        fetched = fetch_ahead(self.fs, jobs)
        try:
            for path in paths:
                run, reader = self._open[path]
                if path in ahead:
                    j, data = next(fetched)
                    assert jobs[j][0] == path
                    source.put(path, jobs[j][1], data)
                    del data
                    try:
                        batch = reader.read_new()
                    finally:
                        source.drop(path)
                else:
                    batch = reader.read_new()
                done()
                yield path, run, batch
        finally:
            fetched.close()
