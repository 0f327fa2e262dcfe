"""Run discovery and incremental reads: every file a reader plugin recognises under a log dir.

:class:`RunReader` is the face over the parts that do the work: what a read selects
(:mod:`~tallyboard.reading.select`), the listing (:mod:`~tallyboard.reading.lister`), what
changed between listings (:mod:`~tallyboard.reading.catalogue`), the files to read and how far
each was read (:mod:`~tallyboard.reading.files`), the readers made for them
(:mod:`~tallyboard.reading.opener`) and the reading itself, in groups
(:mod:`~tallyboard.reading.groups`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from tallyboard.plugin.readers import Batch, Batches, FileReader
from tallyboard.reading.catalogue import Catalogue
from tallyboard.reading.fetch import is_local
from tallyboard.reading.files import FileTable
from tallyboard.reading.groups import GroupReader
from tallyboard.reading.lister import Lister
from tallyboard.reading.opener import Opener
from tallyboard.reading.select import FormatChoice, matcher, names_or_globs
from tallyboard.reading.tree import LocalTree, Share

__all__ = ["RunReader"]


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
        choice = FormatChoice(reg.readers, reg.decoders, formats, kind)
        wanted_run = matcher(names_or_globs(runs, "runs"))
        self.keep = keep
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
        self._choice = choice
        self._lister = Lister(self.fs, self.root, keep, deadline)
        #: the files read (of wanted runs, in a chosen format), in reading order.
        self._table = FileTable(keep)
        self._catalogue = Catalogue(self._lister, choice, wanted_run, self._table)
        #: readers that can keep TensorBoard's summaries as their files hold them (a
        #: ``keep_summaries`` attribute) are told to (``Batch.summaries``): True to show them,
        #: ``"exact"`` to copy them (scalars in tensor form kept whole too)
        self._opener = Opener(self.fs, reg.decoders, summaries)
        self._groups = GroupReader(self._table, self._opener, self.fs, deadline)

    @property
    def formats(self) -> set[str] | None:
        """The formats asked for (None: every format, one competing format per run folder)."""
        return self._choice.formats

    @property
    def kind(self) -> str | None:
        """The kind asked for (None: every kind): a run folder's competing format is one with
        a decoder for it."""
        return self._choice.kind

    @property
    def summaries(self) -> bool | str:
        """What readers able to keep TensorBoard's summaries are told (see ``__init__``)."""
        return self._opener.summaries

    @property
    def skipped(self) -> dict[str, set[str]]:
        """Run folder -> competing formats found there but not read (same values again)."""
        return self._choice.skipped

    @skipped.setter
    def skipped(self, value: dict[str, set[str]]) -> None:
        self._choice.skipped = value

    @property
    def failed(self) -> list[str]:
        """The files the last :meth:`read_groups` could not read (read again next time)."""
        return self._groups.failed

    @property
    def tree(self) -> LocalTree | None:
        """The local tree kept between listings (None: none kept)."""
        return self._lister.tree

    def only(self, share: Share) -> None:
        """List only ``share`` of a local tree (one of those :func:`~tallyboard.reading.tree.deal`
        gives), as one of several processes that read the tree apart. For a reader made with
        ``keep=False``, before its first listing."""
        if self.keep or self._catalogue.listed_once:
            raise RuntimeError("only() is for a one-time reader, before it lists")
        self._lister.only(share)

    def take(self, files: Iterable[tuple[str, str, str, int]]) -> None:
        """Read the files ``(path, run, format, size)`` another reader's listing found, in
        that order, instead of listing (a share of a tree dealt to an engine's worker: the
        tree is listed once, by the client), before it lists."""
        if self._catalogue.listed_once:
            raise RuntimeError("take() is for a reader that has not listed yet")
        self._catalogue.take(files)

    def listed(self) -> list[tuple[str, str, str, int]]:
        """``(path, run, format, size)`` of every file to read, in reading order, as
        :meth:`take` takes them."""
        return [(path, f.run, f.spec.name, f.size) for path, f in self._table.entries.items()]

    def run_of(self, parent: str) -> str:
        """The run name of the directory ``parent`` (its path relative to the log dir)."""
        return self._catalogue.run_of(parent)

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
        return self._catalogue.refresh()

    def run_of_file(self, path: str) -> str:
        """The run of the file ``path`` (one :meth:`refresh` found)."""
        return self._table.entries[path].run

    def reset(self) -> None:
        """Forget every file, offset and listing: the next read starts over."""
        self._catalogue.reset()

    def discover(self) -> list[tuple[str, FileReader]]:
        """``(run, reader)`` for every recognised file, new files included: read them one by one
        (``reader.read_new()``) to hold one file's records at a time."""
        self.refresh()
        reader_of = self._opener.reader_of
        return [(f.run, reader_of(path, f, True)) for path, f in self._table.entries.items()]

    def paths(self) -> list[tuple[str, str]]:
        """``(path, run)`` of every file to read, in reading order (as :meth:`refresh` left
        them)."""
        return [(path, f.run) for path, f in self._table.entries.items()]

    def opened(self, path: str) -> FileReader:
        """The reader of ``path`` (a worker's copy once a pool has read it)."""
        return self._opener.reader_of(path, self._table.entries[path], self.keep)

    def size(self, path: str) -> int:
        """The size of ``path`` when last listed (0 when unknown)."""
        return self._catalogue.size(path)

    def resume(self, path: str) -> None:
        """Take ``path`` as read up to now when its reader (given the state of an earlier
        read) is at or past its listed size: it is then opened only once it grows."""
        self._table.resume(path)

    def unchanged(self, path: str) -> bool:
        """Whether reading ``path`` now would surely give nothing: it was read before, its
        reader keeps a byte offset, and the file's listed size is what it was when last read
        (or the reader is done with it)."""
        return self._table.unchanged(path)

    def to_read(self, changed: set[str] | None = None) -> list[str]:
        """The files to read, in reading order: those in ``changed``, else those new or grown
        since they were last read (and those whose reader keeps no offset)."""
        return self._table.to_read(changed)

    def commit(self, path: str, reader: FileReader | None, capped: bool = False) -> None:
        """Take what was read of ``path`` by ``reader`` (kept, when this reader keeps its
        readers; None: the reader kept read in place): it is not read again, but for what
        is appended after, or what ``capped`` left."""
        self._table.commit(path, reader, capped)

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
        yield from self._groups.iter_files(workers, progress, changed_only)

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
        yield from self._groups.iter_groups(workers, progress, changed, light, reduce)

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
        return self._groups.read_groups(paths, workers, progress, light, window, copies, reduce)
