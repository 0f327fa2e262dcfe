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
