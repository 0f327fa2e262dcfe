"""Small helpers shared by the benchmarks: writers to compare, medians, ratios, table printing."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any


def writer_factories() -> dict[str, Callable[[str], Any]]:
    """Writer constructors by name; tensorboardX only when installed."""
    from tallyboard import SummaryWriter
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    out: dict[str, Callable[[str], Any]] = {"tallyboard": SummaryWriter, "torch": TorchWriter}
    try:
        from tensorboardX import SummaryWriter as XWriter
    except ImportError:
        pass
    else:
        out["tensorboardX"] = XWriter
    return out


def median_of(repeats: int, fn: Callable[[], float]) -> float:
    """Median of ``repeats`` results of ``fn`` (each a per-call time in microseconds)."""
    return statistics.median(fn() for _ in range(repeats))


def timed_per_call(n: int, body: Callable[[], None]) -> float:
    """Microseconds per call of a body that performs ``n`` calls (including any close)."""
    t0 = time.perf_counter()
    body()
    return (time.perf_counter() - t0) / n * 1e6


def fresh_dir(prefix: str) -> str:
    return tempfile.mkdtemp(prefix=f"pb-bench-{prefix}-")


def print_table(title: str, rows: list[tuple[str, float, float | None]], unit: str = "us") -> None:
    """Rows of (label, tallyboard median, reference median or None); prints ratio reference/tallyboard."""
    print(f"\n## {title}")
    print(f"{'case':58s} {'tallyboard':>12s} {'reference':>12s} {'ratio':>8s}")
    for label, ours, ref in rows:
        ratio = f"{ref / ours:7.1f}x" if ref else "      -"
        ref_s = f"{ref:10.2f}{unit}" if ref else "           -"
        print(f"{label:58s} {ours:10.2f}{unit} {ref_s} {ratio}")


class Cost:
    """The whole cost of a loop of ``n`` calls: end to end including ``close()`` (what a training
    loop pays, work handed to a writer thread or process included), then the caller's own time
    per call: mean, median, p99, p99.9. Times in seconds; :meth:`line` prints microseconds."""

    __slots__ = ("n", "end_to_end", "mean", "median", "p99", "p999")

    def __init__(self, total: float, calls: list[float]) -> None:
        ordered = sorted(calls)
        n = len(ordered)
        self.n = n
        self.end_to_end = total / n
        self.mean = sum(ordered) / n
        self.median = ordered[n // 2]
        self.p99 = ordered[min(n - 1, int(n * 0.99))]
        self.p999 = ordered[min(n - 1, int(n * 0.999))]

    def line(self) -> str:
        us = 1e6
        return (
            f"{self.end_to_end * us:9.2f} | {self.mean * us:8.2f} {self.median * us:8.2f}"
            f" {self.p99 * us:8.2f} {self.p999 * us:8.2f}"
        )


COST_HEADER = "end to end | caller mean   median      p99    p99.9   (us per call)"


def timed_loop(
    make: Callable[[], Any], call: Callable[[Any, int], None], n: int, close: str = "close"
) -> Cost:
    """Time ``call(obj, i)`` for ``i`` in ``range(n)`` on ``obj = make()``, each call and the
    whole loop up to the end of ``obj.close()`` (``make()`` itself is not counted)."""
    obj = make()
    clock = time.perf_counter
    calls = [0.0] * n
    start = clock()
    for i in range(n):
        t0 = clock()
        call(obj, i)
        calls[i] = clock() - t0
    getattr(obj, close)()
    return Cost(clock() - start, calls)


def median_cost(costs: list[Cost]) -> Cost:
    """The run whose end-to-end time is the median of ``costs`` (its caller figures with it)."""
    ordered = sorted(costs, key=lambda c: c.end_to_end)
    return ordered[len(ordered) // 2]


def spread(values: list[float]) -> str:
    """``min-max`` of per-run figures (ratios, times) for the table."""
    return f"{min(values):.1f}-{max(values):.1f}"
