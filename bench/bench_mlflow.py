"""Logging scalars to MLflow: tallyboard's mlflow sink next to MLflow's own API, in one process.

Each case logs ``N`` scalars to a fresh local sqlite store and is timed end to end (until
everything is stored); the caller's time per value is also shown for the sink, whose sending
happens on a background thread. References: ``MlflowClient.log_metric`` (one store call per
value, what most training loops do), ``mlflow.log_metric(..., synchronous=False)`` (MLflow's
async queue) and one ``MlflowClient.log_batch`` per 900 values (the floor). Every case is timed
from its first value to the end of its ``close()`` (the run marked finished). Alternating
repeats; mean, median and tail (the slowest repeat) per case; ratio = reference median /
tallyboard median.
Run ``python bench/bench_mlflow.py [--n 1000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable

from common import fresh_dir, print_table

REPEATS = 5


def _store(root: str) -> tuple[str, str]:
    from mlflow.tracking import MlflowClient

    uri = "sqlite:///" + os.path.join(root, "mlflow.db")
    client = MlflowClient(uri)
    experiment = client.create_experiment("bench", artifact_location=f"file://{root}/artifacts")
    return uri, str(experiment)


def tallyboard_sink(n: int) -> tuple[float, float]:
    """(end-to-end us per value, caller us per value) through a SummaryWriter whose only sink
    is the same kind of store the references use (created before timing, as theirs); the
    time includes opening the writer (finding the experiment, creating the run) and close()."""
    from tallyboard import SummaryWriter

    root = fresh_dir("mlflow")
    try:
        uri, _ = _store(root)  # experiment "bench", as the writer's parent folder is named
        t0 = time.perf_counter()
        writer = SummaryWriter(os.path.join(root, "bench", "run"), sinks=[f"mlflow+{uri}"])
        for i in range(n):
            writer.add_scalar("loss", 1.0 / (i + 1), i)
        caller = time.perf_counter() - t0
        writer.close()
        total = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return total / n * 1e6, caller / n * 1e6


def _reference(body: Callable[[str, str, int], None], n: int) -> float:
    root = fresh_dir("mlflow-ref")
    try:
        uri, experiment = _store(root)
        t0 = time.perf_counter()
        body(uri, experiment, n)
        total = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return total / n * 1e6


def client_log_metric(uri: str, experiment: str, n: int) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    run = client.create_run(experiment).info.run_id
    for i in range(n):
        client.log_metric(run, "loss", 1.0 / (i + 1), step=i)
    client.set_terminated(run)


def fluent_async(uri: str, experiment: str, n: int) -> None:
    import mlflow

    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(experiment_id=experiment):
        for i in range(n):
            mlflow.log_metric("loss", 1.0 / (i + 1), step=i, synchronous=False)
        mlflow.flush_async_logging()


def client_log_batch(uri: str, experiment: str, n: int) -> None:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    run = client.create_run(experiment).info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric("loss", 1.0 / (i + 1), now, i) for i in range(n)]
    for start in range(0, n, 900):
        client.log_batch(run, metrics=metrics[start : start + 900])
    client.set_terminated(run)


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    n = args.n
    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    ours: list[tuple[float, float]] = []
    refs: dict[str, list[float]] = {"log_metric": [], "async": [], "log_batch": []}
    for _ in range(args.repeats):
        ours.append(tallyboard_sink(n))
        refs["log_metric"].append(_reference(client_log_metric, n))
        refs["async"].append(_reference(fluent_async, n))
        refs["log_batch"].append(_reference(client_log_batch, n))
    total = statistics.median(o[0] for o in ours)
    caller = statistics.median(o[1] for o in ours)
    med = {k: statistics.median(v) for k, v in refs.items()}
    print(f"\n{n} scalars, {args.repeats} repeats, us per value end to end: mean / median / tail")
    for label, times in [("sink", [o[0] for o in ours]), *refs.items()]:
        print(
            f"  {label:12s} {statistics.fmean(times):10.1f} {statistics.median(times):10.1f} "
            f"{max(times):10.1f}"
        )
    print_table(
        f"{n} scalars to a local MLflow sqlite store, us per value (end to end)",
        [
            ("sink vs MlflowClient.log_metric per value", total, med["log_metric"]),
            ("sink vs mlflow.log_metric(synchronous=False)", total, med["async"]),
            ("sink vs MlflowClient.log_batch of 900 (floor)", total, med["log_batch"]),
            ("sink, caller's time (open + add_scalar), not close", caller, None),
        ],
    )
    return {"sink_us": total, "caller_us": caller, **{f"{k}_us": v for k, v in med.items()}}


if __name__ == "__main__":
    main()
