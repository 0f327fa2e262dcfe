"""Run discovery and incremental reads: every file a reader plugin recognises under a log dir."""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

from tallyboard.plugin.readers import (
    SCALAR_KIND,
    Batch,
    Batches,
    FileReader,
    PayloadRows,
    ReaderSpec,
)
from tallyboard.reading.fetch import LocalFiles, Prefetched, fetch_ahead, is_local
from tallyboard.reading.pool import plan, pool_size, read_tasks
from tallyboard.reading.tree import LocalTree, Share, local_files
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


_UNSEEN: Any = object()  # a file no listing has met yet


def _reader_for(readers: dict[str, ReaderSpec], basename: str) -> ReaderSpec | None:
    for spec in readers.values():
        if spec.matches(basename):
            return spec
    return None


class _File:
    """A recognised file of a wanted run: its run, reader spec, reader (made on first read), the
    size the last listing gave and the listed size when it was last read."""

    __slots__ = ("run", "spec", "reader", "size", "read_at")

    def __init__(self, run: str, spec: ReaderSpec, size: int) -> None:
        self.run, self.spec, self.size = run, spec, size
        self.reader: FileReader | None = None
        self.read_at = -1


class _Job:
    """The files of one read, as the pool finds them (:class:`tallyboard.reading.pool.Job`).
    ``copies``: each file is read by a copy of its reader (a new one when it has none), kept
    only once the caller takes what it read (:meth:`RunReader.commit`)."""

    def __init__(self, owner: RunReader, paths: list[str], copies: bool = False) -> None:
        self.owner, self.paths, self.copies = owner, paths, copies

    def reader(self, i: int) -> FileReader:
        if not self.copies:
            return self.owner._reader_of(self.paths[i])
        f = self.owner._open[self.paths[i]]
        if f.reader is not None:
            return _snapshot(f.reader)
        return self.owner._reader_of(self.paths[i], keep=False)


def _snapshot(reader: FileReader) -> FileReader:
    """A copy of ``reader`` that reads on without changing it: its attributes shared, but the
    containers among them (a set of names seen, a dict of offsets) copied, so a read that is
    never committed leaves the kept reader as it was."""
    clone = copy.copy(reader)
    for name, value in getattr(reader, "__dict__", {}).items():
        if isinstance(value, (set, dict, list, bytearray)):
            clone.__dict__[name] = copy.copy(value)
    return clone


def _payload_rows(kind: Any, decode: Callable[..., Any]) -> Callable[..., Any]:
    """``decode`` as readers call it: wrapped to turn payloads into rows for a kind that
    declares ``payload`` and ``to_row`` (:class:`~tallyboard.plugin.readers.PayloadRows`)."""
    if kind is None or kind.payload is None or kind.to_row is None:
        return decode
    return PayloadRows(kind, decode)


