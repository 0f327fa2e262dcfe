"""Logging across 4 gloo ranks: tallyboard's one collective per sync vs one all_reduce per value.

Each rank runs 1,000 steps logging 10 scalars reduced to their mean across ranks, three ways:
no logging at all, one ``all_reduce`` per value then ``add_scalar`` on rank 0 (what Lightning's
``sync_dist=True`` does), and tallyboard (``SummaryWriter(reduce="mean")``, ``sync()`` every step,
and every 50 steps).

The whole cost comes first (rank 0, the rank that writes; the modes interleaved in rounds, the run
of median end-to-end time shown): time per step end to end, from the first step to the end of the
writer's ``close()`` (its last ``sync()`` collective and the writer thread's work included), then
the caller's own time per step: mean, median, p99, p99.9 (:func:`common.timed_loop`). Then each
mode's overhead per step over no logging and the ratio of overheads tallyboard / per-value, both
from end-to-end times (of the runs shown, then the ratio of each round).
Last, ``add_scalar`` on a rank that writes nothing (rank 1): the same whole cost per call, and the
end-to-end time of a plain loop of calls including ``close()`` without per-call timers, which the
target (<= 300 ns) is about.
Run: ``python bench/bench_distributed.py [--quick]`` (``--quick``: 200 steps, 2 rounds, 50,000
silent calls).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from typing import Any

from common import COST_HEADER, Cost, median_cost, timed_loop

WORLD = 4
STEPS = 1_000
VALUES = 10
ROUNDS = 3
SILENT_CALLS = 200_000
EVERY = 50
TAGS = [f"metric_{i}" for i in range(VALUES)]
MODES = ["none", "per-value", "tallyboard", "tallyboard/50"]


class _Logging:
    """One rank's logging in ``mode``: :meth:`step` is one training step and its logging,
    :meth:`close` closes the writer (a last collective with ``reduce=``; nothing without a writer).
    Made after a barrier, so every rank starts its timed loop together."""

    def __init__(self, mode: str, rank: int, root: str) -> None:
        import torch
        import torch.distributed as dist
        from tallyboard import SummaryWriter

        self.torch, self.dist = torch, dist
        self.mode, self.rank = mode, rank
        self.x = torch.ones(64)
        self.writer: Any = None
        if mode != "none":
            reduce = "mean" if mode.startswith("tallyboard") else None
            self.writer = SummaryWriter(tempfile.mkdtemp(dir=root), reduce=reduce)
        self.every = EVERY if mode == "tallyboard/50" else 1
        dist.barrier()

    def step(self, step: int) -> None:
        self.x = self.x * 1.0001  # the "training step"
        values = [float(self.rank + i + step) for i in range(VALUES)]
        writer = self.writer
        if self.mode == "per-value":
            for tag, v in zip(TAGS, values):
                t = self.torch.tensor(v)
                self.dist.all_reduce(t)
                writer.add_scalar(tag, t.item() / WORLD, step)
        elif writer is not None:
            for tag, v in zip(TAGS, values):
                writer.add_scalar(tag, v, step)
            if (step + 1) % self.every == 0:
                writer.sync()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _steps(mode: str, rank: int, root: str, steps: int) -> Cost:
    """The whole cost of one round of ``mode`` on this rank, per step, including ``close()``."""
    return timed_loop(lambda: _Logging(mode, rank, root), lambda o, step: o.step(step), steps)


def _silent_add(root: str, n: int) -> tuple[Cost, float]:
    """``add_scalar`` on this (non-zero) rank, which validates and writes nothing: the whole cost
    of ``n`` calls (median of 3 runs), and nanoseconds per call of a plain loop of ``n`` calls
    including ``close()`` without per-call timers (median of 5)."""
    from tallyboard import SummaryWriter

    def make() -> Any:
        w = SummaryWriter(tempfile.mkdtemp(dir=root))
        assert not w.writes
        return w

    cost = median_cost(
        [timed_loop(make, lambda w, i: w.add_scalar("loss", 0.5, i), n) for _ in range(3)]
    )

    def plain() -> float:
        w = make()
        add = w.add_scalar
        t0 = time.perf_counter()
        for i in range(n):
            add("loss", 0.5, i)
        w.close()
        return (time.perf_counter() - t0) / n * 1e9

    return cost, statistics.median(plain() for _ in range(5))


def _rank(
    rank: int, port: int, root: str, results: Any, steps: int, rounds: int, silent_n: int
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(WORLD)
    )
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=timedelta(seconds=120))
    costs: dict[str, list[Cost]] = {m: [] for m in MODES}
    for _ in range(rounds):
        for mode in MODES:
            costs[mode].append(_steps(mode, rank, root, steps))
    silent = _silent_add(root, silent_n) if rank == 1 else None
    dist.barrier()
    results.put((rank, costs, silent))
    results.close()
    results.join_thread()
    os._exit(0)


def run(
    steps: int = STEPS, rounds: int = ROUNDS, silent_n: int = SILENT_CALLS, timeout: float = 540.0
) -> tuple[dict[str, list[Cost]], tuple[Cost, float]]:
    """Rank 0's whole costs by mode (one per round) and rank 1's silent ``add_scalar`` (its
    whole cost, and plain-loop ns per call including close)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    root = tempfile.mkdtemp(prefix="pb-bench-dist-")
    procs = [
        ctx.Process(target=_rank, args=(r, port, root, results, steps, rounds, silent_n))
        for r in range(WORLD)
    ]
    for p in procs:
        p.start()
    got: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(got) < WORLD:
            rank, costs, silent = results.get(timeout=max(1.0, deadline - time.monotonic()))
            got[rank] = (costs, silent)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    return got[0][0], got[1][1]


