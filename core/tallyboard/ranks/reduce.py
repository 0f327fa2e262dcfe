"""Many ranks, one run: which rank writes, and values reduced across ranks in one batch.

Two parts, both used by :class:`~tallyboard.SummaryWriter`:

- :func:`plan_ranks` turns the writer's ``ranks=`` option and this process's rank
  (:mod:`tallyboard.ranks.discovery`, found without importing torch) into a :class:`RankPlan`: write or not,
  into which sub-run, with which tag suffix.
- :class:`RankSync` buffers values to be reduced across ranks and, at :meth:`RankSync.run` (a point
  every rank reaches: the writer's ``sync()``, ``flush()`` or ``close()``), reduces all of them
  at once. In a ``jax.distributed`` job (and no torch process group) each rank's rows go to rank
  0 through the job's key-value store. Otherwise it runs on a dedicated torch process group that
  has a timeout: a one-number ``all_reduce`` (does
  every rank's data fit the cached slot layout?) and one ``gather`` of a packed float64 tensor
  to rank 0, whatever the number of values. Only when some rank logged a key the layout lacks do
  the ranks also exchange their key sets (``all_gather_object``), so ranks that logged different
  tags, steps or counts are still reduced correctly. torch is imported only here, and only when
  a sync actually runs.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tallyboard.ranks import discovery as _ranks

RANK_MODES = ("zero", "each", "all")
REDUCE_OPS = ("mean", "sum", "min", "max")
STAT = "stat"  # the op of a Stat window: every aggregation it has, plus the slowest rank
DEFAULT_SYNC_TIMEOUT = 60.0

# Fields of one packed row: the slot is used, step (NaN: None), count, sum, min, max, last value,
# mean (Stat windows that carry only a mean), wall time of the last value.
_USED, _STEP, _COUNT, _SUM, _MIN, _MAX, _LAST, _MEAN, _WALL = range(9)
_FIELDS = 9
_NAN = math.nan

Key = tuple[str, str, str]  # (kind, tag, op)
Result = tuple[str, str, "int | None", float, float]  # (kind, tag, step, value, wall time)


class RankSyncError(RuntimeError):
    """Ranks could not reduce their values: a rank is gone, timed out, or no process group."""


@dataclass(frozen=True)
class RankPlan:
    """What one writer does on this rank: ``writes`` at all, into ``subdir``, tags + ``suffix``."""

    mode: str
    writes: bool
    subdir: str | None = None
    suffix: str = ""


def plan_ranks(mode: str | None) -> RankPlan:
    """The plan for ``ranks=mode`` on this process (``None`` means ``"zero"``).

    - ``"zero"``: only rank 0 writes (the other ranks validate and drop);
    - ``"each"``: every rank writes its own sub-run ``rank_<k>/``;
    - ``"all"``: every rank writes into the run itself, tags ending in ``/rank_<k>``.

    A DataLoader worker process never writes.
    """
    if mode is None:
        mode = "zero"
    if mode not in RANK_MODES:
        raise ValueError(f"ranks must be one of {RANK_MODES}, got {mode!r}")
    rank = _ranks.current().rank
    if _ranks.in_dataloader_worker():
        return RankPlan(mode, writes=False)
    if mode == "zero":
        return RankPlan(mode, writes=rank == 0)
    if mode == "each":
        return RankPlan(mode, writes=True, subdir=f"rank_{rank}")
    return RankPlan(mode, writes=True, suffix=f"/rank_{rank}")


def check_reduce(reduce: Any) -> tuple[str | None, dict[str, str]]:
    """Validate ``reduce=``: an op for every scalar, or ``{tag: op}`` (``"*"``: every other tag)."""
    if isinstance(reduce, str):
        if reduce not in REDUCE_OPS:
            raise ValueError(
                f"reduce must be one of {REDUCE_OPS} or a dict of them, got {reduce!r}"
            )
        return reduce, {}
    if not isinstance(reduce, Mapping):
        raise TypeError(
            f"reduce must be one of {REDUCE_OPS} or a dict of tag to op, got {type(reduce).__name__}"
        )
    ops: dict[str, str] = {}
    for tag, op in reduce.items():
        if not isinstance(tag, str):
            raise TypeError(f"reduce keys must be str tags, got {type(tag).__name__}: {tag!r}")
        if op not in REDUCE_OPS:
            raise ValueError(f"reduce[{tag!r}] must be one of {REDUCE_OPS}, got {op!r}")
        ops[tag] = op
    return ops.pop("*", None), ops


def check_timeout(timeout: Any) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"sync_timeout must be a number of seconds, got {type(timeout).__name__}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"sync_timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


_serials = itertools.count()  # RankSyncs in creation order: the same on every rank of SPMD code
_groups: dict[float, tuple[Any, Any]] = {}  # timeout -> (the default group it was made in, group)
_groups_lock = threading.Lock()


def _process_group(timeout: float) -> tuple[Any, Any, Any]:
    """torch.distributed, a group of every rank with ``timeout`` (gloo if built), its device."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    with _groups_lock:
        world, group = _groups.get(timeout, (None, None))
        if group is None or world is not dist.group.WORLD:  # none yet, or made before a re-init
            backend = "gloo" if dist.is_gloo_available() else None
            group = dist.new_group(backend=backend, timeout=timedelta(seconds=timeout))
            _groups[timeout] = (dist.group.WORLD, group)
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":  # no gloo in this build: tensors live on the GPU
        device = torch.device("cuda", torch.cuda.current_device())
    return dist, group, device


