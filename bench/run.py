"""Run every benchmark (or those named): ``python bench/run.py [scalar stat image ...]``."""

from __future__ import annotations

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BENCHES = {
    "scalar": "bench_scalar",
    "stat": "bench_stat",
    "histogram": "bench_histogram",
    "image": "bench_image",
    "graph_embedding": "bench_graph_embedding",
    "summary_record": "bench_summary_record",
    "summary_collector": "bench_summary_collector",
    "system": "bench_system",
    "mlflow": "bench_mlflow",
    "distributed": "bench_distributed",
    "trainers": "bench_trainers",
    "heavy_stall": "bench_heavy_stall",
    "read": "bench_read",
    "read_sweep": "bench_read_sweep",
}


def main(argv: list[str]) -> int:
    chosen = argv or list(BENCHES)
    unknown = [c for c in chosen if c not in BENCHES]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHES)}", file=sys.stderr)
        return 2
    sys.argv = sys.argv[:1]  # each benchmark's main() runs with its own defaults
    for name in chosen:
        print(f"\n# {name}", flush=True)
        importlib.import_module(BENCHES[name]).main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
