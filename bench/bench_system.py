"""What the system metrics sampler costs: CPU time of its thread, as a share of one core.

Two measurements, both with a real ``TensorboardEventHandler`` writing every sample to a
``SummaryWriter`` (what a user runs):

- per sample: the sampler thread's CPU time (``time.thread_time``) per sample, median over
  repeats of a burst at a 10 ms interval; at a 1 s interval the cost is that time per second;
- over a real run: the sampler at ``interval=1.0`` for ``--seconds`` (20 by default) while the
  main thread sleeps; its thread's CPU time divided by the wall time.

The goal (issue 12) is under 1% of one core at a 1 s interval.
Run ``python bench/bench_system.py [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

from common import fresh_dir

REPEATS = 5
BURST = 100


def _with_handler(run: object) -> float:
    from tallyboard import SummaryWriter
    from tallyboard.monitor import (
        TensorboardEventHandler,
        register_event_handler,
        unregister_event_handler,
    )

    log_dir = fresh_dir("system")
    writer = SummaryWriter(log_dir)
    handle = register_event_handler(TensorboardEventHandler(writer))
    try:
        return run()  # type: ignore[operator, no-any-return]
    finally:
        unregister_event_handler(handle)
        writer.close()
        shutil.rmtree(log_dir, ignore_errors=True)


def per_sample_us() -> tuple[float, int]:
    """Median thread CPU microseconds per sample, and how many stats one sample logs."""
    from tallyboard_system import SystemMetrics

    def burst() -> tuple[float, int]:
        sampler = SystemMetrics(interval=0.01).start()
        while sampler.samples < BURST + 1:
            time.sleep(0.01)
        sampler.stop()
        stats = len(sampler.last)
        return sampler.sample_seconds / sampler.samples * 1e6, stats

    results = [_with_handler(burst) for _ in range(REPEATS)]
    return statistics.median(r[0] for r in results), results[0][1]


def real_run(seconds: float) -> tuple[float, int]:
    """Percent of one core the sampler thread used at interval=1.0, and samples taken."""
    from tallyboard_system import SystemMetrics

    def run() -> tuple[float, int]:
        started = time.monotonic()
        with SystemMetrics(interval=1.0) as sampler:
            time.sleep(seconds)
        wall = time.monotonic() - started
        return 100.0 * sampler.sample_seconds / wall, sampler.samples

    return _with_handler(run)  # type: ignore[arg-type, return-value]


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    us, stats = per_sample_us()
    print("\n## system metrics sampler (thread CPU time, TensorboardEventHandler attached)")
    print(f"per sample ({stats} stats), median of {REPEATS} bursts of {BURST}: {us:8.1f} us")
    print(f"implied share of one core at interval=1.0:           {us / 1e4:8.3f} %")
    percent, samples = real_run(args.seconds)
    print(
        f"measured over {args.seconds:.0f} s at interval=1.0 ({samples} samples):      {percent:8.3f} %"
    )
    return {"per_sample_us": us, "implied_percent": us / 1e4, "measured_percent": percent}


if __name__ == "__main__":
    main()