def _torch_group() -> Any:
    """``torch.distributed`` when it has an initialised default group (torch imported only
    when a launcher says this is one of several ranks), else None."""
    import sys

    dist = sys.modules.get("torch.distributed")
    if dist is None and _ranks.from_environment() is not None:
        import torch.distributed as dist
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _world(pending: bool, dist: Any) -> int:
    """Ranks to reduce over: the size of torch's process group (``dist``, from
    :func:`_torch_group`), else the jax job's process count, 1 when there is neither and no
    launcher.

    Without either a rank with ``pending`` values in a multi-rank job is an error.
    """
    if dist is not None:
        return int(dist.get_world_size())
    jax_job = _ranks.from_jax()
    if jax_job is not None:
        return jax_job.world_size
    info = _ranks.from_environment()
    if pending and info is not None and info.world_size > 1:
        raise RankSyncError(
            f"values are to be reduced across {info.world_size} ranks ({info.source} says so) but "
            "torch.distributed has no process group: call torch.distributed.init_process_group() "
            "(or, in a jax job, jax.distributed.initialize()) on every rank before the first "
            "sync(), flush() or close()"
        )
    return 1


class RankSync:
    """Values waiting to be reduced across ranks; :meth:`run` reduces them all at once."""

    def __init__(self, reduce: Any = None, timeout: float = DEFAULT_SYNC_TIMEOUT) -> None:
        self.default_op, self.ops = (None, {}) if reduce is None else check_reduce(reduce)
        self.timeout = check_timeout(timeout)
        self._lock = threading.Lock()
        self._rows: dict[Key, dict[int | None, list[float]]] = {}
        #: Values still on a device, ``add``-ed at the next run (a call never waits for them)
        self._deferred: list[tuple[str, str, str, int | None, Any, float]] = []
        self._rounds = 0  # runs so far: the same on every rank (each rank runs in step)
        self._layout: list[tuple[Key, int]] = []  # slot -> (key, j-th step of that key)
        self._broken: str | None = None
        self.serial = next(_serials)
        self.closed = False  # set by the writer's close(); a later add clears it

    def op_for(self, tag: str) -> str | None:
        """The op that reduces ``tag``, or None when ``tag`` is written as is."""
        return self.ops.get(tag, self.default_op)

    def add(
        self, kind: str, tag: str, op: str, step: int | None, value: float, wall: float
    ) -> None:
        """Accumulate one value of ``(kind, tag)`` at ``step`` on this rank."""
        self.closed = False
        with self._lock:
            steps = self._rows.get((kind, tag, op))
            if steps is None:
                steps = self._rows[(kind, tag, op)] = {}
            row = steps.get(step)
            if row is None:
                steps[step] = [1.0, _NAN if step is None else float(step), 1.0, value, value,
                               value, value, _NAN, wall]  # fmt: skip
                return
            row[_COUNT] += 1.0
            row[_SUM] += value
            if value < row[_MIN]:
                row[_MIN] = value
            if value > row[_MAX]:
                row[_MAX] = value
            row[_LAST] = value
            if wall > row[_WALL]:
                row[_WALL] = wall

    def add_deferred(
        self, kind: str, tag: str, op: str, step: int | None, pending: Any, wall: float
    ) -> None:
        """:meth:`add` of a value still on a device (a ``tallyboard.values.Pending`` of a
        float): made at the next :meth:`run`, so the call does not wait for the device."""
        self.closed = False
        with self._lock:
            self._deferred.append((kind, tag, op, step, pending, wall))

    def add_window(self, name: str, step: int, fields: Mapping[str, float], wall: float) -> None:
        """Queue one closed Stat window: ``fields`` maps aggregation names (``"mean"``...) to values."""
        get = fields.get
        row = [1.0, float(step), get("count", _NAN), get("sum", _NAN), get("min", _NAN),
               get("max", _NAN), get("value", _NAN), get("mean", _NAN), wall]  # fmt: skip
        self.closed = False
        with self._lock:
            self._rows.setdefault(("scalar", name, STAT), {})[step] = row

    def run(self) -> list[Result]:
        """Reduce every queued value across ranks (collective): the points to write, sorted."""
        if _ranks.in_dataloader_worker():  # a forked copy of a rank: never a collective
            self._rows, self._deferred = {}, []
            return []
        if self._broken is not None:
            raise RankSyncError(self._broken)
        dist = _torch_group()
        world = _world(bool(self._rows or self._deferred), dist)  # no group: values stay queued
        with self._lock:
            deferred, self._deferred = self._deferred, []
        for kind, tag, op, step, pending, wall in deferred:  # made here, in order
            try:
                value = pending.result()
            except Exception as exc:  # this rank still joins the others
                warnings.warn(
                    f"{tag!r} at step {step} is not reduced on this rank: its device value could "
                    f"not be read ({type(exc).__name__}: {exc})",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            self.add(kind, tag, op, step, value, wall)
        with self._lock:
            taken, self._rows = self._rows, {}
        local = [
            (key, j, row)
            for key, steps in taken.items()
            for j, (_, row) in enumerate(sorted(steps.items(), key=_step_order))
        ]
        if world == 1:
            return _combine({(key, j): [(0, row)] for key, j, row in local})
        try:
            if dist is not None:
                per_slot = self._exchange(local, world)
            else:
                per_slot = self._exchange_jax(local, world)
        except RankSyncError as exc:
            self._broken = str(exc)
            raise
        except Exception as exc:
            self._broken = (
                f"syncing values across {world} ranks failed ({type(exc).__name__}: {exc}); a rank "
                f"may have exited or not reached sync()/flush()/close() within {self.timeout:g} s "
                "(sync_timeout); no later sync is attempted"
            )
            raise RankSyncError(self._broken) from exc
        return _combine(per_slot)

    def _exchange(
        self, local: list[tuple[Key, int, list[float]]], world: int
    ) -> dict[tuple[Key, int], list[tuple[int, list[float]]]]:
        """Rank 0's rows of every rank by slot (``{}`` on other ranks): two small collectives.

        A one-number ``all_reduce`` (MIN of ``2 * serial + fits``) tells every rank whether all
        rows fit the cached layout, and a rank whose writer is not the one the others sync learns
        it here; if not all fit, the ranks exchange their key counts and agree on a new layout.
        Then one ``gather`` brings the packed rows to rank 0, the only rank that writes them.
        """
        import torch

        dist, group, device = _process_group(self.timeout)
        index = {slot: i for i, slot in enumerate(self._layout)}
        fits = all((key, j) in index for key, j, _ in local)
        flag = torch.tensor([2.0 * self.serial + fits], dtype=torch.float64, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=group)
        serial, all_fit = divmod(int(flag.item()), 2)
        if serial != self.serial:
            raise RankSyncError(
                f"ranks synced different writers at the same time (this rank: writer #{self.serial}, "
                f"another: #{serial}, in creation order): call sync()/flush()/close() of every "
                "reducing writer on every rank, in the same order"
            )
        if not all_fit:
            counts: dict[Key, int] = {}
            for key, j, _ in local:
                counts[key] = max(counts.get(key, 0), j + 1)
            everyone: list[Any] = [None] * world
            dist.all_gather_object(everyone, counts, group=group)
            union: dict[Key, int] = {}
            for theirs in everyone:
                for key, n in theirs.items():
                    union[key] = max(union.get(key, 0), n)
            self._layout = [(key, j) for key in sorted(union) for j in range(union[key])]
            index = {slot: i for i, slot in enumerate(self._layout)}
        if not self._layout:
            return {}
        packet = [0.0] * (len(self._layout) * _FIELDS)
        for key, j, row in local:
            at = index[(key, j)] * _FIELDS
            packet[at : at + _FIELDS] = row
        mine = torch.tensor(packet, dtype=torch.float64, device=device)
        root = dist.get_rank(group) == 0
        out = [torch.empty_like(mine) for _ in range(world)] if root else None
        dist.gather(mine, out, dst=0, group=group)  # the group holds every rank: 0 is 0
        per_slot: dict[tuple[Key, int], list[tuple[int, list[float]]]] = {}
        for rank, tensor in enumerate(out or ()):
            values = tensor.tolist()
            for i, slot in enumerate(self._layout):
                row = values[i * _FIELDS : (i + 1) * _FIELDS]
                if row[_USED] == 1.0:
                    per_slot.setdefault(slot, []).append((rank, row))
        return per_slot

    def _exchange_jax(
        self, local: list[tuple[Key, int, list[float]]], world: int
    ) -> dict[tuple[Key, int], list[tuple[int, list[float]]]]:
        """:meth:`_exchange` in a ``jax.distributed`` job: each rank puts its rows in the job's
        key-value store and rank 0 takes them, waiting ``timeout`` seconds at most (no device
        collective, which could wait for ever, and none to compile)."""
        import jax
        from jax._src import distributed  # the job's store: jax names it nowhere public

        client: Any = distributed.global_state.client
        rank = jax.process_index()
        prefix = f"tallyboard/sync/{self.serial}/{self._rounds}/"
        self._rounds += 1
        if rank != 0:
            rows = [[*key, j, row] for key, j, row in local]
            client.key_value_set_bytes(prefix + str(rank), json.dumps(rows).encode())
            return {}
        per_slot: dict[tuple[Key, int], list[tuple[int, list[float]]]] = {}
        for key, j, row in local:
            per_slot[(key, j)] = [(0, row)]
        deadline = time.monotonic() + self.timeout
        for other in range(1, world):
            wait_ms = max(1, int((deadline - time.monotonic()) * 1000))
            try:
                data = client.blocking_key_value_get_bytes(prefix + str(other), wait_ms)
            except Exception as exc:
                raise RankSyncError(
                    f"rank {other} of the jax job did not sync within {self.timeout:g} s "
                    f"(sync_timeout): it may have exited, or not reached sync()/flush()/close() "
                    f"of this writer (#{self.serial} in creation order) as often as this rank "
                    f"({type(exc).__name__}: {exc}); no later sync is attempted"
                ) from exc
            client.key_value_delete(prefix + str(other))
            for kind, tag, op, j, row in json.loads(data):
                per_slot.setdefault(((kind, tag, op), j), []).append((other, row))
        return per_slot


def _step_order(item: tuple[int | None, list[float]]) -> tuple[int, int]:
    step = item[0]
    return (0, 0) if step is None else (1, step)


def _combine(per_slot: dict[tuple[Key, int], list[tuple[int, list[float]]]]) -> list[Result]:
    """One point per (kind, tag, step): rows of the same key and step reduced with the key's op."""
    grouped: dict[tuple[str, str, str, int | None], list[tuple[int, list[float]]]] = {}
    for (key, _), ranked in per_slot.items():
        for rank, row in ranked:
            step = None if math.isnan(row[_STEP]) else int(row[_STEP])
            grouped.setdefault((*key, step), []).append((rank, row))
    out: list[Result] = []
    for (kind, tag, op, step), ranked in grouped.items():
        rows = [row for _, row in ranked]
        wall = max(row[_WALL] for row in rows)
        if op == STAT:
            for suffix, value in _stat_fields(ranked):
                out.append((kind, f"{tag}.{suffix}", step, value, wall))
        else:
            out.append((kind, tag, step, _reduce(op, rows), wall))
    out.sort(key=lambda r: (r[2] is not None, r[2] or 0, r[1]))
    return out


def _reduce(op: str, rows: list[list[float]]) -> float:
    if op == "sum":
        return math.fsum(row[_SUM] for row in rows)
    if op == "min":
        return min(row[_MIN] for row in rows)
    if op == "max":
        return max(row[_MAX] for row in rows)
    return math.fsum(row[_SUM] for row in rows) / sum(row[_COUNT] for row in rows)


def _has(rows: list[list[float]], field: int) -> list[float]:
    return [row[field] for row in rows if not math.isnan(row[field])]


def _stat_fields(ranked: list[tuple[int, list[float]]]) -> list[tuple[str, float]]:
    """A job-wide Stat window from each rank's window: the aggregations they carry + slowest rank."""
    rows = [row for _, row in ranked]
    out: list[tuple[str, float]] = []
    last = max(ranked, key=lambda rr: rr[1][_WALL])[1][_LAST]
    if not math.isnan(last):
        out.append(("value", last))
    counts, sums = _has(rows, _COUNT), _has(rows, _SUM)
    whole = len(counts) == len(rows) and len(sums) == len(rows) and sum(counts) > 0
    means = [row[_SUM] / row[_COUNT] if whole else row[_MEAN] for row in rows]
    if _has(rows, _MEAN):  # the Stat computes MEAN: weight each rank's mean by its count
        if whole:
            out.append(("mean", math.fsum(sums) / sum(counts)))
        elif len(counts) == len(rows) and sum(counts) > 0:
            out.append(("mean", math.fsum(m * c for m, c in zip(means, counts)) / sum(counts)))
        else:
            out.append(("mean", math.fsum(means) / len(means)))
    if counts:
        out.append(("count", sum(counts)))
    if sums:
        out.append(("sum", math.fsum(sums)))
    if _has(rows, _MAX):
        out.append(("max", max(_has(rows, _MAX))))
    if _has(rows, _MIN):
        out.append(("min", min(_has(rows, _MIN))))
    # the slowest rank: the highest mean (a step time), else sum, else max
    for field in (_MEAN, _SUM, _MAX):
        scores = [
            (means[i] if field == _MEAN else row[field], rank)
            for i, (rank, row) in enumerate(ranked)
        ]
        scores = [(s, r) for s, r in scores if not math.isnan(s)]
        if scores:
            out.append(("slowest_rank", float(max(scores)[1])))
            break
    return out
