"""The recognised files under a log dir, listing after listing: which files of the wanted runs,
in the formats chosen, are read (a :class:`~tallyboard.reading.files.FileTable`), and what
changed since the listing before (files that appeared, grew, shrank, were replaced or are gone)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from tallyboard.plugin.readers import ReaderSpec
from tallyboard.reading.files import FileTable
from tallyboard.reading.lister import Lister
from tallyboard.reading.select import FormatChoice
from tallyboard.warn import ReadWarning

_UNSEEN: Any = object()  # a file no listing has met yet


class Catalogue:
    """Takes each listing of ``lister`` into ``table``: the files of runs ``wanted_run`` keeps
    (a run is a folder's path relative to the log dir, ``"."`` for the log dir itself), in the
    formats ``choice`` keeps and chooses.

    Each listing notes every recognised file's size; the table's files that grew are read
    again, those gone are forgotten. A table that keeps no readers (a one-time read) is
    listed once, and of that listing only the table is kept."""

    def __init__(
        self,
        lister: Lister,
        choice: FormatChoice,
        wanted_run: Callable[[str], bool],
        table: FileTable,
    ) -> None:
        self.lister, self.choice, self.wanted_run, self.table = lister, choice, wanted_run, table
        self.root, self.keep = lister.root, table.keep
        self.listed_once = False
        self._not_files: set[str] = set()  # special files already reported
        self._sizes: dict[str, int] = {}  # every recognised file -> size when last listed
        self._shrunk: set[str] = set()  # files that shrank, already reported
        #: every listed file -> the reader spec that reads it (None: no reader does).
        self._spec_of: dict[str, ReaderSpec | None] = {}
        #: run folder -> its recognised files (read or not) and their formats.
        self._present: dict[str, dict[str, ReaderSpec]] = {}

    def take(self, files: Iterable[tuple[str, str, str, int]]) -> None:
        """Take the files ``(path, run, format, size)`` in that order, as the only listing."""
        readers = self.choice.readers
        for path, run, fmt, size in files:
            self.table.add(path, run, readers[fmt], size)
        self.listed_once = True

    def run_of(self, parent: str) -> str:
        """The run name of the folder ``parent`` (its path relative to the log dir)."""
        return parent[len(self.root) :].strip("/") or "."

    def size(self, path: str) -> int:
        """The size of ``path`` when last listed (0 when unknown)."""
        return self._sizes.get(path, 0)

    def refresh(self) -> tuple[list[str], list[tuple[str, str]]]:
        """List again; returns ``(opened, gone)`` (see
        :meth:`tallyboard.reading.runs.RunReader.refresh`)."""
        if not self.keep and self.listed_once:
            return [], []
        restarted: list[tuple[str, str]] = []
        scanned = self.lister.rescan() if self.listed_once else None
        if scanned is not None:
            replaced, resized = scanned
            if replaced:
                restarted = self._restart(replaced)
            elif resized is not None:  # no file appeared nor vanished: only sizes moved
                self._resized(resized)
                return [], []
        listing = self.lister.files(self.listed_once, scanned is not None)
        found, grown = self._recognise(listing)
        gone = self._forget(found, listing) + restarted
        opened = self._open_new(found)
        sizes = self._sizes
        self._resized([(p, sizes[p]) for p in grown])
        self.listed_once = True
        if not self.keep:  # what a later listing compares with: there is none
            for table in (self._spec_of, self._present, self._sizes):
                table.clear()
        return opened, gone

    def _recognise(
        self, listing: list[tuple[str, bool, int]]
    ) -> tuple[dict[str, list[tuple[str, ReaderSpec]]], list[str]]:
        """The files of ``listing`` a reader reads, in formats asked for, by run folder; and
        those listed before whose size changed (new ones are not). Their sizes are noted."""
        found: dict[str, list[tuple[str, ReaderSpec]]] = {}
        sizes, spec_of, formats = self._sizes, self._spec_of, self.choice.formats
        size_was, spec_known, reader_for = sizes.get, spec_of.get, self.choice.reader_for
        resized: list[str] = []
        parent: str | None = None  # the folder of the file before, and its files found
        files: list[tuple[str, ReaderSpec]] = []
        for path, regular, size in listing:
            cut = path.rfind("/")
            spec = spec_known(path, _UNSEEN)
            if spec is _UNSEEN:
                spec = spec_of[path] = reader_for(path[cut + 1 :])
            if spec is None:
                continue
            if not regular:
                if path not in self._not_files:
                    self._not_files.add(path)
                    warnings.warn(
                        f"{path}: not a regular file (a FIFO, socket, device or dangling link);"
                        " skipped",
                        ReadWarning,
                        4,  # the caller of RunReader.refresh
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
        return found, resized

    def _open_new(self, found: dict[str, list[tuple[str, ReaderSpec]]]) -> list[str]:
        """Put in the table the files of ``found`` not met before, of wanted runs and chosen
        formats; returns their paths."""
        opened = []
        entries, sizes, choice = self.table.entries, self._sizes, self.choice
        for parent, files in found.items():
            present = self._present.get(parent)
            if present is not None and len(present) == len(files):
                continue  # nothing new in this run folder
            run = self.run_of(parent)
            if not self.wanted_run(run):
                continue
            present = self._present.setdefault(parent, {})
            fresh = [(p, s) for p, s in files if p not in present]
            if not fresh:
                continue
            present.update(fresh)
            chosen = None
            if choice.formats is None:  # asked for no format: one of the competing ones
                chosen = choice.choose(
                    parent, {s.name for s in present.values() if s.priority is not None}
                )
            for path, spec in files:
                if path in entries or (
                    spec.priority is not None and chosen not in (None, spec.name)
                ):
                    continue
                self.table.add(path, run, spec, sizes[path])
                opened.append(path)
        return opened

    def _restart(self, replaced: list[str]) -> list[tuple[str, str]]:
        """Forget the run folders of the files ``replaced`` that were read from an offset
        (what was read of them is of another file), so the listing after takes their files in
        as new; returns ``(path, run)`` of the files forgotten. A replaced file read whole
        each time (a config) is only marked to read again."""
        gone: list[tuple[str, str]] = []
        for path in sorted(replaced):
            f = self.table.entries.get(path)
            if f is None:
                continue
            if not isinstance(getattr(f.reader, "offset", None), int):
                self.table.again(path)
                continue
            parent = path.rsplit("/", 1)[0]
            for p in self._present.pop(parent, {}):
                was = self.table.drop(p)
                if was is not None:
                    gone.append((p, was.run))
                self._sizes.pop(p, None)
                self._shrunk.discard(p)
            self.choice.forget(parent)
        return gone

    def _resized(self, changes: list[tuple[str, int]]) -> None:
        """Note the new sizes of files of the last listing; a file that shrank below where it
        was read is reported once and not read again."""
        entries, dirty = self.table.entries, self.table.dirty
        for path, size in changes:
            if path not in self._sizes:
                continue  # a file no reader reads
            self._sizes[path] = size
            f = entries.get(path)
            if f is None:
                continue
            f.size = size
            dirty.add(path)
            offset = getattr(f.reader, "offset", None)
            if isinstance(offset, int) and f.size < offset and path not in self._shrunk:
                self._shrunk.add(path)
                warnings.warn(
                    f"{path}: the file shrank to {f.size} bytes after being read to offset"
                    f" {offset}; it is not read again (a file rewritten in place cannot be"
                    " read incrementally)",
                    ReadWarning,
                    3,
                )
                if hasattr(f.reader, "dead"):
                    f.reader.dead = True  # type: ignore[union-attr]

    def _forget(
        self, found: dict[str, list[tuple[str, ReaderSpec]]], listing: list[tuple[str, bool, int]]
    ) -> list[tuple[str, str]]:
        """Drop the files not in ``found`` any more; returns those that were read."""
        if not self.listed_once:
            return []
        if len(self._spec_of) > len(listing):  # some file listed before is gone
            here_all = {path for path, _, _ in listing}
            for path in [p for p in self._spec_of if p not in here_all]:
                del self._spec_of[path]
        here = {path for files in found.values() for path, _ in files}
        if len(here) == len(self._sizes):  # every file found before (and no other) is here
            return []
        gone = [(path, f.run) for path, f in self.table.entries.items() if path not in here]
        for path, _ in gone:
            self.table.drop(path)
        for path in [p for p in self._sizes if p not in here]:
            del self._sizes[path]
            self._shrunk.discard(path)
        for parent in [p for p in self._present if p not in found]:
            del self._present[parent]  # the run folder holds no recognised file now
            self.choice.forget(parent)
        for present in self._present.values():
            for path in [p for p in present if p not in here]:
                del present[path]
        return gone

    def reset(self) -> None:
        """Forget every file, offset, choice and listing: the next listing starts over."""
        for table in (self._sizes, self._shrunk, self._not_files, self._spec_of, self._present):
            table.clear()
        self.table.clear()
        self.choice.clear()
        self.lister.close()
        self.listed_once = False
