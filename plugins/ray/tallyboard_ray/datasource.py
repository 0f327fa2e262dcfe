"""``tallyboard_ray.read``: a log dir as a Ray Dataset, a read task per share of runs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask
from tallyboard.plugin.readers import SCALAR_KIND
from tallyboard.reading import shares
from tallyboard.reading.shares import Plan


def _cores() -> int:
    """The CPUs of the Ray cluster this process has joined, else this machine's cores."""
    if ray.is_initialized():
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    return os.cpu_count() or 1


def _schema() -> Any:
    import pyarrow as pa

    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            ("run", text),
            ("tag", text),
            ("step", pa.int64()),
            ("wall_time", pa.float64()),
            ("value", pa.float64()),
        ]
    )


#: the scalars' block schema: ``read(table="arrow")``'s, with int32 dictionary indices.
SCHEMA = _schema()


class TallyboardDatasource(Datasource):  # type: ignore[misc]
    """A log dir's values of one kind, for ``ray.data.read_datasource``: the shares of runs of
    ``plan`` (:func:`tallyboard.reading.shares.plan`, listed once by the driver), each read by
    one read task as :func:`tallyboard.read` reads it and given as one Arrow block (``run``
    and ``tag`` dictionary-encoded). :func:`read` makes one."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def get_name(self) -> str:
        return "Tallyboard"

    def estimate_inmemory_data_size(self) -> int | None:
        """The files' bytes: a scalar's record and its row are of the same order of size."""
        return sum(self.plan.share_bytes(k) for k in range(len(self.plan)))

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        """One task per share of runs (the shares are made by bytes when listed, whatever
        ``parallelism`` asks: a run is never split)."""
        tasks = []
        for k in range(len(self.plan)):
            part = self.plan.part(k)
            meta = BlockMetadata(
                num_rows=None,
                size_bytes=part.share_bytes(0),
                exec_stats=None,
                input_files=tuple(part.paths(0)),
            )
            tasks.append(
                ReadTask(
                    lambda part=part: [_read_part(part)],
                    meta,
                    schema=SCHEMA if self.plan.kind == SCALAR_KIND else None,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks


def _read_part(plan: Plan) -> Any:
    """A block: the one share of ``plan``, read here (its warnings in the worker's log, which
    Ray shows on the driver). ``run`` and ``tag`` have int32 dictionary indices in every block
    (``read`` picks the smallest, which would differ from block to block)."""

    table = shares.read_share(plan, 0, "arrow")
    if plan.kind != SCALAR_KIND:
        return table
    if not table.num_rows:
        table = shares.empty(plan.kind, "arrow")
    return table.cast(SCHEMA) if table.schema != SCHEMA else table


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
    **read_args: Any,
) -> ray.data.Dataset:
    """Every value of ``kind`` under ``logdir`` as a Ray ``Dataset``: what
    :func:`tallyboard.read` gives, read by Ray's workers.

    The log dir is listed here, once; its runs are dealt into shares of about ``blocksize``
    bytes of files (or into ``partitions`` shares), a read task and a block each, never
    splitting a run. The dataset is lazy, as Ray's own readers: each task reads its share as
    ``read`` reads it (every checksum verified, a remote store's files fetched many at once
    under its deadline), and Ray retries a task whose worker died. ``ds.to_pandas()`` equals
    ``read``'s frame row for row (``run`` and ``tag`` categorical). Other keyword arguments
    go to ``ray.data.read_datasource`` (``concurrency``, ``ray_remote_args``, ...).

    Args:
        logdir: A local directory every node can read, or an fsspec URL (``s3://``, ...).
        runs, tags, kind, formats: As for :func:`tallyboard.read`.
        storage_options: Passed to fsspec here and in every task (credentials, endpoint);
            default ``None``: this process's fsspec configuration of the store's protocol
            (``fsspec.config.conf``), else each worker's own (its environment).
        partitions: The number of read tasks (at most one per run). Default ``None``: by
            ``blocksize`` and at most 1,000 files each, and at least two per CPU of the Ray
            cluster joined (else of this machine).
        deadline: Seconds each call to a remote store may take, here and on the workers
            (default ``None``: ``TALLYBOARD_REMOTE_DEADLINE``'s in each process, else 60): a
            store that stalls fails the read with ``OSError`` instead of holding a task.
        blocksize: Bytes of files per task when ``partitions`` is not given.

    Raises:
        TypeError, ValueError: As ``read`` for its arguments; ``partitions`` or ``blocksize`` <
            1.
        OSError: The store could not be listed.
    """
    cores = 2 * _cores()  # shares at least
    plan = shares.plan(
        logdir, runs, tags, kind, formats, storage_options, partitions, blocksize, deadline, cores
    )
    source = TallyboardDatasource(plan)
    return ray.data.read_datasource(source, **read_args)
