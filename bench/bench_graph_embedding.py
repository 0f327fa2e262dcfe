"""tallyboard vs torch.utils.tensorboard, one process: add_embedding (1000x64 + labels) and add_graph (small CNN).

Run ``python bench/bench_graph_embedding.py``; prints the whole cost first (per call end to end incl.
``close()``, then caller mean, median, p99, p99.9) and the torch/tallyboard ratio of end-to-end times.
Targets: add_embedding at least 5x faster than torch, add_graph no slower.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from typing import Any

from common import COST_HEADER, Cost, median_cost, timed_loop


def _paired(
    make: dict[str, Callable[[str], Any]],
    call: Callable[[Any, int], Any],
    repeat: int,
    rounds: int = 3,
) -> dict[str, Cost]:
    """The whole cost of ``repeat`` calls on a fresh writer of each library (end to end incl.
    ``close()``, and each call's own time), the libraries taking turns in each round so both see
    the same machine load; the round of median end-to-end time for each."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, factory in make.items():  # warm up: imports, first-use registries
            timed_loop(lambda f=factory, n=name: f(f"{tmp}/warm-{n}"), call, 1)
        costs: dict[str, list[Cost]] = {name: [] for name in make}
        for r in range(rounds):
            for name, factory in make.items():
                costs[name].append(
                    timed_loop(lambda f=factory, d=f"{tmp}/{name}-{r}": f(d), call, repeat)
                )
    return {name: median_cost(c) for name, c in costs.items()}


def _cnn() -> Any:
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1),
                nn.BatchNorm2d(16),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
            )
            self.head = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            import torch

            return self.head(torch.flatten(self.features(x), 1))

    return SmallCNN()


def main(repeat: int = 15) -> dict[str, tuple[float, float]]:
    """Run both benchmarks; returns ``{name: (torch seconds, tallyboard seconds)}`` per call end
    to end (incl. ``close()``) and prints the whole cost of each."""
    import torch
    from tallyboard import SummaryWriter
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    warnings.simplefilter("ignore")
    make = {"torch": TorchWriter, "tallyboard": SummaryWriter}
    mat = torch.randn(1000, 64)
    labels = [f"label{i % 10}" for i in range(1000)]
    model, x = _cnn(), torch.zeros(1, 3, 32, 32)
    cases = {
        "add_embedding 1000x64 + metadata": lambda w, i: w.add_embedding(
            mat, metadata=labels, global_step=i + 1
        ),
        "add_graph small CNN": lambda w, i: w.add_graph(model, x),
    }
    results: dict[str, tuple[float, float]] = {}
    print(f"{'call':44} {COST_HEADER}")
    for name, call in cases.items():
        costs = _paired(make, call, repeat)
        for library, cost in costs.items():
            print(f"{name + ' ' + library:44} {cost.line()}")
        t, p = costs["torch"].end_to_end, costs["tallyboard"].end_to_end
        print(f"{'':44} end to end: {t / p:.2f}x torch", flush=True)
        results[name] = (t, p)
    return results


if __name__ == "__main__":
    main()
