"""A log dir dealt into shares of runs, each read apart: what an engine (Dask, Ray, ...) runs.

The client lists the tree once (:func:`plan`), as :func:`tallyboard.read` lists it; the files to
read are then cut into shares of whole runs (consecutive in reading order, about the same
bytes each), and a :class:`Plan` (plain data: it pickles small and travels to any worker)
names them. A worker reads share ``k`` with :func:`read_share`: the files its reader takes from
the plan (no second listing), read as ``read`` reads them (every CRC checked, a remote store's
files fetched many at once under its deadline), into the table ``read`` gives for them. Shares
read in order and concatenated give ``read``'s table row for row; only the categories of
``run`` and ``tag`` differ (each share's own), as in any engine's partitions.

Engine integrations build on this module; it names none of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.reading.runs import RunReader
from tallyboard.reading.select import matcher, names_or_globs

#: bytes of files per share by default (the files' size on disk or in the store).
SHARE_BYTES = 32 << 20
#: files per share by default, at most: a remote store's per-file cost is its latency.
SHARE_FILES = 1000

#: a file of a plan: ``(path, run, format, size)`` as :meth:`RunReader.take` takes it.
File = tuple[str, str, str, int]


@dataclass(frozen=True)
class Plan:
    """What an engine reads: the log dir, the selection, and the files of each share."""

    logdir: str
    kind: str = SCALAR
    tags: tuple[str, ...] | None = None
    formats: tuple[str, ...] | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)
    shares: tuple[tuple[File, ...], ...] = ()
    deadline: float | None = None

    def __len__(self) -> int:
        return len(self.shares)

    def part(self, k: int) -> Plan:
        """The plan of share ``k`` alone (what one task carries: not every share's files)."""
        return replace(self, shares=(self.shares[k],))

    def share_bytes(self, k: int) -> int:
        """The bytes of the files of share ``k`` (as listed)."""
        return sum(f[3] for f in self.shares[k])

    def runs(self, k: int) -> list[str]:
        """The runs of share ``k``, in reading order."""
        return list(dict.fromkeys(f[1] for f in self.shares[k]))

    def paths(self, k: int) -> list[str]:
        """The paths of the files of share ``k``, as the store names them (a URL)."""
        import fsspec

        fs, _ = fsspec.core.url_to_fs(self.logdir, **self.storage_options)
        return [fs.unstrip_protocol(f[0]) for f in self.shares[k]]


def positive(value: Any, what: str) -> None:
    """Refuse ``value`` unless it is None or an int >= 1 (``ValueError`` naming ``what``)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{what} must be None or an int >= 1, got {value!r}")


def plan(
    logdir: Any,
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    kind: str = SCALAR,
    formats: str | Iterable[str] | None = None,
    storage_options: dict[str, Any] | None = None,
    partitions: int | None = None,
    blocksize: int = SHARE_BYTES,
    deadline: float | None = None,
    at_least: int = 1,
    share_files: int = SHARE_FILES,
) -> Plan:
    """List ``logdir`` once and deal its files into shares of whole runs of about the same
    bytes: ``partitions`` shares when given (fewer when there are fewer runs), else as many
    as keep each under ``blocksize`` bytes and ``share_files`` files, and at least ``at_least`` (see
    :func:`deal`). The arguments are
    :func:`tallyboard.read`'s; ``storage_options`` go to fsspec (credentials, endpoint) here
    and on every worker (default: this process's fsspec configuration, see
    :func:`worker_options`); ``deadline`` bounds each call to a remote store, here and there
    (default ``TALLYBOARD_REMOTE_DEADLINE``'s, in each process). Raises as ``read`` does for a bad argument or a log dir that is not
    a directory; ``ValueError`` for ``partitions``, ``blocksize`` or ``share_files`` < 1."""
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    positive(partitions, "partitions")
    positive(blocksize, "blocksize")
    positive(share_files, "share_files")
    tag_globs = names_or_globs(tags, "tags")
    format_names = names_or_globs(formats, "formats")
    reader = RunReader(
        logdir,
        format_names,
        kind,
        runs=names_or_globs(runs, "runs"),
        keep=False,
        deadline=deadline,
        storage_options=storage_options,
    )
    reader.refresh()
    files = reader.listed()
    url = reader.fs.unstrip_protocol(reader.root)
    return Plan(
        url,
        kind,
        tag_globs,
        format_names,
        worker_options(reader),
        deal(files, partitions, blocksize, share_files, at_least),
        deadline,
    )


def worker_options(reader: RunReader) -> dict[str, Any]:
    """The storage options a worker reaches ``reader``'s store with: those ``reader`` was
    given, else this process's fsspec configuration of the store's protocol
    (``fsspec.config.conf``: its config files and ``FSSPEC_*`` variables), so that a worker
    reaches the store as this process does."""
    import fsspec

    if reader.storage_options:
        return reader.storage_options
    protocols = reader.fs.protocol
    for protocol in (protocols,) if isinstance(protocols, str) else protocols:
        if protocol in fsspec.config.conf:
            return dict(fsspec.config.conf[protocol])
    return {}


def deal(
    files: list[File],
    partitions: int | None = None,
    share_bytes: int = SHARE_BYTES,
    share_files: int = SHARE_FILES,
    at_least: int = 1,
) -> tuple[tuple[File, ...], ...]:
    """``files`` (in reading order) cut into consecutive shares, only where the run changes,
    of about the same bytes: ``partitions`` of them, else enough to keep each under
    ``share_bytes`` and ``share_files`` and at least ``at_least`` (two per core of the
    cluster keep every core busy to the end); never more than there are runs."""
    if not files:
        return ()
    total = sum(max(f[3], 1) for f in files)
    if partitions is None:
        partitions = max(
            math.ceil(total / share_bytes), math.ceil(len(files) / share_files), at_least
        )
    shares: list[tuple[File, ...]] = []
    start, held, done = 0, 0, 0
    for i, f in enumerate(files):
        if i > start and f[1] != files[i - 1][1] and len(shares) < partitions - 1:
            # cut here once this share holds its part of what is left
            left_shares = partitions - len(shares)
            if held >= (total - done) / left_shares or i - start >= share_files:
                shares.append(tuple(files[start:i]))
                done += held
                start, held = i, 0
        held += max(f[3], 1)
    shares.append(tuple(files[start:]))
    return tuple(shares)


def read_share(
    plan: Plan,
    k: int,
    table: str = "pandas",
    warn: Callable[[str, type[Warning]], None] | None = None,
) -> Any:
    """Share ``k`` of ``plan`` as the table :func:`tallyboard.read` gives for its files (a
    ``pandas.DataFrame``, or a ``pyarrow.Table`` with ``table="arrow"``), read in this process.
    The warnings ``read`` raises (a damaged record, values no plugin decodes) are raised here,
    or handed to ``warn(message, category)`` when given (an engine's way to the client); a
    store that does not answer raises ``OSError`` within its deadline."""
    from tallyboard.reading.pool import _recording
    from tallyboard.reading.read import read_listed

    def read() -> Any:
        reader = RunReader(
            plan.logdir,
            plan.formats,
            plan.kind,
            keep=False,
            deadline=plan.deadline,
            storage_options=plan.storage_options,
        )
        reader.take(plan.shares[k])
        wanted_tag = None if plan.tags is None else matcher(plan.tags)
        return read_listed(reader, plan.kind, table, wanted_tag, 1, None, plan.logdir)

    if warn is None:
        return read()
    got, caught = _recording(read)
    for message, category in caught:
        warn(message, category)
    return got


def empty(kind: str = SCALAR, table: str = "pandas") -> Any:
    """The table ``read`` gives when nothing matches: for scalars, its columns and dtypes
    (``run, tag`` categorical, ``step`` int64, ``wall_time, value`` float64); for another kind
    the four columns every kind has. What an engine takes as the schema before reading."""
    from tallyboard.reading.read import build_table

    return build_table([], kind, table)
