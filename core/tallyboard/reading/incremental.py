"""``tallyboard.Reader``: a log dir read again and again, each time only what is new.

A live dashboard, a TensorBoard data provider or a script that watches a sweep polls the same
tree every few seconds. :class:`Reader` keeps, per file, the byte offset its last read stopped at
and the size the last listing gave; :meth:`Reader.poll` lists the tree again (a ``stat`` per
known folder and file on a local disk, one listing on an fsspec store), opens only the files
whose size changed, reads them from where it stopped, and says which runs appeared and which
disappeared. ``tallyboard.read`` is the same machinery, polled once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.plugin.readers import Batch
from tallyboard.reading.read import FORMATS, build_table
from tallyboard.reading.runs import RunReader
from tallyboard.reading.select import matcher, names_or_globs


@dataclass
class Update:
    """What one :meth:`Reader.poll` found.

    ``added`` and ``removed`` are sorted run names: runs seen for the first time (or again after
    they were removed) and runs whose files are all gone. A run in both was deleted and written
    again between two polls: drop what you hold of it, then take its new values. ``batches``
    maps each run with new values to one :class:`~tallyboard.plugin.readers.Batch` (its files'
    news in path order): scalars as numpy columns (``batch.scalars()``), other kinds as rows
    (``batch.rows[kind]``), values no installed kind decodes counted in ``batch.undecoded``.
    """

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    batches: dict[str, Batch] = field(default_factory=dict)
    #: files that could not be read this time (each warned about: a store's object not
    #: fetched, a local file raising ``OSError``): read again, from where they were, next poll.
    failed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        """Whether anything changed: a run added or removed, or a new value."""
        return bool(self.added or self.removed or self.batches)

    def table(self, kind: str = SCALAR, table: str = "pandas") -> Any:
        """The new values of ``kind`` as the table :func:`tallyboard.read` gives (a DataFrame,
        or a pyarrow Table with ``table="arrow"``): ``run, tag, step, wall_time, value`` for
        scalars, ``run, tag, step, wall_time`` and the decoded fields for other kinds.

        Args:
            kind: the kind of values, ``"scalar"`` by default.
            table: ``"pandas"`` or ``"arrow"``.

        Returns:
            The table; the batches are left as they are, so it can be asked for again.

        Raises:
            ValueError: ``table`` is neither ``"pandas"`` nor ``"arrow"``.
            TypeError: ``kind`` is not a str.
        """
        if table not in FORMATS:
            raise ValueError(f"table must be one of {FORMATS}, got {table!r}")
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a str, got {type(kind).__name__}")
        from tallyboard.extras import require

        require("pyarrow" if table == "arrow" else "pandas", "read", "Update.table")
        pairs = []
        for run, batch in self.batches.items():
            batch.flush_lists()
            pairs.append((run, Batch(columns=list(batch.columns), rows=batch.rows)))
        return build_table(pairs, kind, table)


class Reader:
    """A log dir (local path or fsspec URL) read incrementally: :meth:`poll` returns what is new.

    The first :meth:`poll` reads everything there is; each later one lists the tree again and
    reads only the files whose size changed, from the byte where the previous read stopped (a
    torn last record, a writer mid-record, is read again once complete). On Linux, a local tree
    is followed by the kernel's change events, so a poll of a quiet tree costs almost nothing.
    Every CRC is checked; a corrupt record warns once
    (:class:`~tallyboard.plugin.readers.ReadWarning`, with the file and byte offset) and is
    skipped. Runs are the directories holding readable files, named by their path relative to
    ``logdir`` (``"."`` for ``logdir`` itself), as :func:`tallyboard.read` names them.

    Args:
        logdir: a local directory or an fsspec URL (``"s3://bucket/runs"``).
        runs: names or globs of the runs to read (``"lr=0.1/*"``); others are never opened
            nor fetched. None reads every run.
        tags: names or globs of the tags whose values are returned; None returns every tag.
        kinds: a kind name or names (``"scalar"``, ``"histogram"``, ...) whose values are
            returned; None returns every kind. Every kind is still decoded, so undecoded
            counts stay right and offsets move over everything.
        formats: as in :func:`tallyboard.read`: None reads a run directory holding the same
            values in several formats in one of them (event files first).
        workers: processes decoding local files when there are many new bytes (default: the
            cores when it pays; 1 reads in this process). Never used while this process runs
            other threads.
        deadline: seconds each call to a remote store may take (the listing, each fetch;
            default ``TALLYBOARD_REMOTE_DEADLINE``, 60): a store that does not answer in time
            makes the listing raise ``TimeoutError`` (an ``OSError``) naming the URL, and a
            fetch fail for that file only (see :attr:`Update.failed`, which also lists local
            files that could not be read: deleted after the listing, no permission).
        summaries: keep TensorBoard's summaries as event files hold them
            (``Batch.summaries``, ``Batch.scalar_heads``) instead of decoded rows, for a
            consumer that shows or copies them as they are (``tallyboard board``). Default
            False.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: ``logdir`` is not a directory, or a format or kind is unknown.

    Example:
        >>> reader = Reader("runs/sweep")                   # doctest: +SKIP
        >>> update = reader.poll()                          # doctest: +SKIP
        >>> for run, batch in update.batches.items():       # doctest: +SKIP
        ...     tags, steps, wall_times, values = batch.scalars()

    A Reader is not thread-safe: poll it from one thread at a time.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        *,
        runs: str | Iterable[str] | None = None,
        tags: str | Iterable[str] | None = None,
        kinds: str | Iterable[str] | None = None,
        formats: str | Iterable[str] | None = None,
        workers: int | None = None,
        deadline: float | None = None,
        summaries: bool = False,
    ) -> None:
        from tallyboard.plugin.registry import get_registry
        from tallyboard.reading.pool import pool_size

        pool_size(workers, 1, 0)  # checks workers
        if not isinstance(summaries, bool):
            raise TypeError(f"summaries must be a bool, got {type(summaries).__name__}")
        self._workers = workers
        kind_names = names_or_globs(kinds, "kinds")
        if kind_names is not None:
            reg = get_registry()
            known = set(reg.kinds) | {k for _, k in reg.decoders} | {SCALAR}
            unknown = sorted(set(kind_names) - known)
            if unknown:
                raise ValueError(f"kinds: unknown kind(s) {unknown}; known kinds: {sorted(known)}")
        self._kinds = None if kind_names is None else frozenset(kind_names)
        tag_globs = names_or_globs(tags, "tags")
        self._wanted_tag = None if tag_globs is None else matcher(tag_globs)
        only = (
            next(iter(self._kinds)) if self._kinds is not None and len(self._kinds) == 1 else None
        )
        self._files = RunReader(
            logdir,
            formats,
            only,
            runs=names_or_globs(runs, "runs"),
            deadline=deadline,
            summaries=summaries,
        )
        self.logdir = os.fspath(logdir)
        #: what the last :meth:`poll` or :meth:`iter_poll` found: runs added and removed (set
        #: before :meth:`iter_poll` yields its first batch), files that failed.
        self.last_update = Update()
        #: run -> how many of its files are open.
        self._file_count: dict[str, int] = {}

    @property
    def runs(self) -> list[str]:
        """The runs known after the last :meth:`poll`, sorted."""
        return sorted(self._file_count)

    def poll(self, progress: Callable[[int], None] | None = None) -> Update:
        """List the log dir again and read what is new since the last poll.

        Args:
            progress: called as ``progress(files_read)`` after each file read (optional).

        Returns:
            An :class:`Update`: runs added and removed, and per run with news one Batch.

        Raises:
            OSError: the listing of a remote store failed or timed out (the message names the
                URL; ``PermissionError``, ``FileNotFoundError`` as the store raised them).
        """
        got: dict[str, Batch] = {}
        for run, batch in self.iter_poll(progress=progress):
            if run in got:
                got[run].extend(batch)
            else:
                got[run] = batch
        update = self.last_update
        update.batches = dict(sorted(got.items()))
        return update

    def iter_poll(
        self, max_bytes: int | None = None, progress: Callable[[int], None] | None = None
    ) -> Iterator[tuple[str, Batch]]:
        """:meth:`poll`, one ``(run, batch)`` at a time as files are read, so memory holds what
        the caller keeps, not the whole log dir: a run with several files (or a file read in
        windows) gives several batches, in file order.

        :attr:`last_update` holds the runs added and removed before the first batch comes
        (its ``batches`` stay empty). A file is taken as read once its batch is yielded: a
        caller that stops early loses nothing (the next poll reads on from there).

        Args:
            max_bytes: at most about this many bytes of a file (whole records, a chunk of
                4 MiB more at most) go into one batch; a larger news comes in several
                batches, each read from where the one before stopped. None: whole files.
            progress: called as ``progress(files_read)`` (optional).

        Yields:
            ``(run, batch)``: new values of one file of ``run`` (or of a window of it).

        Raises:
            ValueError: ``max_bytes`` is not a positive int.
            OSError: as :meth:`poll`.
        """
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
        ):
            raise ValueError(f"max_bytes must be None or a positive int, got {max_bytes!r}")
        self.last_update = update = self._refresh()
        files = self._files
        paths = files.to_read()
        while paths:
            capped_now: list[str] = []
            groups = files.read_groups(
                paths, self._workers, progress, window=max_bytes, copies=True
            )
            try:
                for group_paths, runs, batches, readers, capped in groups:
                    for k, (path, run) in enumerate(zip(group_paths, runs)):
                        if path in files.failed:
                            continue  # not read: left to read again at the next poll
                        batch = self._keep(batches.batch(k))
                        files.commit(path, readers[k] if readers is not None else None, capped[k])
                        if capped[k]:
                            capped_now.append(path)
                        if not batch.empty():
                            yield run, batch
            finally:
                groups.close()
                update.failed.extend(getattr(files, "failed", []))
            paths = capped_now  # the rest of the files read in windows

    def _refresh(self) -> Update:
        """List again; the runs added and removed since the last poll."""
        files = self._files
        opened, gone = files.refresh()
        if not opened and not gone:
            return Update()
        count = self._file_count
        before = dict(count)
        for path in opened:
            run = files.run_of_file(path)
            count[run] = count.get(run, 0) + 1
        lost: dict[str, int] = {}
        for _, run in gone:
            lost[run] = lost.get(run, 0) + 1
            count[run] -= 1
            if not count[run]:
                del count[run]
        # every file it had is gone, and new ones are there: deleted and written again
        replaced = {run for run, n in lost.items() if n == before[run] and run in count}
        return Update(
            added=sorted(set(count) - set(before) | replaced),
            removed=sorted(set(before) - set(count) | replaced),
        )

    def _keep(self, batch: Batch) -> Batch:
        """``batch`` with only the wanted kinds and tags."""
        kinds, wanted = self._kinds, self._wanted_tag
        if kinds is None and wanted is None:
            return batch
        out = Batch(undecoded=batch.undecoded)
        if wanted is not None:
            out.undecoded = {k: n for k, n in batch.undecoded.items() if wanted(k[1])}
        if kinds is None or SCALAR in kinds:
            batch.flush_lists()
            if wanted is None:
                out.columns = batch.columns
            else:
                import numpy as np

                for names, codes, step, wall, value in batch.columns:
                    keep = np.array([wanted(str(t)) for t in names], bool)
                    if keep.all():
                        out.columns.append((names, codes, step, wall, value))
                    elif keep.any():
                        rows = keep[codes]
                        out.columns.append(
                            (names, codes[rows], step[rows], wall[rows], value[rows])
                        )
        for kind, rows in batch.rows.items():
            if kinds is not None and kind not in kinds:
                continue
            if wanted is not None:
                rows = [row for row in rows if wanted(str(row["tag"]))]
            if rows:
                out.rows[kind] = rows
        out.summaries = [s for s in batch.summaries if kinds is None or s[0] in kinds]
        out.scalar_heads = batch.scalar_heads
        return out

    def close(self) -> None:
        """Forget every file and offset; a later :meth:`poll` reads everything again."""
        self._file_count = {}
        self._files.reset()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Reader({self.logdir!r}, runs known: {len(self._file_count)})"
