"""One training step of ``add_value`` + ``record``: tallyboard's SummaryRecord next to MindSpore's.

Run ``python bench/bench_summary_record.py [steps]``. MindSpore is measured in the same process
when it is importable (``pip install mindspore``); otherwise tallyboard alone. Two figures per
side: the median of the caller's per-step times (what a training step pays when the writer keeps
up; MindSpore hands each step to a writer process, tallyboard encodes heavy values on a writer
thread) and the mean per step including ``close()`` (everything written, so work deferred to a
thread or process is counted). Each case runs ``ROUNDS`` rounds, tallyboard and MindSpore
interleaved (both see the same machine load); the table shows the median of the rounds and the
range of the per-round median ratios.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

TARGETS = {"scalar": 50.0, "image 1x3x64x64": 10.0, "histogram 1000": 20.0}
ROUNDS = 3


def cases() -> dict[str, tuple[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {
        "scalar": ("scalar", np.array(0.5, dtype=np.float32)),
        "image 1x3x64x64": ("image", rng.random((1, 3, 64, 64), dtype=np.float32)),
        "histogram 1000": ("histogram", rng.normal(size=1000).astype(np.float32)),
    }


def measure(
    factory: Callable[[str], Any], plugin: str, value: Any, steps: int
) -> tuple[float, float]:
    """(median per-step seconds, mean per-step seconds including close)."""
    with tempfile.TemporaryDirectory() as d:
        record = factory(d)
        times = []
        clock = time.perf_counter
        start = clock()
        for step in range(steps):
            t0 = clock()
            record.add_value(plugin, "tag", value)
            record.record(step)
            times.append(clock() - t0)
        record.close()
        total = clock() - start
    return statistics.median(times), total / steps


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    steps = int(argv[0]) if argv else 2000
    from tallyboard import SummaryRecord

    try:
        import mindspore
        from mindspore import SummaryRecord as MsRecord
        from mindspore import Tensor
    except ImportError:
        mindspore = None
        print("MindSpore is not installed: measuring tallyboard alone")
    print(f"{steps} steps per case; times per step (add_value + record), median / mean incl. close")
    header = f"{'case':16} {'tallyboard':>19}"
    if mindspore is not None:
        header += (
            f" {'MindSpore ' + mindspore.__version__:>19} {'ratio med':>9} {'ratio mean':>10}"
            f" {'target':>6}  per-round median ratios"
        )
    print(header)
    ok = True
    for name, (plugin, value) in cases().items():
        pb: list[tuple[float, float]] = []
        ms: list[tuple[float, float]] = []
        for _ in range(ROUNDS):
            pb.append(measure(SummaryRecord, plugin, value, steps))
            if mindspore is not None:
                ms.append(measure(MsRecord, plugin, Tensor(value), max(500, steps // 2)))
        pb_med = statistics.median(m for m, _ in pb)
        pb_mean = statistics.median(m for _, m in pb)
        line = f"{name:16} {pb_med * 1e6:6.2f} / {pb_mean * 1e6:6.2f} us"
        if mindspore is not None:
            ms_med = statistics.median(m for m, _ in ms)
            ms_mean = statistics.median(m for _, m in ms)
            ratio = ms_med / pb_med
            ok &= ratio >= TARGETS[name]
            ratios = sorted(m / p for (m, _), (p, _) in zip(ms, pb))
            line += (
                f" {ms_med * 1e6:6.1f} / {ms_mean * 1e6:6.1f} us {ratio:8.1f}x"
                f" {ms_mean / pb_mean:9.1f}x {TARGETS[name]:5.0f}x  {ratios[0]:.1f}-{ratios[-1]:.1f}x"
            )
        print(line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