def main(argv: list[str] | None = None) -> int:
    """Run the ranks and print the whole cost, overheads and ratios; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 steps, 2 rounds")
    args = parser.parse_args([] if argv is None else argv)
    steps, rounds, silent_n = (200, 2, 50_000) if args.quick else (STEPS, ROUNDS, SILENT_CALLS)
    costs, (silent, silent_ns) = run(steps, rounds, silent_n)
    e2e = {mode: [c.end_to_end for c in cs] for mode, cs in costs.items()}
    shown = {mode: median_cost(cs) for mode, cs in costs.items()}
    med = {mode: cost.end_to_end for mode, cost in shown.items()}  # the runs shown
    base = med["none"]
    print(
        f"\n## {WORLD} gloo ranks, {steps} steps, {VALUES} scalars/step reduced, rank 0 "
        f"(run of median end to end of {rounds} rounds)"
    )
    print(f"{'mode':44s} {COST_HEADER.replace('per call', 'per step')}  overhead (us)")
    for mode, label in [
        ("none", "no logging"),
        ("per-value", "one all_reduce per value (sync_dist=True)"),
        ("tallyboard", "tallyboard reduce='mean', sync() every step"),
        ("tallyboard/50", f"tallyboard reduce='mean', sync() every {EVERY}"),
    ]:
        overhead = (med[mode] - base) * 1e6
        print(f"{label:44s} {shown[mode].line()}  {overhead:13.1f}")
    per_value = med["per-value"] - base
    for mode in ("tallyboard", "tallyboard/50"):
        ratio = (med[mode] - base) / per_value
        rounds_ratio = [
            (t - n) / (p - n) for t, p, n in zip(e2e[mode], e2e["per-value"], e2e["none"])
        ]
        per_round = ", ".join(f"{r:.3f}" for r in rounds_ratio)
        print(
            f"overhead {mode} / per-value, end to end: {ratio:.3f} "
            f"(per round {per_round}; target <= 0.2)"
        )
    print(f"\nadd_scalar on a rank that writes nothing, {silent_n} calls (run of median of 3):")
    print(f"{'':44s} {COST_HEADER}")
    print(f"{'':44s} {silent.line()}")
    print(
        f"plain loop incl. close, no per-call timers: {silent_ns:.0f} ns per call (target <= 300 ns)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
