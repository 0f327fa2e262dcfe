"""Reading scalars back: tallyboard.read vs EventAccumulator vs tbparse, same files, same process.

``python bench/bench_read.py [n_scalars] [repeats] [shape ...]`` (default 1,000,000 scalars, median
of 3, every shape). Shapes, each a log dir of ``n_scalars`` scalars:

- ``same-length``: 10 tags ``tag0``..``tag9`` every step (every record one layout);
- ``cycle``: ``("loss", "acc", "lr", "grad")[i & 3]`` at step ``i >> 2`` (tags of different
  lengths in a repeating order; steps cross the 1-, 2- and 3-byte varint sizes);
- ``one-tag``: one tag at steps 0..n-1 (steps cross 127/128 and 16383/16384 mid-run);
- ``torch`` and ``tensorboardX``: files those writers wrote, 3 tags by ``add_scalar`` and
  ``add_scalars`` with 2 keys (two sub-runs) every step.

EventAccumulator runs with ``size_guidance`` scalars=0 (nothing sampled away), one per run
directory; all three readers check CRCs. Peak memory of tallyboard.read is measured with
tracemalloc against the final table, on the first shape.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from common import fresh_dir


def write_same_length(path: str, n: int, n_tags: int = 10) -> None:
    from tallyboard import SummaryWriter

    with SummaryWriter(path) as w:
        for step in range(n // n_tags):
            for k in range(n_tags):
                w.add_scalar(f"tag{k}", step * 0.001 + k, step)


def write_cycle(path: str, n: int) -> None:
    from tallyboard import SummaryWriter

    tags = ("loss", "acc", "lr", "grad")
    with SummaryWriter(path) as w:
        add = w.add_scalar
        for i in range(n):
            add(tags[i & 3], i * 0.5, i >> 2)


def write_one_tag(path: str, n: int) -> None:
    from tallyboard import SummaryWriter

    with SummaryWriter(path) as w:
        add = w.add_scalar
        for i in range(n):
            add("loss", 1.0 / (i + 1), i)


def _write_with(cls: Any, path: str, n: int) -> None:
    w = cls(path)
    for step in range(n // 5):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("accuracy", step * 1e-6, step)
        w.add_scalar("lr", 0.1, step)
        w.add_scalars("grad", {"min": -step * 0.5, "max": step * 0.5}, step)
    w.close()


def write_torch(path: str, n: int) -> None:
    from torch.utils.tensorboard import SummaryWriter

    _write_with(SummaryWriter, path, n)


def write_tensorboardx(path: str, n: int) -> None:
    from tensorboardX import SummaryWriter

    _write_with(SummaryWriter, path, n)


SHAPES: dict[str, Callable[[str, int], None]] = {
    "same-length": write_same_length,
    "cycle": write_cycle,
    "one-tag": write_one_tag,
    "torch": write_torch,
    "tensorboardX": write_tensorboardx,
}


def read_tallyboard(path: str) -> Any:
    import tallyboard

    return tallyboard.read(path)


def read_event_accumulator(path: str) -> Any:
    """One EventAccumulator per directory holding event files (add_scalars writes sub-runs)."""
    import pandas as pd
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows = []
    for run, _, files in sorted(os.walk(path)):
        if not any("tfevents" in f for f in files):
            continue
        acc = EventAccumulator(run, size_guidance={"scalars": 0})
        acc.Reload()
        rows += [
            (run, tag, e.step, e.wall_time, e.value)
            for tag in acc.Tags()["scalars"]
            for e in acc.Scalars(tag)
        ]
    return pd.DataFrame(rows, columns=["run", "tag", "step", "wall_time", "value"])


def read_tbparse(path: str) -> Any:
    from tbparse import SummaryReader

    return SummaryReader(path, extra_columns={"wall_time", "dir_name"}).scalars


def timed(fn: Callable[[str], Any], path: str, repeats: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = len(fn(path))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rows


def peak_memory(path: str) -> None:
    tracemalloc.start()
    df = read_tallyboard(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    table = int(df.memory_usage(deep=True).sum())
    print(
        f"peak traced memory {peak / 1e6:.1f} MB, final table {table / 1e6:.1f} MB, ratio {peak / table:.2f}"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    shapes = sys.argv[3:] or list(SHAPES)
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        raise SystemExit(f"unknown shape(s) {unknown}; choose from {list(SHAPES)}")
    warm = fresh_dir("read-warm-up")
    write_cycle(warm, 100)
    for fn in (read_tallyboard, read_event_accumulator, read_tbparse):
        fn(warm)  # imports and caches outside the timings
    print(f"\n## read {n:,} scalars into a DataFrame (median of {repeats}, seconds)")
    print(
        f"{'shape':14s} {'rows':>10s} {'tallyboard':>10s} {'EventAcc':>9s} {'tbparse':>9s}"
        f" {'EA/pb':>7s} {'tbp/pb':>7s}"
    )
    for i, shape in enumerate(shapes):
        path = fresh_dir(f"read-{shape}")
        SHAPES[shape](path, n)
        ours, rows = timed(read_tallyboard, path, repeats)
        ea, ea_rows = timed(read_event_accumulator, path, repeats)
        tbp, tbp_rows = timed(read_tbparse, path, repeats)
        assert rows == ea_rows == tbp_rows, (shape, rows, ea_rows, tbp_rows)
        print(
            f"{shape:14s} {rows:10,d} {ours:10.3f} {ea:9.2f} {tbp:9.2f}"
            f" {ea / ours:6.1f}x {tbp / ours:6.1f}x",
            flush=True,
        )
        if i == 0:
            peak_memory(path)


if __name__ == "__main__":
    main()
