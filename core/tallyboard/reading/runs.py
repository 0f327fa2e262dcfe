"""Run discovery and incremental reads: every file a reader plugin recognises under a log dir."""

from __future__ import annotations

import os
import stat
import time
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
    return [(p, r, n) for p, (r, n) in LocalTree(root).scan().items()]


class _Dir:
    """A folder as last scanned: its mtime, the folders it is inside (itself included, as
    ``(st_dev, st_ino)``: a link back to one of them is a loop), its files and subfolders."""

    __slots__ = ("mtime", "inside", "files", "subdirs")

    def __init__(self, mtime: int, inside: frozenset[tuple[int, int]]) -> None:
        self.mtime = mtime
        self.inside = inside
        self.files: dict[str, tuple[bool, int]] = {}
        self.subdirs: list[str] = []


class LocalTree:
    """The files under a local directory, kept between scans so that a later :meth:`scan` costs
    a ``stat`` per known folder and file, not a walk of the whole tree.

    A folder is listed again only when its mtime changed (a file or folder was added, removed
    or renamed in it) or was too recent to trust at the previous scan: file systems stamp times
    at a coarse granularity, so a change made in the same tick as that scan may leave the mtime
    as it was. Files are ``stat``-ed every scan for their size (appending changes no folder).
    """

    #: a folder whose mtime is this close to (or after) the previous scan's start is listed again.
    racy_ns = 2_000_000_000

    def __init__(self, root: str) -> None:
        self.root = root
        self._dirs: dict[str, _Dir] = {}
        self._started = 0  # time.time_ns() when the previous scan began (0: none yet)

    def scan(self) -> dict[str, tuple[bool, int]]:
        """``{path: (regular, size)}`` of every file now under the root (see :func:`local_files`)."""
        started = time.time_ns()
        if not self._dirs:
            st = os.stat(self.root)
            self._walk(self.root, st.st_mtime_ns, frozenset({(st.st_dev, st.st_ino)}))
        else:
            trust_before = self._started - self.racy_ns
            for path in list(self._dirs):
                d = self._dirs.get(path)
                if d is None:  # dropped with a folder above it
                    continue
                try:
                    mtime = os.stat(path).st_mtime_ns
                except OSError:
                    self._drop(path)
                    continue
                if mtime != d.mtime or d.mtime >= trust_before:
                    self._relist(path, d, mtime)
                    continue
                for file, (regular, size) in list(d.files.items()):
                    try:
                        st = os.stat(file)
                    except OSError:
                        del d.files[file]  # gone (the folder's next mtime will say so too)
                        continue
                    if st.st_size != size:
                        d.files[file] = (regular, st.st_size)
        self._started = started
        out: dict[str, tuple[bool, int]] = {}
        for d in self._dirs.values():
            out.update(d.files)
        return out

    @staticmethod
    def _entries(top: str) -> list[tuple[str, os.stat_result | None]]:
        """``(path, stat or None)`` of the entries of ``top`` (None: a dangling link)."""
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            return []
        out: list[tuple[str, os.stat_result | None]] = []
        for entry in entries:
            try:
                out.append((entry.path, entry.stat()))
            except OSError:
                out.append((entry.path, None))
        return out

    def _walk(self, top: str, mtime: int, inside: frozenset[tuple[int, int]]) -> None:
        """List ``top`` and every folder below it (not known yet)."""
        todo = [(top, mtime, inside)]
        while todo:
            path, mtime, inside = todo.pop()
            d = self._dirs[path] = _Dir(mtime, inside)
            for sub, st in self._fill(path, d):
                todo.append((sub, st.st_mtime_ns, inside | {(st.st_dev, st.st_ino)}))

    def _fill(self, path: str, d: _Dir) -> list[tuple[str, Any]]:
        """Record the files of ``path`` in ``d``; returns its subfolders to enter (not loops)."""
        subs = []
        for entry, st in self._entries(path):
            if st is None:
                d.files[entry] = (False, 0)
            elif stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) not in d.inside:
                    subs.append((entry, st))
            else:
                d.files[entry] = (stat.S_ISREG(st.st_mode), st.st_size)
        d.subdirs = [sub for sub, _ in subs]
        return subs

    def _relist(self, path: str, d: _Dir, mtime: int) -> None:
        """List ``path`` again: new folders are walked, vanished ones dropped."""
        before = set(d.subdirs)
        d.mtime = mtime
        d.files = {}
        for sub, st in self._fill(path, d):
            if sub not in before:
                self._walk(sub, st.st_mtime_ns, d.inside | {(st.st_dev, st.st_ino)})
        for sub in before - set(d.subdirs):
            self._drop(sub)

    def _drop(self, path: str) -> None:
        """Forget ``path`` and every folder below it."""
        todo = [path]
        while todo:
            d = self._dirs.pop(todo.pop(), None)
            if d is not None:
                todo.extend(d.subdirs)


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

    Each listing (:meth:`refresh`) notes every file's size; a file that keeps a byte offset
    (``reader.offset``) is opened again only once its size changed, so a re-read of a large
    tree where a few files grew opens those few. Files that disappear are forgotten.
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
        #: file -> its listed size when it was last read (unchanged since: nothing to read).
        self._read_at: dict[str, int] = {}
        self._shrunk: set[str] = set()  # files that shrank, already reported
        #: every listed file -> the reader spec that reads it (None: no reader does).
        self._spec_of: dict[str, ReaderSpec | None] = {}
        #: run directory -> its recognised files (read or not) and their formats.
        self._present: dict[str, dict[str, ReaderSpec]] = {}
        self._local: LocalTree | None = None
        #: what readers open files through: on a remote store, one serving bytes fetched ahead.
        self._source: Any = LocalFiles(self.fs)
        if not is_local(self.fs):
            self._source = Prefetched(self.fs)
        self._listed_once = False
        self._format_decoders: dict[str, dict[str, Callable[..., Any]]] = {}
        self._chosen: dict[str, str] = {}  # run directory -> the competing format read there
        #: run directory -> competing formats found there but not read (same values again).
        self.skipped: dict[str, set[str]] = {}

    def run_of(self, parent: str) -> str:
        """The run name of the directory ``parent`` (its path relative to the log dir)."""
        return parent[len(self.root) :].strip("/") or "."

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

    def refresh(self) -> tuple[list[str], list[tuple[str, str]]]:
        """List the log dir again: open the files that appeared, forget those that are gone.

        Returns ``(opened, gone)``: the paths of the files opened by this listing, and
        ``(path, run)`` of the open files no longer there. A file that shrank below where it was read is reported
        once and not read again (writers append; a file rewritten in place cannot be followed).
        """
        listing = self._files()
        found: dict[str, list[tuple[str, ReaderSpec]]] = {}
        sizes, spec_of, resized = self._sizes, self._spec_of, []
        for path, regular, size in listing:
            try:
                spec = spec_of[path]
            except KeyError:
                spec = spec_of[path] = _reader_for(self._readers, path.rsplit("/", 1)[-1])
            if spec is None:
                continue
            if not regular:
                if path not in self._not_files:
                    self._not_files.add(path)
                    warnings.warn(
                        f"{path}: not a regular file (a FIFO, socket, device or dangling link);"
                        " skipped",
                        ReadWarning,
                        2,
                    )
                continue
            if self.formats is None or spec.name in self.formats:
                found.setdefault(path.rsplit("/", 1)[0], []).append((path, spec))
                if sizes.get(path) != size:
                    sizes[path] = size
                    resized.append(path)
        gone = self._forget(found, listing)
        opened = []
        for parent, files in found.items():
            run = self.run_of(parent)
            if not self._wanted_run(run):
                continue
            present = self._present.setdefault(parent, {})
            fresh = [(p, s) for p, s in files if p not in present]
            if not fresh:
                continue
            present.update(fresh)
            chosen = None
            if self.formats is None:  # asked for no format: one of the competing ones
                chosen = self._choose(
                    parent, {s.name for s in present.values() if s.priority is not None}
                )
            for path, spec in files:
                if path in self._open or (
                    spec.priority is not None and chosen not in (None, spec.name)
                ):
                    continue
                self._open[path] = (run, spec.open(self._source, path, self._decoders_of(spec)))
                opened.append(path)
        for path in resized:
            reader = self._open[path][1] if path in self._open else None
            offset = getattr(reader, "offset", None)
            if isinstance(offset, int) and sizes[path] < offset and path not in self._shrunk:
                self._shrunk.add(path)
                warnings.warn(
                    f"{path}: the file shrank to {sizes[path]} bytes after being read to offset"
                    f" {offset}; it is not read again (a file rewritten in place cannot be"
                    " read incrementally)",
                    ReadWarning,
                    2,
                )
                if hasattr(reader, "dead"):
                    reader.dead = True  # type: ignore[union-attr]
        self._listed_once = True
        return opened, gone

    def _forget(
        self, found: dict[str, list[tuple[str, ReaderSpec]]], listing: list[tuple[str, bool, int]]
    ) -> list[tuple[str, str]]:
        """Drop the files not in ``found`` any more; returns those that were open."""
        if not self._listed_once:
            return []
        if len(self._spec_of) > len(listing):  # some file listed before is gone
            here_all = {path for path, _, _ in listing}
            for path in [p for p in self._spec_of if p not in here_all]:
                del self._spec_of[path]
        here = {path for files in found.values() for path, _ in files}
        if len(here) == len(self._sizes):  # every file found before (and no other) is here
            return []
        gone = [(path, run) for path, (run, _) in self._open.items() if path not in here]
        for path, _ in gone:
            del self._open[path]
        for path in [p for p in self._sizes if p not in here]:
            del self._sizes[path]
            self._read_at.pop(path, None)
            self._shrunk.discard(path)
        for parent in [p for p in self._present if p not in found]:
            del self._present[parent]  # the run directory holds no recognised file now
            self._chosen.pop(parent, None)
            self.skipped.pop(parent, None)
        for present in self._present.values():
            for path in [p for p in present if p not in here]:
                del present[path]
        return gone

    def run_of_file(self, path: str) -> str:
        """The run of the open file ``path``."""
        return self._open[path][0]

    def reset(self) -> None:
        """Forget every file, offset and listing: the next read starts over."""
        self._open.clear()
        self._sizes.clear()
        self._read_at.clear()
        self._shrunk.clear()
        self._not_files.clear()
        self._spec_of.clear()
        self._present.clear()
        self._chosen.clear()
        self.skipped.clear()
        self._local = None
        self._listed_once = False

    def discover(self) -> list[tuple[str, FileReader]]:
        """``(run, reader)`` for every recognised file, new files included: read them one by one
        (``reader.read_new()``) to hold one file's records at a time."""
        self.refresh()
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
            if self._local is None:
                self._local = LocalTree(self.root)
            files = self._local.scan()
            if os.sep != "/":
                return sorted((p.replace(os.sep, "/"), r, n) for p, (r, n) in files.items())
            return sorted((p, r, n) for p, (r, n) in files.items())
        if self._listed_once:
            self.fs.invalidate_cache(self.root)  # a store's listing cache would hide news
        listing = self.fs.find(self.root, detail=True)  # no FIFOs in a store
        return [(p, True, int(listing[p].get("size") or 0)) for p in sorted(listing)]

    def opened(self, path: str) -> FileReader:
        """The reader of ``path`` (a worker's copy once a pool has read it)."""
        return self._open[path][1]

    def size(self, path: str) -> int:
        """The size of ``path`` when last listed (0 when unknown)."""
        return self._sizes.get(path, 0)

    def unchanged(self, path: str) -> bool:
        """Whether reading ``path`` now would surely give nothing: its reader keeps a byte
        offset and the file's listed size is what it was when last read (or it is dead)."""
        reader = self._open[path][1]
        if not isinstance(getattr(reader, "offset", None), int):
            return False  # a reader of another sort (a config it parses whole): always asked
        return bool(getattr(reader, "dead", False)) or self._read_at.get(path) == self._sizes.get(
            path
        )

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
        changed_only: bool = False,
    ) -> Iterator[tuple[str, str, Batch]]:
        """``(path, run, batch)`` per file in order, each batch holding what was appended to
        that file since it was last read.

        Local files are decoded by ``workers`` processes (default: the cores, when the files
        are big enough to pay for it; 1: here), a few files ahead of the caller. Remote files
        are fetched many at once (:mod:`tallyboard.reading.fetch`) and decoded here.
        ``progress(files_done)`` is called after each file. ``discover=False`` reads the files
        the last :meth:`discover` found (no second listing of a store). A file unchanged since
        it was last read (:meth:`unchanged`) is not opened: it gives an empty batch, or nothing
        with ``changed_only``."""
        if discover:
            self.refresh()
        count = 0

        def done() -> None:
            nonlocal count
            count += 1
            if progress is not None:
                progress(count)

        order = list(self._open)
        paths = [path for path in order if not self.unchanged(path)]
        if isinstance(self._source, Prefetched):
            results: Iterator[tuple[str, str, Batch]] = self._iter_remote(self._source, paths, done)
        else:
            results = self._iter_local(paths, workers, done)
        changed = set(paths)
        try:
            for path in order:
                if path in changed:
                    got = next(results)
                    assert got[0] == path
                    reader = self._open[path][1]
                    offset = getattr(reader, "offset", None)
                    listed = self._sizes.get(path, 0)
                    self._read_at[path] = max(listed, offset) if isinstance(offset, int) else listed
                    yield got
                elif not changed_only:
                    done()
                    yield path, self._open[path][0], Batch()
        finally:
            results.close()  # type: ignore[attr-defined]

    def _iter_local(
        self, paths: list[str], workers: int | None, done: Callable[[], None]
    ) -> Iterator[tuple[str, str, Batch]]:
        """Read ``paths`` here or by a pool of processes, in order."""
        readers = [self._open[p][1] for p in paths]
        left = sum(
            max(self._sizes.get(p, 0) - getattr(r, "offset", 0), 0) for p, r in zip(paths, readers)
        )
        for i, reader, batch in read_files(readers, pool_size(workers, len(readers), left), done):
            path = paths[i]
            run = self._open[path][0]
            self._open[path] = (run, reader)  # a worker's copy has the new offset
            yield path, run, batch

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