class RunReader:
    """Reads every recognised file under a log dir; calling :meth:`read` again yields only new data.

    Runs are directories holding readable files, named by their path relative to the log dir
    (``"."`` for the log dir itself). ``runs`` (names or globs) keeps only the runs matching one:
    the others are never opened, nor fetched from a remote store.

    Each listing (:meth:`refresh`) notes every file's size; a file whose reader keeps a byte
    offset (``reader.offset``) is opened again only once its size changed, so a re-read of a
    large tree where a few files grew opens those few. Files that disappear are forgotten.
    ``keep=False`` is for a tree read once (:func:`tallyboard.read`, ``ls``): no reader is kept
    after its file is read, so memory holds the listing, not a reader per file.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        formats: str | Iterable[str] | None = None,
        kind: str | None = None,
        runs: str | Iterable[str] | None = None,
        keep: bool = True,
        deadline: float | None = None,
        storage_options: dict[str, Any] | None = None,
        summaries: bool | str = False,
    ) -> None:
        import fsspec

        from tallyboard.plugin.registry import get_registry
        from tallyboard.reading.fetch import within

        if isinstance(logdir, os.PathLike):
            logdir = os.fspath(logdir)
        if not isinstance(logdir, str) or not logdir:
            raise TypeError(
                f"logdir must be a non-empty str path, os.PathLike or URL, got {logdir!r}"
            )
        reg = get_registry()
        self._readers = reg.readers
        self._decoders = reg.decoders
        self.formats = _format_names(formats, self._readers)
        self._wanted_run = matcher(names_or_globs(runs, "runs"))
        self.kind = kind
        self.keep = keep
        #: readers that can keep TensorBoard's summaries as their files hold them (a
        #: ``keep_summaries`` attribute) are told to (``Batch.summaries``): True to show them,
        #: ``"exact"`` to copy them (scalars in tensor form kept whole too)
        self.summaries = summaries
        if deadline is not None and not (
            isinstance(deadline, (int, float))
            and not isinstance(deadline, bool)
            and 0 < deadline < float("inf")
        ):
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        #: seconds a call to a remote store may take (None: TALLYBOARD_REMOTE_DEADLINE's).
        self.deadline = deadline
        if storage_options is not None and not isinstance(storage_options, dict):
            raise TypeError(f"storage_options must be None or a dict, got {storage_options!r}")
        #: what the store's file system was made with (credentials, endpoint), for a reader
        #: made elsewhere (an engine's worker) to reach the same store.
        self.storage_options = dict(storage_options or {})
        self.fs, root = fsspec.core.url_to_fs(logdir, **self.storage_options)
        self.root = root.rstrip("/") or "/"
        if is_local(self.fs):
            here = self.fs.isdir(self.root)
        else:
            here = within(lambda: self.fs.isdir(self.root), deadline, logdir)
        if not here:
            raise ValueError(f"logdir {logdir!r} is not a directory")
        #: the files read (of wanted runs, in a chosen format), in reading order.
        self._open: dict[str, _File] = {}
        self._not_files: set[str] = set()  # special files already reported
        self._sizes: dict[str, int] = {}  # every recognised file -> size when last listed
        self._shrunk: set[str] = set()  # files that shrank, already reported
        #: files to read at the next read: new, grown, or read by a reader that keeps no offset.
        self._dirty: set[str] = set()
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
        self._share: Share | None = None

    def only(self, share: Share) -> None:
        """List only ``share`` of a local tree (one of those :func:`~tallyboard.reading.tree.deal`
        gives), as one of several processes that read the tree apart. For a reader made with
        ``keep=False``, before its first listing."""
        if self.keep or self._listed_once:
            raise RuntimeError("only() is for a one-time reader, before it lists")
        self._share = share

    def take(self, files: Iterable[tuple[str, str, str, int]]) -> None:
        """Read the files ``(path, run, format, size)`` another reader's listing found, in
        that order, instead of listing (a share of a tree dealt to an engine's worker: the
        tree is listed once, by the client), before it lists."""
        if self._listed_once:
            raise RuntimeError("take() is for a reader that has not listed yet")
        for path, run, fmt, size in files:
            self._open[path] = _File(run, self._readers[fmt], size)
            self._dirty.add(path)
        self._listed_once = True

    def listed(self) -> list[tuple[str, str, str, int]]:
        """``(path, run, format, size)`` of every file to read, in reading order, as
        :meth:`take` takes them."""
        return [(path, f.run, f.spec.name, f.size) for path, f in self._open.items()]

    def run_of(self, parent: str) -> str:
        """The run name of the directory ``parent`` (its path relative to the log dir)."""
        return parent[len(self.root) :].strip("/") or "."

    def _choose(self, parent: str, present: set[str]) -> str | None:
        """The competing format read in ``parent``: kept once chosen, so re-reads stay whole."""
        chosen = self._chosen.get(parent)
        if chosen is None and len(present) == 1:  # one format here: no choice to make
            (chosen,) = present
            self._chosen[parent] = chosen
            return chosen
        if chosen is None and present:
            able = {
                f
                for f in present
                if (f, self.kind) in self._decoders or self.kind in (None, SCALAR_KIND)
            }
            chosen = min(able or present, key=lambda f: (self._readers[f].priority, f))
            self._chosen[parent] = chosen
        if chosen is not None and present - {chosen}:
            self.skipped.setdefault(parent, set()).update(present - {chosen})
        return chosen

    def refresh(self) -> tuple[list[str], list[tuple[str, str]]]:
        """List the log dir again: take in the files that appeared, forget those that are gone.

        Returns ``(opened, gone)``: the paths of the files to read that this listing found,
        and ``(path, run)`` of such files no longer there. A file that shrank below where it
        was read is reported once and not read again (writers append; a file rewritten in
        place cannot be followed). A local file replaced by another at the same path (a new
        inode) starts its run over: every file of the run is in both lists, read again from
        the start. A reader made with ``keep=False`` lists once (later calls find nothing)
        and keeps of its listing only the files to read, so a read of a huge tree holds
        less.
        """
        if not self.keep and self._listed_once:
            return [], []
        restarted: list[tuple[str, str]] = []
        if self._local is not None and self._listed_once:
            self._local.scan()
            if self._local.replaced:
                restarted = self._restart([p.replace(os.sep, "/") for p in self._local.replaced])
            elif not self._local.changed:  # no file appeared nor vanished: only sizes moved
                all_files = self._local._all
                self._resized(
                    [(p.replace(os.sep, "/"), all_files[p][1]) for p in self._local.resized]
                )
                return [], []
        listing = self._files(scanned=self._local is not None and self._listed_once)
        found: dict[str, list[tuple[str, ReaderSpec]]] = {}
        sizes, spec_of, formats, readers = self._sizes, self._spec_of, self.formats, self._readers
        size_was, spec_known = sizes.get, spec_of.get
        resized: list[str] = []  # files listed before whose size changed (new ones are not)
        parent: str | None = None  # the folder of the file before, and its files found
        files: list[tuple[str, ReaderSpec]] = []
        for path, regular, size in listing:
            cut = path.rfind("/")
            spec = spec_known(path, _UNSEEN)
            if spec is _UNSEEN:
                spec = spec_of[path] = _reader_for(readers, path[cut + 1 :])
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
            if formats is None or spec.name in formats:
                if parent is None or len(parent) != cut or not path.startswith(parent):
                    parent = path[:cut]
                    files = found.setdefault(parent, [])
                files.append((path, spec))
                was = size_was(path)
                if was != size:
                    sizes[path] = size
                    if was is not None:
                        resized.append(path)
        gone = self._forget(found, listing) + restarted
        opened = []
        for parent, files in found.items():
            present = self._present.get(parent)
            if present is not None and len(present) == len(files):
                continue  # nothing new in this run directory
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
                self._open[path] = _File(run, spec, sizes[path])
                self._dirty.add(path)
                opened.append(path)
        self._resized([(p, sizes[p]) for p in resized])
        self._listed_once = True
        if not self.keep:  # what a later listing compares with: there is none
            for table in (self._spec_of, self._present, self._sizes):
                table.clear()
        return opened, gone

    def _restart(self, replaced: list[str]) -> list[tuple[str, str]]:
        """Forget the run directories of the files ``replaced`` that were read from an offset
        (what was read of them is of another file), so the listing after takes their files in
        as new; returns ``(path, run)`` of the files forgotten. A replaced file read whole
        each time (a config) is only marked to read again."""
        gone: list[tuple[str, str]] = []
        for path in sorted(replaced):
            f = self._open.get(path)
            if f is None:
                continue
            if not isinstance(getattr(f.reader, "offset", None), int):
                self._dirty.add(path)
                f.read_at = -1
                continue
            parent = path.rsplit("/", 1)[0]
            for p in self._present.pop(parent, {}):
                was = self._open.pop(p, None)
                if was is not None:
                    gone.append((p, was.run))
                self._dirty.discard(p)
                self._sizes.pop(p, None)
                self._shrunk.discard(p)
            self._chosen.pop(parent, None)
            self.skipped.pop(parent, None)
        return gone

    def _resized(self, changes: list[tuple[str, int]]) -> None:
        """Note the new sizes of files of the last listing; a file that shrank below where it
        was read is reported once and not read again."""
        for path, size in changes:
            if path not in self._sizes:
                continue  # a file no reader reads
            self._sizes[path] = size
            f = self._open.get(path)
            if f is None:
                continue
            f.size = size
            self._dirty.add(path)
            offset = getattr(f.reader, "offset", None)
            if isinstance(offset, int) and f.size < offset and path not in self._shrunk:
                self._shrunk.add(path)
                warnings.warn(
                    f"{path}: the file shrank to {f.size} bytes after being read to offset"
                    f" {offset}; it is not read again (a file rewritten in place cannot be"
                    " read incrementally)",
                    ReadWarning,
                    2,
                )
                if hasattr(f.reader, "dead"):
                    f.reader.dead = True  # type: ignore[union-attr]

    def _forget(
        self, found: dict[str, list[tuple[str, ReaderSpec]]], listing: list[tuple[str, bool, int]]
    ) -> list[tuple[str, str]]:
        """Drop the files not in ``found`` any more; returns those that were read."""
        if not self._listed_once:
            return []
        if len(self._spec_of) > len(listing):  # some file listed before is gone
            here_all = {path for path, _, _ in listing}
            for path in [p for p in self._spec_of if p not in here_all]:
                del self._spec_of[path]
        here = {path for files in found.values() for path, _ in files}
        if len(here) == len(self._sizes):  # every file found before (and no other) is here
            return []
        gone = [(path, f.run) for path, f in self._open.items() if path not in here]
        for path, _ in gone:
            del self._open[path]
            self._dirty.discard(path)
        for path in [p for p in self._sizes if p not in here]:
            del self._sizes[path]
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
        """The run of the file ``path`` (one :meth:`refresh` found)."""
        return self._open[path].run

    def reset(self) -> None:
        """Forget every file, offset and listing: the next read starts over."""
        for table in (
            self._open,
            self._dirty,
            self._sizes,
            self._shrunk,
            self._not_files,
            self._spec_of,
            self._present,
            self._chosen,
            self.skipped,
        ):
            table.clear()
        if self._local is not None:
            self._local.close()
        self._local = None
        self._listed_once = False

    def discover(self) -> list[tuple[str, FileReader]]:
        """``(run, reader)`` for every recognised file, new files included: read them one by one
        (``reader.read_new()``) to hold one file's records at a time."""
        self.refresh()
        return [(f.run, self._reader_of(path, True)) for path, f in self._open.items()]

    def paths(self) -> list[tuple[str, str]]:
        """``(path, run)`` of every file to read, in reading order (as :meth:`refresh` left
        them)."""
        return [(path, f.run) for path, f in self._open.items()]

    def _reader_of(self, path: str, keep: bool | None = None) -> FileReader:
        """The reader of ``path``, made on first use (and kept, unless this is a one-time
        read)."""
        f = self._open[path]
        reader = f.reader
        if reader is None:
            spec = f.spec
            reader = spec.open(self._source, path, self._decoders_of(spec))
            if self.summaries and hasattr(reader, "keep_summaries"):
                reader.keep_summaries = self.summaries
            if self.keep if keep is None else keep:
                f.reader = reader
        return reader

    def _decoders_of(self, spec: ReaderSpec) -> dict[str, Callable[..., Any]]:
        """The decoders of ``spec``'s format by kind: one dict shared by all its files."""
        found = self._format_decoders.get(spec.name)
        if found is None:
            from tallyboard.plugin.registry import get_registry

            kinds = get_registry().kinds
            found = self._format_decoders[spec.name] = {
                k: _payload_rows(kinds.get(k), fn)
                for (fmt, k), fn in self._decoders.items()
                if fmt == spec.name
            }
        return found

    def _files(self, scanned: bool = False) -> list[tuple[str, bool, int]]:
        """``(path, regular, size)`` of every file under the log dir, sorted (``scanned``: the
        local tree was scanned just now)."""
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(self.fs, LocalFileSystem):
            if self.keep:
                if self._local is None:
                    self._local = LocalTree(self.root)
                files = self._local._all if scanned else self._local.scan()
                found = [(p, r, n) for p, (r, n) in files.items()]
            elif self._share is not None:
                found = [*self._share[0], *local_files(self.root, self._share[1])]
            else:
                found = local_files(self.root)
            if os.sep != "/":
                found = [(p.replace(os.sep, "/"), r, n) for p, r, n in found]
            found.sort()
            return found
        from tallyboard.reading.fetch import url, within

        if self._listed_once:
            # a store's listing cache would hide news (s3fs keeps one per folder: drop all)
            self.fs.invalidate_cache()
        listing = within(
            lambda: self.fs.find(self.root, detail=True),  # no FIFOs in a store
            self.deadline,
            f"listing {url(self.fs, self.root)}",
        )
        return [(p, True, int(listing[p].get("size") or 0)) for p in sorted(listing)]

    def opened(self, path: str) -> FileReader:
        """The reader of ``path`` (a worker's copy once a pool has read it)."""
        return self._reader_of(path)

    def size(self, path: str) -> int:
        """The size of ``path`` when last listed (0 when unknown)."""
        return self._sizes.get(path, 0)

    def resume(self, path: str) -> None:
        """Take ``path`` as read up to now when its reader (given the state of an earlier
        read) is at or past its listed size: it is then opened only once it grows."""
        f = self._open[path]
        offset = getattr(f.reader, "offset", None)
        if self.keep and isinstance(offset, int) and offset >= f.size:
            f.read_at = f.size
            self._dirty.discard(path)

    def unchanged(self, path: str) -> bool:
        """Whether reading ``path`` now would surely give nothing: it was read before, its
        reader keeps a byte offset, and the file's listed size is what it was when last read
        (or the reader is done with it)."""
        f = self._open[path]
        if f.reader is None or not isinstance(getattr(f.reader, "offset", None), int):
            return False  # not read yet, or a reader of another sort (a config read whole)
        return bool(getattr(f.reader, "dead", False)) or f.read_at == f.size

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
        are big enough to pay for it; 1: here), many small ones at once. Remote files are
        fetched many at once (:mod:`tallyboard.reading.fetch`) and decoded here.
        ``progress(files_done)`` is called after each file. ``discover=False`` reads the files
        the last :meth:`discover` found (no second listing of a store). A file unchanged since
        it was last read (:meth:`unchanged`) is not opened: it gives an empty batch, or nothing
        with ``changed_only``."""
        if discover:
            self.refresh()
        order = list(self._open)
        changed = {path for path in order if path in self._dirty}
        skipped = 0  # unchanged files passed, counted with the files read

        def done(files_read: int) -> None:
            if progress is not None:
                progress(skipped + files_read)

        groups = self.iter_groups(workers, done, discover=False, changed=changed)
        pending: list[tuple[str, str, Batch]] = []
        read = 0
        try:
            for path in order:
                if path in changed:
                    if not pending:
                        paths, runs, batches = next(groups)
                        pending = list(zip(paths, runs, batches.split()))[::-1]
                    got = pending.pop()
                    assert got[0] == path
                    read += 1
                    yield got
                elif not changed_only:
                    skipped += 1
                    if progress is not None:
                        progress(skipped + read)
                    yield path, self._open[path].run, Batch()
        finally:
            groups.close()

    def iter_groups(
        self,
        workers: int | None = None,
        progress: Callable[[int], None] | None = None,
        discover: bool = True,
        changed: set[str] | None = None,
        light: bool = False,
        reduce: Callable[[Batches], Any] | None = None,
    ) -> Generator[tuple[list[str], list[str], Any], None, None]:
        """``(paths, runs, batches)`` for groups of files read together, in reading order:
        what was appended to each file of the group since it was last read
        (``batches.batch(k)`` for ``paths[k]``). Only changed files are read (``changed``,
        else those not :meth:`unchanged`). ``progress(files_done)`` as in :meth:`iter_read`;
        ``light`` asks for a listing's read (see :func:`tallyboard.reading.pool.read_group`);
        ``reduce(batches)`` is given in place of each group's batches (see
        :meth:`read_groups`)."""
        if discover:
            self.refresh()
        for paths, runs, batches, readers, capped in self.read_groups(
            self.to_read(changed), workers, progress, light, reduce=reduce
        ):
            for k, path in enumerate(paths):
                self.commit(path, readers[k] if readers is not None else None, capped[k])
            yield paths, runs, batches

    def to_read(self, changed: set[str] | None = None) -> list[str]:
        """The files to read, in reading order: those in ``changed``, else those new or grown
        since they were last read (and those whose reader keeps no offset)."""
        if changed is None:
            dirty = self._dirty
            return [p for p in self._open if p in dirty] if dirty else []
        return [p for p in self._open if p in changed]

    def read_groups(
        self,
        paths: list[str],
        workers: int | None = None,
        progress: Callable[[int], None] | None = None,
        light: bool = False,
        window: int | None = None,
        copies: bool = False,
        reduce: Callable[[Batches], Any] | None = None,
    ) -> Generator[tuple[list[str], list[str], Any, Any, list[bool]], None, None]:
        """``(paths, runs, batches, readers, capped)`` for groups of the files ``paths`` read
        together, in order, nothing committed: :meth:`commit` each file once what was read of
        it is taken (``readers[k]`` the reader to keep for ``paths[k]``, None when the reader
        read in place; ``capped[k]`` when its read stopped at ``window`` bytes, with more to
        read). ``copies`` reads with copies of the readers, so a file not committed is read
        again from where it was. A file that cannot be read (a remote one not fetched; with
        ``copies``, a local one raising ``OSError``) is skipped with a warning, and listed in
        :attr:`failed`, when this reader keeps its readers: it is not to be committed, and is
        read again next time. Else its error is raised. ``reduce(batches)`` is given in place
        of a group's batches, made where the group was read (in a worker, only it travels):
        a module-level function, so that it travels by name."""
        self.failed: list[str] = []
        if isinstance(self._source, Prefetched):
            for got in self._iter_remote(self._source, paths, progress, window, copies):
                yield got if reduce is None else (*got[:2], reduce(got[2]), *got[3:])
            return
        files = [self._open[p] for p in paths]
        left = [
            max(f.size - getattr(f.reader, "offset", 0), 0) if f.reader is not None else f.size
            for f in files
        ]
        if window is not None:
            left = [min(n, window) for n in left]
        workers = pool_size(workers, len(paths), sum(left))
        tasks = plan(left, [f.spec.name for f in files], workers)
        count = 0

        def done(n: int) -> None:  # read_tasks counts each task's files: progress takes totals
            nonlocal count
            count += n
            if progress is not None:
                progress(count)

        isolate = copies and self.keep
        stops = dict(tasks)
        for start, readers, batches, capped, errors in read_tasks(
            _Job(self, paths, copies),
            tasks,
            workers,
            self.keep,
            done,
            light,
            window,
            isolate,
            reduce,
        ):
            n = stops[start] - start
            for k, error in enumerate(errors):
                if error:
                    self.failed.append(paths[start + k])
                    warnings.warn(
                        f"{paths[start + k]}: could not be read ({error}); it is read again"
                        " next time",
                        ReadWarning,
                        2,
                    )
            yield (
                paths[start : start + n],
                [f.run for f in files[start : start + n]],
                batches,
                readers,
                capped,
            )

    def commit(self, path: str, reader: FileReader | None, capped: bool = False) -> None:
        """Take what was read of ``path`` by ``reader`` (kept, when this reader keeps its
        readers; None: the reader kept read in place): it is not read again, but for what
        is appended after, or what ``capped`` left."""
        f = self._open.get(path)
        if f is None:
            return
        if reader is not None and self.keep:
            f.reader = reader
        if capped:
            f.read_at = -1
            self._dirty.add(path)
        else:
            self._mark_read(path)

    def _mark_read(self, path: str) -> None:
        f = self._open[path]
        offset = getattr(f.reader, "offset", None)
        f.read_at = max(f.size, offset) if isinstance(offset, int) else f.size
        if self.keep and self.unchanged(path):
            self._dirty.discard(path)

    def _iter_remote(
        self,
        source: Prefetched,
        paths: list[str],
        progress: Callable[[int], None] | None,
        window: int | None,
        copies: bool,
    ) -> Iterator[tuple[list[str], list[str], Batches, Any, list[bool]]]:
        """Fetch the files ahead, many at once, and decode each here in its turn (groups of
        one); a reader without a byte offset (or done with its file) reads from the store
        itself."""
        from tallyboard.reading.fetch import url

        job = _Job(self, paths, copies)
        readers = [job.reader(i) for i in range(len(paths))]
        jobs, ends = [], {}
        for path, reader in zip(paths, readers):
            f = self._open[path]
            offset = getattr(reader, "offset", None)
            if isinstance(offset, int) and f.size > offset and not getattr(reader, "dead", False):
                end = f.size if window is None else min(f.size, offset + window)
                jobs.append((path, offset, end))  # only what has grown: nothing else is asked
                ends[path] = end
        fetched = fetch_ahead(
            self.fs, jobs, errors="yield" if self.keep else "raise", deadline=self.deadline
        )
        done = 0
        try:
            for path, reader in zip(paths, readers):
                f = self._open[path]
                if path in ends:
                    j, data = next(fetched)
                    assert jobs[j][0] == path
                    if isinstance(data, BaseException):
                        self.failed.append(path)
                        warnings.warn(
                            f"{url(self.fs, path)}: could not be fetched ({data}); it is read"
                            " again next time",
                            ReadWarning,
                            2,
                        )
                        continue
                    source.put(path, jobs[j][1], data)
                    del data
                    try:
                        batch = reader.read_new()
                    finally:
                        source.drop(path)
                else:
                    batch = reader.read_new()
                done += 1
                if progress is not None:
                    progress(done)
                capped = path in ends and ends[path] < f.size
                kept = reader if (copies or f.reader is None) else None
                yield [path], [f.run], Batches.of([batch]), [kept], [capped]
        finally:
            fetched.close()
