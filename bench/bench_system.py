"""What the system metrics sampler costs: CPU time, as a share of one core.

The sampler is not a loop of calls the caller makes: it runs on a thread of its own. So its whole
cost is counted as CPU time: everything the process spends from ``start()`` to the end of the
writer's ``close()`` (the sampler thread, ``stop()``'s last sample, the writer thread encoding and
writing the samples, ``close()``), less what the main thread spends waiting (``time.sleep``,
standing in for training). Each run uses a real ``TensorboardEventHandler`` writing every sample
to a ``SummaryWriter`` (what a user runs). The whole cost comes first:

- per sample, from bursts of about 100 samples at a 10 ms interval (the run of median whole cost of the
  repeats): whole CPU per sample (the table's end-to-end column), then the sampler's own CPU
  time per sample (``time.thread_time`` around each sample): mean, median, p99, p99.9; the share
  of one core this implies at a 1 s interval is the whole CPU per sample per second;
- over a real run: the sampler at ``interval=1.0`` for ``--seconds`` (20 by default) while the
  main thread sleeps: the wall time from ``start()`` to the end of ``close()``, the same table per
  sample, and the whole CPU divided by that wall time.

After each, the sampler thread's CPU alone (``SystemMetrics.sample_seconds``, what this benchmark
reported before). The goal (issue 12) is under 1% of one core at a 1 s interval.
Run ``python bench/bench_system.py [--seconds 20] [--quick]`` (``--quick``: 5 s, 3 bursts).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common import COST_HEADER, Cost, fresh_dir

REPEATS = 5
BURST = 100
#: The whole-cost header with the sampler thread in the caller's place, CPU time per sample.
SAMPLE_HEADER = COST_HEADER.replace("caller mean ", "sampler mean").replace(
    "us per call", "us CPU per sample"
)


@dataclass(frozen=True)
class Run:
    """One sampler run: ``cost`` (whole CPU per sample as the end-to-end figure, the sampler's own
    CPU per sample as the caller figures), ``wall`` seconds from ``start()`` to the end of the
    writer's ``close()``, ``cpu`` whole CPU seconds, ``thread_cpu`` the sampler thread's
    ``sample_seconds``, ``stats`` how many values one sample logs."""

    cost: Cost
    wall: float
    cpu: float
    thread_cpu: float
    stats: int


def _record_samples(sampler: Any) -> list[float]:
    """Thread CPU seconds of each sample ``sampler`` takes, on its thread or in ``stop()``."""
    times: list[float] = []
    inner = sampler._sample

    def sample() -> dict[str, float]:
        t0 = time.thread_time()
        try:
            return inner()  # type: ignore[no-any-return]
        finally:
            times.append(time.thread_time() - t0)

    sampler._sample = sample
    return times


def measured_run(interval: float, wait: Callable[[Any], None]) -> Run:
    """Sample at ``interval`` while ``wait(sampler)`` runs on this thread, samples written through
    a ``TensorboardEventHandler``; timed from ``start()`` to the end of the writer's ``close()``
    (making the writer and registering the handler are not counted)."""
    from tallyboard import SummaryWriter
    from tallyboard.monitor import (
        TensorboardEventHandler,
        register_event_handler,
        unregister_event_handler,
    )
    from tallyboard_system import SystemMetrics

    log_dir = fresh_dir("system")
    writer = SummaryWriter(log_dir)
    handle = register_event_handler(TensorboardEventHandler(writer))
    try:
        sampler = SystemMetrics(interval=interval)
        per_sample = _record_samples(sampler)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        sampler.start()
        waiting = time.thread_time()
        wait(sampler)
        waiting = time.thread_time() - waiting
        sampler.stop()
        unregister_event_handler(handle)
        handle = None
        writer.close()
        cpu = time.process_time() - cpu0 - waiting
        wall = time.perf_counter() - wall0
    finally:
        if handle is not None:
            unregister_event_handler(handle)
        writer.close()  # idempotent: only does something after an error
        shutil.rmtree(log_dir, ignore_errors=True)
    return Run(Cost(cpu, per_sample), wall, cpu, sampler.sample_seconds, len(sampler.last))


def burst() -> Run:
    """About ``BURST`` samples at a 10 ms interval."""

    def wait(sampler: Any) -> None:
        while sampler.samples < BURST:
            time.sleep(0.01)

    return measured_run(0.01, wait)


def real_run(seconds: float) -> Run:
    """The sampler at ``interval=1.0`` for ``seconds`` while this thread sleeps."""
    return measured_run(1.0, lambda sampler: time.sleep(seconds))


def _figure(label: str, value: str) -> None:
    print(f"  {label + ':':52s} {value}")


def _per_sample_table(run: Run) -> None:
    print(f"  {SAMPLE_HEADER}")
    print(f"  {run.cost.line()}")


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Print the whole cost, then the sampler thread alone; returns the figures by name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=None, help="the real run (default 20)")
    parser.add_argument("--quick", action="store_true", help="a 5 s real run, 3 bursts")
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else 5.0 if args.quick else 20.0
    repeats = 3 if args.quick else REPEATS

    bursts = [burst() for _ in range(repeats)]
    shown = sorted(bursts, key=lambda r: r.cost.end_to_end)[len(bursts) // 2]  # as median_cost
    us = shown.cost.end_to_end * 1e6
    thread_us = statistics.median(r.thread_cpu / r.cost.n for r in bursts) * 1e6
    print("\n## system metrics sampler, TensorboardEventHandler attached (CPU time, whole first)")
    print(
        f"per sample ({shown.stats} stats), interval 10 ms, {shown.cost.n} samples "
        f"(run of median whole CPU of {repeats}):"
    )
    _per_sample_table(shown)
    _figure("whole CPU per sample as a share of one core at 1 s", f"{us / 1e4:.3f} %")
    _figure("sampler thread alone, per sample (median)", f"{thread_us:.1f} us")
    _figure("sampler thread alone, share at 1 s", f"{thread_us / 1e4:.3f} %")

    run = real_run(seconds)
    percent = 100.0 * run.cpu / run.wall
    thread_percent = 100.0 * run.thread_cpu / run.wall
    print(f"\nreal run, interval=1.0, {seconds:g} s of sleep ({run.cost.n} samples):")
    _per_sample_table(run)
    _figure("wall from start() to the end of close()", f"{run.wall:.3f} s")
    _figure("whole CPU", f"{run.cpu * 1e3:.1f} ms")
    _figure("whole CPU / wall", f"{percent:.3f} % (goal < 1 %)")
    _figure("sampler thread alone / wall", f"{thread_percent:.3f} %")
    return {
        "per_sample_us": us,
        "implied_percent": us / 1e4,
        "sampler_thread_per_sample_us": thread_us,
        "measured_percent": percent,
        "measured_sampler_thread_percent": thread_percent,
        "measured_wall_s": run.wall,
    }


if __name__ == "__main__":
    main()
