"""Reading scalars back: plugboard.read vs EventAccumulator vs tbparse, same files, same process.

``python bench/bench_read.py [n_scalars] [repeats]`` (default 1,000,000 scalars over 10 tags).
EventAccumulator runs with ``size_guidance`` scalars=0 (nothing sampled away); all three readers
check CRCs. Peak memory of plugboard.read is measured with tracemalloc against the final table.
"""

from __future__ import annotations

import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from common import fresh_dir


def write_run(path: str, n: int, n_tags: int = 10) -> None:
    from plugboard import SummaryWriter

    with SummaryWriter(path) as w:
        for step in range(n // n_tags):
            for k in range(n_tags):
                w.add_scalar(f"tag{k}", step * 0.001 + k, step)


def read_plugboard(path: str) -> Any:
    import plugboard

    return plugboard.read(path)


def read_event_accumulator(path: str) -> Any:
    import pandas as pd
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    rows = [
        (tag, e.step, e.wall_time, e.value)
        for tag in acc.Tags()["scalars"]
        for e in acc.Scalars(tag)
    ]
    return pd.DataFrame(rows, columns=["tag", "step", "wall_time", "value"])


def read_tbparse(path: str) -> Any:
    from tbparse import SummaryReader

    return SummaryReader(path, extra_columns={"wall_time"}).scalars


def timed(fn: Callable[[str], Any], path: str, repeats: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = len(fn(path))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rows


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    path = fresh_dir("read")
    write_run(path, n)
    ours, rows = timed(read_plugboard, path, repeats)
    print(f"\n## read {rows:,} scalars into a DataFrame (median of {repeats}, seconds)")
    print(f"{'reader':24s} {'seconds':>9s} {'rows':>10s} {'slower than plugboard':>22s}")
    print(f"{'plugboard.read':24s} {ours:9.3f} {rows:10,d} {'1.0x':>22s}")
    for name, fn in (("EventAccumulator", read_event_accumulator), ("tbparse", read_tbparse)):
        ref, ref_rows = timed(fn, path, repeats)
        print(f"{name:24s} {ref:9.3f} {ref_rows:10,d} {ref / ours:21.1f}x")
    tracemalloc.start()
    df = read_plugboard(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    table = int(df.memory_usage(deep=True).sum())
    print(
        f"peak traced memory {peak / 1e6:.1f} MB, final table {table / 1e6:.1f} MB, ratio {peak / table:.2f}"
    )


if __name__ == "__main__":
    main()
