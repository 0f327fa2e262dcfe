"""add_histogram side by side: tallyboard, torch.utils.tensorboard and tensorboardX, in one process.

The whole cost first: end to end per call = (n calls + ``close()``) / n with the default
``'tensorflow'`` bins, so any work left to a writer thread counts; ratios are of end-to-end times.
Then each writer's caller time per call: mean, median, p99, p99.9. Writers take turns within each repeat so machine noise hits
them alike; medians over the repeats are printed with reference/tallyboard ratios.
Targets (issue 3): 1,000 values >= 20x faster than torch; 1,000,000 values >= 3x.
Last, 100,000 float32 values in 30 equal-width buckets (``bins=30``, CLU's rule, the workload
of ``bench_jax.py``'s histograms), where ``np.histogram`` is most of every writer's cost.

Run: ``python bench/bench_histogram.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
from common import COST_HEADER, Cost, median_cost, timed_loop, writer_factories

TARGETS = {1_000: 20.0, 1_000_000: 3.0}


def end_to_end(
    factory: Callable[[str], Any], values: np.ndarray, n: int, bins: Any = "tensorflow"
) -> Cost:
    """The cost of ``n`` ``add_histogram`` calls, end to end including the writer's ``close()``,
    and each call's own time (caller mean, median, p99, p99.9)."""
    with tempfile.TemporaryDirectory() as d:

        def make() -> Any:
            writer = factory(d)
            writer.add_histogram("warm", values[:10], 0, bins=bins)  # imports outside the timing
            return writer

        return timed_loop(make, lambda w, step: w.add_histogram("h", values, step, bins=bins), n)


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
        costs: dict[str, list[Cost]] = {name: [] for name in factories}
        for _ in range(repeats):
            for name, factory in factories.items():
                costs[name].append(end_to_end(factory, values, n))
        med = {
            name: statistics.median(c.end_to_end for c in cs) * 1e3 for name, cs in costs.items()
        }
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
        for name, cs in costs.items():  # the run of median end-to-end time, per call
            print(f"{'':>10} {name:>13}  {COST_HEADER}\n{'':>25}  {median_cost(cs).line()}")
    values = rng.standard_normal(100_000).astype(np.float32)
    n = 20 if args.quick else 100
    print("\n## add_histogram, 100,000 float32 values, bins=30, end to end incl. close (ms/call)")
    costs = {name: [] for name in factories}
    for _ in range(repeats):
        for name, factory in factories.items():
            costs[name].append(end_to_end(factory, values, n, bins=30))
    med = {name: statistics.median(c.end_to_end for c in cs) * 1e3 for name, cs in costs.items()}
    print(
        " ".join(f"{name} {ms:.3f}" for name, ms in med.items())
        + "; "
        + ", ".join(
            f"{name}/tallyboard {ms / med['tallyboard']:.2f}x"
            for name, ms in med.items()
            if name != "tallyboard"
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
