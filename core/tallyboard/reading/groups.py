"""Reads files of a :class:`~tallyboard.reading.files.FileTable` in groups: local ones by a pool
of forked workers (:mod:`tallyboard.reading.pool`), many small ones at once; remote ones fetched
many at once (:mod:`tallyboard.reading.fetch`) and decoded here, one by one."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Iterator
from typing import Any

from tallyboard.plugin.readers import Batch, Batches, FileReader
from tallyboard.reading.fetch import Prefetched, fetch_ahead
from tallyboard.reading.files import FileTable
from tallyboard.reading.opener import Opener, snapshot
from tallyboard.reading.pool import plan, pool_size, read_tasks
from tallyboard.warn import ReadWarning


class _Job:
    """The files of one read, as the pool finds them (:class:`tallyboard.reading.pool.Job`).
    ``copies``: each file is read by a copy of its reader (a new one when it has none), kept
    only once the caller takes what it read (:meth:`FileTable.commit`)."""

    def __init__(
        self, table: FileTable, opener: Opener, paths: list[str], copies: bool = False
    ) -> None:
        self.table, self.opener, self.paths, self.copies = table, opener, paths, copies

    def reader(self, i: int) -> FileReader:
        path = self.paths[i]
        f = self.table.entries[path]
        if not self.copies:
            return self.opener.reader_of(path, f, self.table.keep)
        if f.reader is not None:
            return snapshot(f.reader)
        return self.opener.reader_of(path, f, False)


class GroupReader:
    """Reads files of ``table`` with the readers ``opener`` makes; files of a store (the
    file system ``fs``) within ``deadline`` seconds per call."""

    def __init__(self, table: FileTable, opener: Opener, fs: Any, deadline: float | None) -> None:
        self.table, self.opener, self.fs, self.deadline = table, opener, fs, deadline
        #: the files the last read could not read, skipped with a warning (read next time).
        self.failed: list[str] = []

    def iter_files(
        self,
        workers: int | None,
        progress: Callable[[int], None] | None,
        changed_only: bool,
    ) -> Iterator[tuple[str, str, Batch]]:
        """``(path, run, batch)`` per file of the table in order, what was appended since it
        was last read; a file not to read gives an empty batch, or nothing with
        ``changed_only`` (see :meth:`tallyboard.reading.runs.RunReader.iter_read`)."""
        entries = self.table.entries
        order = list(entries)
        dirty = self.table.dirty
        changed = {path for path in order if path in dirty}
        skipped = 0  # unchanged files passed, counted with the files read

        def done(files_read: int) -> None:
            if progress is not None:
                progress(skipped + files_read)

        groups = self.iter_groups(workers, done, changed, False, None)
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
                    yield path, entries[path].run, Batch()
        finally:
            groups.close()

    def iter_groups(
        self,
        workers: int | None,
        progress: Callable[[int], None] | None,
        changed: set[str] | None,
        light: bool,
        reduce: Callable[[Batches], Any] | None,
    ) -> Generator[tuple[list[str], list[str], Any], None, None]:
        """``(paths, runs, batches)`` per group of the files to read (``changed``, else the
        table's :meth:`~FileTable.to_read`), each file committed once its group is taken (see
        :meth:`tallyboard.reading.runs.RunReader.iter_groups`)."""
        commit = self.table.commit
        for paths, runs, batches, readers, capped in self.read_groups(
            self.table.to_read(changed), workers, progress, light, None, False, reduce
        ):
            for k, path in enumerate(paths):
                commit(path, readers[k] if readers is not None else None, capped[k])
            yield paths, runs, batches

    def read_groups(
        self,
        paths: list[str],
        workers: int | None,
        progress: Callable[[int], None] | None,
        light: bool,
        window: int | None,
        copies: bool,
        reduce: Callable[[Batches], Any] | None,
    ) -> Generator[tuple[list[str], list[str], Any, Any, list[bool]], None, None]:
        """``(paths, runs, batches, readers, capped)`` per group of ``paths`` read together,
        nothing committed (see :meth:`tallyboard.reading.runs.RunReader.read_groups`, which
        gives each argument its default)."""
        self.failed = []
        source = self.opener.source
        if isinstance(source, Prefetched):
            for got in self._iter_remote(source, paths, progress, window, copies):
                yield got if reduce is None else (*got[:2], reduce(got[2]), *got[3:])
            return
        keep = self.table.keep
        entries = self.table.entries
        files = [entries[p] for p in paths]
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

        isolate = copies and keep
        stops = dict(tasks)
        for start, readers, batches, capped, errors in read_tasks(
            _Job(self.table, self.opener, paths, copies),
            tasks,
            workers,
            keep,
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

        entries = self.table.entries
        job = _Job(self.table, self.opener, paths, copies)
        readers = [job.reader(i) for i in range(len(paths))]
        jobs, ends = [], {}
        for path, reader in zip(paths, readers):
            f = entries[path]
            offset = getattr(reader, "offset", None)
            if isinstance(offset, int) and f.size > offset and not getattr(reader, "dead", False):
                end = f.size if window is None else min(f.size, offset + window)
                jobs.append((path, offset, end))  # only what has grown: nothing else is asked
                ends[path] = end
        fetched = fetch_ahead(
            self.fs, jobs, errors="yield" if self.table.keep else "raise", deadline=self.deadline
        )
        done = 0
        try:
            for path, reader in zip(paths, readers):
                f = entries[path]
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
