"""Logging across 4 gloo ranks: tallyboard's one collective per sync vs one all_reduce per value.

Each rank runs 1,000 steps logging 10 scalars reduced to their mean across ranks, three ways:
no logging at all, one ``all_reduce`` per value then ``add_scalar`` on rank 0 (what Lightning's
``sync_dist=True`` does), and tallyboard (``SummaryWriter(reduce="mean")``, ``sync()`` every step,
and every 50 steps). Reported: median step time over rounds (the modes interleaved), the overhead
over no logging, and the ratio of overheads. Also ``add_scalar`` on a rank that writes nothing.
Run: ``python bench/bench_distributed.py``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import statistics
import tempfile
import time
from datetime import timedelta
from typing import Any

WORLD = 4
STEPS = 1_000
VALUES = 10
ROUNDS = 3
TAGS = [f"metric_{i}" for i in range(VALUES)]


def _steps(mode: str, rank: int, root: str) -> float:
    """Seconds per step of one round of ``mode`` on this rank."""
    import torch
    import torch.distributed as dist
    from tallyboard import SummaryWriter

    x = torch.ones(64)
    writer = None
    if mode != "none":
        reduce = "mean" if mode.startswith("tallyboard") else None
        writer = SummaryWriter(tempfile.mkdtemp(dir=root), reduce=reduce)
    every = 50 if mode == "tallyboard/50" else 1
    dist.barrier()
    t0 = time.perf_counter()
    for step in range(STEPS):
        x = x * 1.0001  # the "training step"
        values = [float(rank + i + step) for i in range(VALUES)]
        if mode == "per-value":
            assert writer is not None
            for tag, v in zip(TAGS, values):
                t = torch.tensor(v)
                dist.all_reduce(t)
                writer.add_scalar(tag, t.item() / WORLD, step)
        elif writer is not None:
            for tag, v in zip(TAGS, values):
                writer.add_scalar(tag, v, step)
            if (step + 1) % every == 0:
                writer.sync()
    elapsed = time.perf_counter() - t0
    if writer is not None:
        writer.close()
    return elapsed / STEPS


def _silent_add_ns(root: str) -> float:
    """Nanoseconds per ``add_scalar`` on this (non-zero) rank, which validates and writes nothing."""
    from tallyboard import SummaryWriter

    w = SummaryWriter(os.path.join(root, "silent"))
    assert not w.writes
    add, n = w.add_scalar, 200_000

    def one() -> float:
        t0 = time.perf_counter()
        for i in range(n):
            add("loss", 0.5, i)
        return (time.perf_counter() - t0) / n * 1e9

    return statistics.median(one() for _ in range(5))


def _rank(rank: int, port: int, root: str, results: Any) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD)
    )
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=120))
    modes = ["none", "per-value", "tallyboard", "tallyboard/50"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(ROUNDS):
        for mode in modes:
            times[mode].append(_steps(mode, rank, root))
    silent = _silent_add_ns(root) if rank == 1 else None
    dist.barrier()
    results.put((rank, times, silent))
    results.close()
    results.join_thread()
    os._exit(0)


def run(timeout: float = 540.0) -> tuple[dict[str, float], float]:
    """Median seconds per step by mode (rank 0) and silent add_scalar ns (rank 1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    root = tempfile.mkdtemp(prefix="pb-bench-dist-")
    procs = [ctx.Process(target=_rank, args=(r, port, root, results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    got: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(got) < WORLD:
            rank, times, silent = results.get(timeout=max(1.0, deadline - time.monotonic()))
            got[rank] = (times, silent)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    medians = {mode: statistics.median(ts) for mode, ts in got[0][0].items()}
    return medians, got[1][1]


def main() -> None:
    medians, silent_ns = run()
    base = medians["none"]
    print(
        f"\n## {WORLD} gloo ranks, {STEPS} steps, {VALUES} scalars/step reduced (median of {ROUNDS} rounds, rank 0)"
    )
    print(f"{'mode':44s} {'step time':>12s} {'overhead':>12s}")
    for mode, label in [
        ("none", "no logging"),
        ("per-value", "one all_reduce per value (sync_dist=True)"),
        ("tallyboard", "tallyboard reduce='mean', sync() every step"),
        ("tallyboard/50", "tallyboard reduce='mean', sync() every 50"),
    ]:
        t = medians[mode]
        print(f"{label:44s} {t * 1e6:10.1f}us {(t - base) * 1e6:10.1f}us")
    per_value = medians["per-value"] - base
    for mode in ("tallyboard", "tallyboard/50"):
        ratio = (medians[mode] - base) / per_value
        print(f"overhead {mode} / per-value: {ratio:.3f} (target <= 0.2)")
    print(f"add_scalar on a rank that writes nothing: {silent_ns:.0f} ns (target <= 300 ns)")


if __name__ == "__main__":
    main()
