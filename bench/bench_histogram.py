"""add_histogram side by side: tallyboard, torch.utils.tensorboard and tensorboardX, in one process.

End to end per call = (n calls + ``close()``) / n with the default ``'tensorflow'`` bins, so any
work left to a writer thread counts. Writers take turns within each repeat so machine noise hits
them alike; medians over the repeats are printed with reference/tallyboard ratios.
Targets (issue 3): 1,000 values >= 20x faster than torch; 1,000,000 values >= 3x.

Run: ``python bench/bench_histogram.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import writer_factories

TARGETS = {1_000: 20.0, 1_000_000: 3.0}


def end_to_end(factory: Callable[[str], Any], values: np.ndarray, n: int) -> float:
    """Seconds per ``add_histogram`` call, including the writer's ``close()``."""
    with tempfile.TemporaryDirectory() as d:
        writer = factory(d)
        writer.add_histogram("warm", values[:10], 0)  # builds tables / imports outside the timing
        t0 = time.perf_counter()
        for step in range(n):
            writer.add_histogram("h", values, step)
        writer.close()
        return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    """Run the comparison, print medians (ms per call) and ratios; returns 0."""
    parser = argparse.ArgumentParser(
        description="add_histogram: tallyboard vs torch vs tensorboardX"
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    args = parser.parse_args([] if argv is None else argv)
    rng = np.random.default_rng(0)
    cases = {
        1_000: (rng.standard_normal(1_000), 100 if args.quick else 400),
        1_000_000: (rng.standard_normal(1_000_000), 3 if args.quick else 8),
    }
    repeats = 3 if args.quick else 7
    factories = writer_factories()
    print(
        f"\n## add_histogram, tf bins, end to end incl. close (median of {repeats} repeats, ms/call)"
    )
    print(
        f"{'values':>10s} "
        + " ".join(f"{name:>13s}" for name in factories)
        + "   torch/tallyboard  X/tallyboard  target"
    )
    for size, (values, n) in cases.items():
        times: dict[str, list[float]] = {name: [] for name in factories}
        for _ in range(repeats):
            for name, factory in factories.items():
                times[name].append(end_to_end(factory, values, n))
        med = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
        ratio = med["torch"] / med["tallyboard"]
        x_ratio = (
            f"{med['tensorboardX'] / med['tallyboard']:10.1f}x"
            if "tensorboardX" in med
            else "          -"
        )
        verdict = "ok" if ratio >= TARGETS[size] else "MISSED"
        print(
            f"{size:>10,d} "
            + " ".join(f"{med[name]:13.4f}" for name in factories)
            + f"   {ratio:14.1f}x {x_ratio}  >= {TARGETS[size]:.0f}x {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
