"""add_image side by side: tallyboard, torch.utils.tensorboard and tensorboardX, in one process.

The whole cost first: end to end per call = (n calls + ``close()``) / n, so work deferred to the
writer thread counts (ratios are of these); then each writer's caller time per call: mean, median,
p99, p99.9.
Writers take turns within each repeat so that machine noise hits all of them alike; medians over
the repeats are printed with torch/tallyboard ratios. A second part logs images from a caller
that releases the GIL between calls (``time.sleep`` standing in for GPU work) and shows how long
each ``add_image`` stalls the caller and how much wall time the logging adds.

Run: ``python bench/bench_image.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import COST_HEADER, Cost, median_cost, timed_loop, writer_factories

TARGETS = {"3x64x64 float32": 8.0, "3x512x512 uint8": 2.0}


def end_to_end(factory: Callable[[str], Any], img: np.ndarray, n: int) -> tuple[float, float]:
    """(seconds per call including close, seconds spent in close) for ``n`` add_image calls."""
    cost, close = end_to_end_cost(factory, img, n)
    return cost.end_to_end, close


def end_to_end_cost(factory: Callable[[str], Any], img: np.ndarray, n: int) -> tuple[Cost, float]:
    """The whole cost of ``n`` add_image calls (end to end incl. close, each call's own time)
    and the seconds spent in ``close()``."""
    with tempfile.TemporaryDirectory() as d:
        closing: list[float] = []

        class Timed:
            def __init__(self) -> None:
                self.writer = factory(d)

            def close(self) -> None:
                t = time.perf_counter()
                self.writer.close()
                closing.append(time.perf_counter() - t)

        cost = timed_loop(Timed, lambda t, step: t.writer.add_image("img", img, step), n)
    return cost, closing[0]


def gil_releasing_caller(
    factory: Callable[[str], Any], img: np.ndarray, n: int, sleep_s: float
) -> dict[str, float]:
    """A loop of add_image + sleep: median call time, logging overhead on the loop's wall time."""
    calls = []
    with tempfile.TemporaryDirectory() as d:
        writer = factory(d)
        t0 = time.perf_counter()
        for step in range(n):
            t = time.perf_counter()
            writer.add_image("img", img, step)
            calls.append(time.perf_counter() - t)
            time.sleep(sleep_s)
        writer.close()
        total = time.perf_counter() - t0
    return {
        "call_ms": statistics.median(calls) * 1e3,
        "overhead_ms": (total - n * sleep_s) / n * 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print medians and ratios; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:512, 0:512]
    smooth = np.stack([x // 2, y // 2, (x + y) // 4]).astype(np.uint8)  # compressible, unlike noise
    cases = {
        "3x64x64 float32": (rng.random((3, 64, 64), dtype=np.float32), 40 if args.quick else 200),
        "3x512x512 uint8": (
            rng.integers(0, 256, (3, 512, 512), dtype=np.uint8),
            4 if args.quick else 10,
        ),
        "3x512x512 uint8 smooth": (smooth, 4 if args.quick else 10),
    }
    repeats = 3 if args.quick else 5
    factories = writer_factories()
    for factory in factories.values():  # warm imports, Pillow, registry
        end_to_end(factory, cases["3x64x64 float32"][0], 2)

    print(f"add_image end to end incl. close(), ms per call (median of {repeats})")
    for name, (img, n) in cases.items():
        per_call: dict[str, list[float]] = {w: [] for w in factories}
        closes: dict[str, list[float]] = {w: [] for w in factories}
        costs: dict[str, list[Cost]] = {w: [] for w in factories}
        for _ in range(repeats):
            for writer_name, factory in factories.items():
                cost, close = end_to_end_cost(factory, img, n)
                costs[writer_name].append(cost)
                per_call[writer_name].append(cost.end_to_end)
                closes[writer_name].append(close)
        ours = statistics.median(per_call["tallyboard"])
        print(f"  {name} ({n} calls)")
        for writer_name in factories:
            med = statistics.median(per_call[writer_name])
            ratio = med / ours
            close_ms = statistics.median(closes[writer_name]) * 1e3
            print(
                f"    {writer_name:<13} {med * 1e3:9.3f} ms  close {close_ms:8.1f} ms  x{ratio:6.2f} vs tallyboard"
            )
            print(
                f"    {'':13} {COST_HEADER}\n    {'':13} {median_cost(costs[writer_name]).line()}"
            )
        speedup = statistics.median(per_call["torch"]) / ours
        if name not in TARGETS:
            print(
                f"    tallyboard is {speedup:.1f}x faster than torch (no target: compressible input)"
            )
            continue
        verdict = "ok" if speedup >= TARGETS[name] else "BELOW TARGET"
        print(
            f"    tallyboard is {speedup:.1f}x faster than torch (target >= {TARGETS[name]:g}x): {verdict}"
        )

    img = cases["3x512x512 uint8"][0]
    n, sleep_s = (6, 0.03) if args.quick else (20, 0.03)
    print(
        f"\ncaller releasing the GIL: {n} x (add_image 3x512x512 uint8 + sleep {sleep_s * 1e3:.0f} ms)"
    )
    for writer_name, factory in factories.items():
        r = gil_releasing_caller(factory, img, n, sleep_s)
        print(
            f"    {writer_name:<13} add_image stalls the caller {r['call_ms']:8.2f} ms (median); "
            f"logging adds {r['overhead_ms']:8.2f} ms per step to the loop"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
