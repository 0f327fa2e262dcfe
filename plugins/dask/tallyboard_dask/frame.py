"""``tallyboard_dask.read``: a log dir as a lazy Dask DataFrame, a partition per share of runs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import dask
import dask.dataframe as dd
import distributed
import pandas as pd
from dask.dataframe.utils import clear_known_categories
from tallyboard.plugin.readers import SCALAR_KIND
from tallyboard.reading import shares
from tallyboard.reading.shares import Plan

INDEXES = (None, "run")


def read(
    logdir: str | os.PathLike[str],
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    kind: str = "scalar",
    formats: str | Iterable[str] | None = None,
    storage_options: dict[str, Any] | None = None,
    partitions: int | None = None,
    blocksize: int = shares.SHARE_BYTES,
    deadline: float | None = None,
    index: str | None = None,
) -> dd.DataFrame:
    """Every value of ``kind`` under ``logdir`` as a lazy Dask DataFrame: what
    :func:`tallyboard.read` gives, read by the cluster's workers.

    The log dir is listed here, once; its runs are dealt into shares of about ``blocksize``
    bytes of files (or into ``partitions`` shares), a partition each, never splitting a run.
    Nothing else is read until the frame is computed: each worker reads its share as ``read``
    reads it (every checksum verified, a remote store's files fetched many at once under its
    deadline), so the client holds one partition at a time when it iterates. Computed, the
    frame equals ``read``'s row for row, with the same columns and dtypes (``run`` and ``tag``
    categorical, their categories unknown until computed, as Dask's own readers give them;
    for a kind other than scalars, the first partition is read here to learn its columns).
    A damaged record is skipped and its warning reaches the client (``distributed.warn``); a
    worker lost mid-read has its share read again by the scheduler.

    Args:
        logdir: A local directory every worker can read, or an fsspec URL (``s3://``, ...).
        runs, tags, kind, formats: As for :func:`tallyboard.read`.
        storage_options: Passed to fsspec here and on every worker (credentials, endpoint);
            default ``None``: this process's fsspec configuration of the store's protocol
            (``fsspec.config.conf``), else each worker's own (its environment).
        partitions: The number of partitions (at most one per run). Default ``None``: by
            ``blocksize`` and at most 1,000 files each, and at least two per worker thread of
            the cluster (the default client's; without one, two per core).
        deadline: Seconds each call to a remote store may take, here and on the workers
            (default ``None``: ``TALLYBOARD_REMOTE_DEADLINE``'s in each process, else 60): a
            store that stalls fails the read with ``OSError`` instead of holding a task.
        blocksize: Bytes of files per partition when ``partitions`` is not given.
        index: ``None`` (each partition numbered from 0, as ``read``'s frame) or ``"run"``: the
            run names (as strings) are the index, each partition sorted by run; the divisions
            are known when the shares' runs do not overlap (every run in one share, and the
            shares in name order, as a sweep's folders are).

    Raises:
        TypeError, ValueError: As ``read`` for its arguments; ``partitions`` or ``blocksize`` <
            1; an unknown ``index``.
        OSError: The store could not be listed.
    """
    if index not in INDEXES:
        raise ValueError(f"index must be one of {INDEXES}, got {index!r}")
    cores = 2 * _cores()  # shares at least
    plan = shares.plan(
        logdir, runs, tags, kind, formats, storage_options, partitions, blocksize, deadline, cores
    )
    if not len(plan):  # nothing matches: read's empty frame, as one partition
        empty = shares.empty(kind)
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_pandas(empty if index is None else _indexed(empty), npartitions=1)
    meta: Any = dd.utils.no_default  # another kind's columns: from the first partition
    if kind == SCALAR_KIND:
        meta = clear_known_categories(shares.empty(kind))
        if index is not None:
            meta = _indexed(meta)
    # the partitions' dtypes as read gives them: dask would turn every object column into its
    # string dtype, cells that hold lists, arrays or bytes (shapes, tensors, images) included
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(
            _read_part,
            [plan.part(k) for k in range(len(plan))],
            index=index,
            meta=meta,
            divisions=_divisions(plan) if index else None,
            label="tallyboard-read",
            enforce_metadata=False,
        )


def _cores() -> int:
    """The worker threads of the Dask cluster this process is a client of (its default
    client), else this machine's cores (the local schedulers')."""
    try:
        client = distributed.default_client()
    except ValueError:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def _read_part(plan: Plan, index: str | None = None) -> pd.DataFrame:
    """A partition: the one share of ``plan``, read here; warnings go to the client too."""
    from distributed import warn

    frame = shares.read_share(plan, 0, "pandas", warn)
    return frame if index is None else _indexed(frame)


def _indexed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` indexed by its runs (as strings), sorted by run (stable: each run's rows keep
    their order)."""
    frame = frame.assign(run=frame["run"].astype(str))
    return frame.sort_values("run", kind="stable").set_index("run")


def _divisions(plan: Plan) -> tuple[Any, ...] | None:
    """The partitions' bounds on the run index, when each holds runs no other does, in name
    order; else None (unknown)."""
    bounds = [(min(r), max(r)) for r in (plan.runs(k) for k in range(len(plan)))]
    if any(hi >= lo for (_, hi), (lo, _) in zip(bounds, bounds[1:])):
        return None
    return (*(lo for lo, _ in bounds), bounds[-1][1])
