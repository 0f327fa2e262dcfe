"""Real gloo jobs (2 and 4 ranks on 127.0.0.1) read back with TensorBoard's EventAccumulator."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from distributed_support import run_job


def _points(acc: Any, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def two_ranks(rank: int, world: int, root: str) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    from tallyboard import Aggregation, Stat, SummaryWriter, TensorboardEventHandler
    from tallyboard.monitor import register_event_handler, unregister_event_handler

    out: dict[str, Any] = {"pid": os.getpid()}
    reduce = {"loss": "mean", "tokens": "sum", "lo": "min", "hi": "max", "late": "sum"}
    w = SummaryWriter(os.path.join(root, "reduced"), reduce=reduce)
    for step in range(5):
        w.add_scalar("loss", float(rank + step), step)
        if rank == 1 and step == 2:
            w.add_scalar("loss", 10.0, step)  # this rank logs more values at this step
        w.add_scalar("tokens", 10.0 * (rank + 1), step)
        w.add_scalar("lo", float(rank), step)
        w.add_scalar("hi", float(rank), step)
        if rank == 1 and step == 3:
            w.add_scalar("late", 7.0, step)  # a tag only this rank logs
        w.add_scalar("lr", 0.1 + rank, step)  # not reduced: rank 0's value
        w.sync()
    errors = []
    for bad in (
        lambda: w.add_scalar("x", "nope", 0),
        lambda: w.add_scalar(3, 1.0, 0),
        lambda: w.add_scalar("x", 1.0, 1.5),
        lambda: w.add_scalar("loss", object(), 0),  # a reduced tag
    ):
        try:
            bad()
            errors.append("accepted")
        except (TypeError, ValueError) as exc:
            errors.append(type(exc).__name__)
    out["errors"] = errors

    handle = register_event_handler(TensorboardEventHandler(w, across_ranks=True))
    agg = Aggregation
    stat = Stat("step_time", [agg.MEAN, agg.COUNT, agg.SUM, agg.MAX, agg.MIN, agg.VALUE], 3600.0)
    for v in [1.0, 2.0, 3.0] if rank == 0 else [5.0]:
        stat.add(v)
    if rank == 0:
        stat.close()
    dist.barrier()
    if rank == 1:
        time.sleep(0.01)  # rank 1's window is the later one: its last value is the job's
        stat.close()
    unregister_event_handler(handle)
    w.close()

    for mode in ("each", "all"):
        with SummaryWriter(os.path.join(root, mode), ranks=mode) as e:
            for step in range(3):
                e.add_scalar("loss", float(rank * 100 + step), step)

    class Logging(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __init__(self, writer: SummaryWriter) -> None:
            self.writer = writer

        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> int:
            self.writer.add_scalar("worker", float(i), i)
            SummaryWriter(os.path.join(root, "from_worker")).add_scalar("w", 1.0, i)
            return i

    with SummaryWriter(os.path.join(root, "loader")) as lw:
        lw.add_scalar("main", 1.0, 0)
        loader = torch.utils.data.DataLoader(
            Logging(lw), num_workers=2, multiprocessing_context="fork"
        )
        out["batches"] = sum(int(b) for b in loader)

    from tallyboard.ranks.reduce import RankSyncError

    t = SummaryWriter(os.path.join(root, "hung"), reduce="sum", sync_timeout=3.0)
    other = SummaryWriter(os.path.join(root, "other"), reduce="sum", sync_timeout=3.0)
    t.add_scalar("x", 1.0, 0)
    t.sync()  # both ranks reach this one
    if rank == 1:
        try:
            other.sync()  # the wrong writer: rank 0 syncs ``t``
        except RankSyncError as exc:
            out["mismatch"] = str(exc)
        time.sleep(6.0)  # alive, but never reaches t's sync
        return out
    start = time.monotonic()
    try:
        t.sync()
    except RankSyncError as exc:
        out["hung"] = (str(exc), time.monotonic() - start)
    return out


def test_two_ranks_reduce_stat_sub_runs_workers(tmp_path: Path) -> None:
    res = run_job(two_ranks, 2, str(tmp_path))
    assert sorted(res) == [0, 1]
    message, waited = res[0]["hung"]  # rank 1 stopped syncing: an error after the timeout
    assert "sync_timeout" in message and 3.0 <= waited < 3.0 + 5.0
    assert "synced different writers" in res[1]["mismatch"]
    for rank in (0, 1):  # bad input raises on every rank, the writing one or not
        assert res[rank]["errors"] == ["TypeError"] * 4
        assert res[rank]["batches"] == 6

    run = tmp_path / "reduced"
    assert all(f".{res[0]['pid']}." in f.name for f in _files(run)), "a non-zero rank wrote"
    acc = load_run(run)
    assert _points(acc, "loss") == [
        (0, 0.5), (1, 1.5), (2, pytest.approx(5.0)), (3, 3.5), (4, 4.5)
    ]  # fmt: skip
    assert _points(acc, "tokens") == [(s, 30.0) for s in range(5)]
    assert _points(acc, "lo") == [(s, 0.0) for s in range(5)]
    assert _points(acc, "hi") == [(s, 1.0) for s in range(5)]
    assert _points(acc, "late") == [(3, 7.0)]
    assert _points(acc, "lr") == [(s, pytest.approx(0.1)) for s in range(5)]
    stat = {
        tag[len("step_time.") :]: _points(acc, tag)
        for tag in acc.Tags()["scalars"]
        if tag.startswith("step_time.")
    }
    assert stat == {
        "mean": [(0, 2.75)], "count": [(0, 4.0)], "sum": [(0, 11.0)], "max": [(0, 5.0)],
        "min": [(0, 1.0)], "value": [(0, 5.0)], "slowest_rank": [(0, 1.0)],
    }  # fmt: skip

    assert not any((tmp_path / "each").glob("events*"))
    for rank in (0, 1):
        acc = load_run(tmp_path / "each" / f"rank_{rank}")
        assert _points(acc, "loss") == [(s, rank * 100.0 + s) for s in range(3)]
    acc = load_run(tmp_path / "all")
    assert sorted(acc.Tags()["scalars"]) == ["loss/rank_0", "loss/rank_1"]
    for rank in (0, 1):
        assert _points(acc, f"loss/rank_{rank}") == [(s, rank * 100.0 + s) for s in range(3)]

    assert not (tmp_path / "from_worker").exists()
    loader = tmp_path / "loader"
    assert all(f".{res[0]['pid']}." in f.name for f in _files(loader))
    assert load_run(loader).Tags()["scalars"] == ["main"]


def four_ranks(rank: int, world: int, root: str) -> dict[str, Any]:
    from tallyboard import SummaryWriter
    from tallyboard.ranks.reduce import RankSyncError

    w = SummaryWriter(root, reduce="mean", sync_timeout=5.0)
    for step in range(20):
        w.add_scalar("loss", float(rank * step), step)
        w.add_scalar("acc", rank / 4, step)
        if step < 10:
            w.sync()  # one collective per step ...
        else:
            w.add_scalar("skew", float(rank), step + rank)  # ranks at different steps
    w.flush()  # ... and one for steps 10-19 together
    if rank == 3:
        os._exit(0)  # this rank is gone
    w.add_scalar("loss", 1.0, 20)
    start = time.monotonic()
    try:
        w.close()
        error = None
    except RankSyncError as exc:
        error = str(exc)
    return {"error": error, "elapsed": time.monotonic() - start}


def test_four_ranks_one_point_per_step_and_a_gone_rank_errors(tmp_path: Path) -> None:
    res = run_job(four_ranks, 4, str(tmp_path))
    assert sorted(res) == [0, 1, 2]  # rank 3 exited
    for rank in (0, 1, 2):
        assert res[rank]["error"] is not None and "sync_timeout" in res[rank]["error"]
        assert res[rank]["elapsed"] < 5.0 + 5.0  # the timeout, not a hang
    acc = load_run(tmp_path)
    assert _points(acc, "loss") == [(s, pytest.approx(1.5 * s)) for s in range(20)]
    assert _points(acc, "acc") == [(s, 0.375) for s in range(20)]
    skew = [
        (
            s,
            sum(r for r in range(4) if 10 <= s - r <= 19)
            / sum(1 for r in range(4) if 10 <= s - r <= 19),
        )
        for s in range(10, 23)
    ]
    assert _points(acc, "skew") == [(s, pytest.approx(v)) for s, v in skew]


# keep ruff from flagging the unused import needed by spawned children
_ = timedelta
