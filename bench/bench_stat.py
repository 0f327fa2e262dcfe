"""Side-by-side cost of tallyboard.monitor and torch.monitor, in one process.

The whole cost comes first (:func:`whole_cost`): a loop of ``Stat.add`` whose windows close
every few milliseconds, each window's event written to TensorBoard files through the library's
``TensorboardEventHandler``, timed end to end up to the end of the writer's ``close()``, then the
caller's own time per call (mean, median, p99, p99.9); ratios are of end-to-end times.
Then each operation alone is timed for both libraries in alternating repeats (so background load
hits both alike); that table shows the median microseconds per call and the ratio tallyboard /
torch.
Run ``python bench/bench_stat.py``; ``main()`` returns the numbers for a top-level bench script.
torch is optional: without it only tallyboard's column is filled.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
import timeit
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

from common import COST_HEADER, Cost, median_cost, spread, timed_loop

REPEATS = 9
NUMBER = 100_000

#: name -> (statement, how many calls per repeat as a fraction of NUMBER)
CASES: dict[str, tuple[str, float]] = {
    "Stat.add(1.0), 1 aggregation": ("s1.add(1.0)", 1),
    "Stat.add(1.0), 5 aggregations": ("s5.add(1.0)", 1),
    "Stat.add(1), int, 5 aggregations": ("s5.add(1)", 1),
    "Stat.add(1.0), max_samples set": ("sm.add(1.0)", 1),
    "Stat.count": ("s5.count", 1),
    "Stat.get(), 5 aggregations": ("s5.get()", 0.1),
    "log_event(e), 0 handlers": ("log_event(ev)", 1),
    "log_event(e), 1 no-op handler": ("log_event(ev)", 1),
    "Event('ev', now, {})": ("Event('ev', now, {})", 0.25),
    "Event('ev', now, 3 items)": ("Event('ev', now, items)", 0.25),
    "Stat construct+add+close -> 1 event": ("one_event()", 0.05),
}


def _env(mon: ModuleType) -> dict[str, Any]:
    hour = timedelta(hours=1)
    agg = mon.Aggregation
    five = [agg.SUM, agg.MEAN, agg.COUNT, agg.MAX, agg.MIN]
    stat = mon.Stat

    def one_event() -> None:
        s = stat("b", five, hour)
        s.add(1.0)
        close = getattr(s, "close", None)
        if close is not None:
            close()  # tallyboard; torch emits when the object is destroyed
        del s

    return {
        "s1": stat("b1", [agg.SUM], hour),
        "s5": stat("b5", five, hour),
        "sm": stat("bm", five, hour, max_samples=2**40),
        "log_event": mon.log_event,
        "Event": mon.Event,
        "ev": mon.Event("ev", datetime.now(), {}),
        "now": datetime.now(),
        "items": {"a": 1.0, "b": 2, "c": "x"},
        "one_event": one_event,
    }


def main(repeats: int = REPEATS, number: int = NUMBER) -> dict[str, dict[str, float]]:
    """Print tallyboard vs torch.monitor side by side.

    Returns ``{case: {"tallyboard": us, "torch": us, "ratio": tallyboard/torch}}`` (torch keys
    absent when torch is not installed).
    """
    import tallyboard.monitor as pb

    libs: dict[str, ModuleType] = {"tallyboard": pb}
    try:
        libs["torch"] = importlib.import_module("torch.monitor")
    except ImportError:
        pass
    envs = {name: _env(mod) for name, mod in libs.items()}
    results: dict[str, dict[str, float]] = {}
    print(f"{'operation (median us per call)':40} {'tallyboard':>10} {'torch':>8} {'ratio':>6}")
    for case, (stmt, share) in CASES.items():
        n = max(1, int(number * share))
        handles = {}
        if "1 no-op handler" in case:
            handles = {
                name: mod.register_event_handler(lambda e: None) for name, mod in libs.items()
            }
        try:
            timers = {name: timeit.Timer(stmt, globals=envs[name]) for name in libs}
            for timer in timers.values():
                timer.timeit(max(1, n // 10))  # warm up
            samples: dict[str, list[float]] = {name: [] for name in libs}
            for _ in range(repeats):
                for name, timer in timers.items():
                    samples[name].append(timer.timeit(n) / n * 1e6)
        finally:
            for name, handle in handles.items():
                libs[name].unregister_event_handler(handle)
        row = {name: statistics.median(values) for name, values in samples.items()}
        if "torch" in row:
            row["ratio"] = row["tallyboard"] / row["torch"]
            print(f"{case:40} {row['tallyboard']:10.3f} {row['torch']:8.3f} {row['ratio']:6.2f}")
        else:
            print(f"{case:40} {row['tallyboard']:10.3f}")
        results[case] = row
    return results


class _Logged:
    """A Stat whose window events reach TensorBoard files; ``close()`` ends all of it."""

    def __init__(self, lib: str, log_dir: str) -> None:
        if lib == "tallyboard":
            import tallyboard as mon
            from tallyboard import SummaryWriter
        else:
            import torch.monitor as mon  # type: ignore[no-redef]
            from torch.utils.tensorboard import SummaryWriter  # type: ignore[no-redef,assignment]
        self.writer = SummaryWriter(log_dir)
        self.mon = mon
        self.handle = mon.register_event_handler(mon.TensorboardEventHandler(self.writer))
        agg = mon.Aggregation
        self.stat = mon.Stat("loss", [agg.MEAN, agg.MAX, agg.COUNT], timedelta(milliseconds=5))

    def close(self) -> None:
        close = getattr(self.stat, "close", None)
        if close is not None:
            close()  # tallyboard: the last window's event; torch emits it when the Stat goes
        self.stat = None
        self.mon.unregister_event_handler(self.handle)
        self.writer.close()


def whole_cost(n: int = 200_000, rounds: int = 3) -> dict[str, Cost]:
    """``Stat.add`` in a loop with 5 ms windows logged to TensorBoard, end to end incl. close."""
    libs = ["tallyboard"]
    try:
        importlib.import_module("torch.monitor")
        libs.append("torch")
    except ImportError:
        pass
    costs: dict[str, list[Cost]] = {lib: [] for lib in libs}
    for _ in range(rounds):
        for lib in libs:  # interleaved: both see the same load
            with tempfile.TemporaryDirectory() as tmp:
                costs[lib].append(
                    timed_loop(
                        lambda lib=lib: _Logged(lib, tmp), lambda o, i: o.stat.add(i * 0.5), n
                    )
                )
    print(f"Stat.add, 5 ms windows to TensorBoard, {n} calls:")
    print(f"{'':12} {COST_HEADER}")
    best = {lib: median_cost(c) for lib, c in costs.items()}
    for lib, cost in best.items():
        print(f"{lib:12} {cost.line()}")
    if "torch" in costs:
        ratios = [t.end_to_end / o.end_to_end for o, t in zip(costs["tallyboard"], costs["torch"])]
        print(f"end-to-end ratio torch / tallyboard per round: {spread(ratios)}x")
    return best


if __name__ == "__main__":
    whole_cost(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
    main()
