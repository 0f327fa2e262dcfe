"""The cost of heavy kinds encoded on the writer thread to a caller that never releases the GIL
(a pure-Python CPU loop).

``add_image`` (3x512x512) and ``add_histogram`` (1M values) return after validating and copying;
PNG and histogram encoding then run on the writer thread, which needs the GIL for its Python
parts, so part of that work comes back to the caller as a stall.

The whole cost comes first, per case, with a default ``SummaryWriter``:

- back to back: ``n`` calls in a row, end to end per call including ``close()`` (so the encoding
  left to the writer thread counts), then the caller's own time per call: mean, median, p99,
  p99.9 (:func:`common.timed_loop`);
- in a GIL-holding loop: ``n`` steps of a pure-Python loop then the call, timed up to the end of
  ``close()``, next to the same steps without logging (interleaved repeats); end to end is what
  the logging adds per step, (loop with logging - loop alone) / ``n``, stalls and ``close()``
  included; the caller columns are the call's own time; the ratio is of end-to-end step times
  (loop with logging / loop alone).

Runs of median end-to-end time are shown. Then, as before, one call at a time (``max_queue=1``,
``flush()`` after each): the call's own time, how much longer the pure-Python loop right after it
takes than without it (the stall), and the time from the call until ``flush()`` returns (the
encode's total); medians of repeats.
Run: ``python bench/bench_heavy_stall.py [--quick]`` (``n`` = 20 calls, 7 repeats; ``--quick``: 10, 3).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from common import COST_HEADER, Cost, median_cost, spread, timed_loop

LOOP = 400_000

Call = Callable[[Any, int], None]


def spin(n: int = LOOP) -> float:
    """Seconds of a pure-Python loop that never releases the GIL."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0


class _NoWriter:
    """The loop without logging: nothing to call, nothing to close."""

    def close(self) -> None:
        pass


def _writer(log_dir: str, **kwargs: Any) -> Any:
    from tallyboard import SummaryWriter

    return SummaryWriter(log_dir, **kwargs)


def back_to_back(call: Call, n: int) -> Cost:
    """``n`` calls in a row on a default writer, end to end including ``close()``."""
    with tempfile.TemporaryDirectory() as d:
        return timed_loop(lambda: _writer(d), call, n)


def step_loop(make: Callable[[], Any], call: Call, n: int) -> tuple[float, list[float]]:
    """``n`` steps of (pure-Python loop, ``call(obj, step)``) on ``obj = make()``: seconds from
    the first step to the end of ``obj.close()``, and each call's own seconds."""
    obj = make()
    clock = time.perf_counter
    calls = [0.0] * n
    start = clock()
    for i in range(n):
        spin()
        t0 = clock()
        call(obj, i)
        calls[i] = clock() - t0
    obj.close()
    return clock() - start, calls


def in_gil_loop(call: Call, n: int) -> tuple[Cost, float, float]:
    """(what logging adds per step as a :class:`Cost`, seconds per step with logging, seconds per
    step alone), both loops run back to back so they see the same load."""
    alone, _ = step_loop(_NoWriter, lambda o, i: None, n)
    with tempfile.TemporaryDirectory() as d:
        total, calls = step_loop(lambda: _writer(d), call, n)
    return Cost(total - alone, calls), total / n, alone / n


def one_at_a_time(call: Call, repeats: int) -> tuple[float, float, float]:
    """(call ms, stall ms of the loop after the call, ms from the call until flush returns),
    medians over ``repeats`` calls on a writer with ``max_queue=1``."""
    call_ms, stall_ms, total_ms = [], [], []
    with tempfile.TemporaryDirectory() as d:
        w = _writer(d, max_queue=1)
        for i in range(repeats):
            base = spin()
            t0 = time.perf_counter()
            call(w, i)
            t1 = time.perf_counter()
            loop = spin()
            w.flush()
            t2 = time.perf_counter()
            call_ms.append((t1 - t0) * 1e3)
            stall_ms.append((loop - base) * 1e3)
            total_ms.append((t2 - t0) * 1e3)
        w.close()
    return statistics.median(call_ms), statistics.median(stall_ms), statistics.median(total_ms)


def main(argv: list[str] | None = None) -> int:
    """Print the whole cost, then the one-call stall table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    args = parser.parse_args([] if argv is None else argv)
    repeats, n = (3, 10) if args.quick else (7, 20)
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    image = rng.random((3, 512, 512), dtype=np.float32)
    values = rng.normal(size=1_000_000)
    cases: dict[str, Call] = {
        "add_image 3x512x512 float32": lambda w, i: w.add_image("img", image, i),
        "add_histogram 1,000,000 values": lambda w, i: w.add_histogram("h", values, i),
    }
    for call in cases.values():  # imports, Pillow, tables outside the timing
        back_to_back(call, 2)

    print(f"\n## whole cost, {n} calls, default writer (run of median end to end of {repeats})")
    print(f"{'case':34s} {'':14s} {COST_HEADER}")
    for name, call in cases.items():
        costs = [back_to_back(call, n) for _ in range(repeats)]
        print(f"{name:34s} {'back to back':14s} {median_cost(costs).line()}")
        added: list[Cost] = []
        ratios: list[float] = []
        with_logging: list[float] = []
        alone: list[float] = []
        for _ in range(repeats):
            cost, step, step_alone = in_gil_loop(call, n)
            added.append(cost)
            ratios.append(step / step_alone)
            with_logging.append(step)
            alone.append(step_alone)
        print(f"{'':34s} {'in a GIL loop':14s} {median_cost(added).line()}")
        print(
            f"{'':34s} {'':14s} step {statistics.median(with_logging) * 1e3:.1f} ms with logging, "
            f"{statistics.median(alone) * 1e3:.1f} ms alone: ratio "
            f"{statistics.median(ratios):.2f}x (per repeat {spread(ratios)}x)"
        )

    base = statistics.median(spin() for _ in range(repeats)) * 1e3
    print(f"\n## one call at a time, max_queue=1 (pure-Python loop of {base:.0f} ms; medians)")
    print(f"{'case':34s} {'call':>9s} {'loop stall':>11s} {'call..flush':>12s}")
    for name, call in cases.items():
        c, s, t = one_at_a_time(call, repeats)
        print(f"{name:34s} {c:7.1f}ms {s:9.1f}ms {t:10.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
