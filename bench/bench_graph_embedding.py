"""tallyboard vs torch.utils.tensorboard, one process: add_embedding (1000x64 + labels) and add_graph (small CNN).

Run ``python bench/bench_graph_embedding.py``; prints the median per call and the torch/tallyboard ratio.
Targets: add_embedding at least 5x faster than torch, add_graph no slower.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any


def _paired(
    torch_fn: Callable[[int], Any], pb_fn: Callable[[int], Any], repeat: int
) -> tuple[float, float]:
    """Median seconds per call of each, calls interleaved so both see the same machine load."""
    torch_fn(-1)  # warm up: imports, first-use registries
    pb_fn(-1)
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeat):
        for fn, out in ((torch_fn, times[0]), (pb_fn, times[1])):
            start = time.perf_counter()
            fn(i)
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


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
    """Run both benchmarks; returns ``{name: (torch seconds, tallyboard seconds)}`` and prints them."""
    import torch
    from tallyboard import SummaryWriter
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    warnings.simplefilter("ignore")
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        mat = torch.randn(1000, 64)
        labels = [f"label{i % 10}" for i in range(1000)]
        tw, pw = TorchWriter(f"{tmp}/torch"), SummaryWriter(f"{tmp}/pb")
        results["add_embedding 1000x64 + metadata"] = _paired(
            lambda i: tw.add_embedding(mat, metadata=labels, global_step=i + 1),
            lambda i: pw.add_embedding(mat, metadata=labels, global_step=i + 1),
            repeat,
        )
        model, x = _cnn(), torch.zeros(1, 3, 32, 32)
        results["add_graph small CNN"] = _paired(
            lambda i: tw.add_graph(model, x), lambda i: pw.add_graph(model, x), repeat
        )
        tw.close()
        pw.close()
    print(f"{'call':36} {'torch ms':>10} {'tallyboard ms':>13} {'speed-up':>9}")
    for name, (t, p) in results.items():
        print(f"{name:36} {t * 1e3:10.2f} {p * 1e3:13.2f} {t / p:8.2f}x")
    return results


if __name__ == "__main__":
    main()
