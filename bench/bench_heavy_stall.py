"""The caller's stall from heavy kinds encoded on the writer thread, in a caller that never
releases the GIL (a pure-Python CPU loop).

``add_image`` (3x512x512) and ``add_histogram`` (1M values) return after validating and copying;
PNG and histogram encoding then run on the writer thread, which needs the GIL for its Python
parts. This measures how much longer a pure-Python loop takes right after such a call than
without it (median of repeats), next to the call's own cost and the encode's total time.
Run: ``python bench/bench_heavy_stall.py``.
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np
from common import fresh_dir

REPEATS = 7
LOOP = 400_000


def spin(n: int = LOOP) -> float:
    """Seconds of a pure-Python loop that never releases the GIL."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0


def measure(call: object) -> tuple[float, float, float]:
    """(call ms, stall ms of the loop after the call, encode ms until flush returns)."""
    from tallyboard import SummaryWriter

    call_ms, stall_ms, total_ms = [], [], []
    w = SummaryWriter(fresh_dir("stall"), max_queue=1)
    for i in range(REPEATS):
        base = spin()
        t0 = time.perf_counter()
        call(w, i)  # type: ignore[operator]
        t1 = time.perf_counter()
        loop = spin()
        w.flush()
        t2 = time.perf_counter()
        call_ms.append((t1 - t0) * 1e3)
        stall_ms.append((loop - base) * 1e3)
        total_ms.append((t2 - t0) * 1e3)
    w.close()
    return tuple(statistics.median(v) for v in (call_ms, stall_ms, total_ms))  # type: ignore[return-value]


def main() -> None:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    image = rng.random((3, 512, 512), dtype=np.float32)
    values = rng.normal(size=1_000_000)
    cases = {
        "add_image 3x512x512 float32": lambda w, i: w.add_image("img", image, i),
        "add_histogram 1,000,000 values": lambda w, i: w.add_histogram("h", values, i),
    }
    base = statistics.median(spin() for _ in range(REPEATS)) * 1e3
    print(f"\n## heavy kinds in a GIL-holding caller (pure-Python loop of {base:.0f} ms; medians)")
    print(f"{'case':34s} {'call':>9s} {'loop stall':>11s} {'call..flush':>12s}")
    for name, call in cases.items():
        c, s, t = measure(call)
        print(f"{name:34s} {c:7.1f}ms {s:9.1f}ms {t:10.1f}ms")


if __name__ == "__main__":
    main()
