"""Reading a sweep on S3 on an engine (Dask, Ray) against ``tallyboard.read`` in one process.

``python bench/bench_engines.py [RUNS ...] [--repeats N] [--steps N] [--skip NAME]`` (RUNS:
sweep sizes, default ``1000 3000``; NAME: ``dask``, ``ray``, ``memory``, ``tasks``).

Each sweep (RUNS runs x ``--steps`` steps x 3 tags, one event file per run, written record by
record) is put on S3: moto's server in its own process on 127.0.0.1 (``bench_read_sweep``'s).
Then, on the same cores, taking turns round by round (so a change of load weighs on all alike):

- ``read``: ``tallyboard.read(url)`` in this process (its files fetched 32 at a time, decoded
  here: one process);
- ``dask 2 workers``: ``tallyboard_dask.read(url).compute()`` on a ``LocalCluster`` of two
  worker processes of one thread each, started once (not timed);
- ``ray 2 workers``: ``tallyboard_ray.read(url)``'s blocks gathered into one table, on
  ``ray.init(num_cpus=2)``, started once (not timed).

Each is timed end to end (the client's listing, planning, scheduling, every task, gathering the
result into one frame) and its rows checked against ``read``'s. Reported: mean, median and max
of the rounds in seconds, and each median over ``read``'s (the overhead).

Then, per engine, the cost of one task: ``--tasks`` no-op tasks mapped and gathered (the
scheduler's round trip), and the same read cut in 2 and in 64 partitions (the end-to-end cost of
a share: the difference over 62). From them, the time expected on N machines of C cores:
``T(N) = list + work / (N * C) + tasks * task_cost / (N * C)``, where ``list`` is the client's
listing (timed alone) and ``work`` the cores' seconds of reading measured here (the median of
the engine minus the listing, times the two workers).

Last, the client's memory on the lazy path (``--skip memory`` leaves it out): the Dask frame
computed partition by partition (each dropped before the next), its peak traced by
``tracemalloc`` in this process, beside the largest partition's and the whole frame's size.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_read_sweep import MotoS3, report, rounds, write_tree  # noqa: E402
from common import fresh_dir  # noqa: E402


def read_here(url: str) -> Any:
    from tallyboard import read

    return read(url, progress=False)


def read_dask(url: str) -> Any:
    import tallyboard_dask

    return tallyboard_dask.read(url).compute()


def read_ray(url: str) -> Any:
    import pyarrow as pa
    import ray
    import tallyboard_ray

    return pa.concat_tables(ray.get(tallyboard_ray.read(url).to_arrow_refs()))


def list_only(url: str) -> float:
    """Seconds the client takes to list the sweep and deal it into shares."""
    from tallyboard.reading import shares

    t0 = time.perf_counter()
    shares.plan(url)
    return time.perf_counter() - t0


def _noop(x: int) -> int:
    return x


def task_cost_dask(client: Any, n: int) -> float:
    """Seconds per no-op task mapped and gathered on the cluster."""
    client.gather(client.map(_noop, range(n), pure=False))  # warm
    t0 = time.perf_counter()
    client.gather(client.map(_noop, range(n), pure=False))
    return (time.perf_counter() - t0) / n


def task_cost_ray(n: int) -> float:
    import ray

    remote = ray.remote(_noop)
    ray.get([remote.remote(i) for i in range(n)])  # warm
    t0 = time.perf_counter()
    ray.get([remote.remote(i) for i in range(n)])
    return (time.perf_counter() - t0) / n


def share_cost(read_in: Callable[[int], Any], repeats: int) -> float:
    """End-to-end seconds one more share costs: the read in 64 partitions against 2."""
    two, many = [], []
    for _ in range(repeats):
        for parts, into in ((2, two), (64, many)):
            t0 = time.perf_counter()
            read_in(parts)
            into.append(time.perf_counter() - t0)
    return (statistics.median(many) - statistics.median(two)) / 62


def lazy_memory(url: str) -> None:
    """The client's peak traced memory computing the Dask frame partition by partition."""
    import tallyboard_dask

    whole = tallyboard_dask.read(url).compute()
    full = int(whole.memory_usage(deep=True).sum())
    del whole
    ddf = tallyboard_dask.read(url)
    parts = ddf.to_delayed()
    largest = 0
    tracemalloc.start()
    try:
        for part in parts:
            frame = part.compute()
            largest = max(largest, int(frame.memory_usage(deep=True).sum()))
            del frame
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(
        f"  lazy path ({len(parts)} partitions): client peak {peak / 1e6:.1f} MB,"
        f" largest partition {largest / 1e6:.1f} MB, whole frame {full / 1e6:.1f} MB",
        flush=True,
    )


def expected(name: str, listing: float, engine: float, tasks: int, per_task: float) -> None:
    """The time on N machines of C cores from what was measured here (2 cores)."""
    work = max(engine - listing, 0.0) * 2
    print(
        f"  {name}: list {listing:.2f} s + work {work:.1f} core-s + {tasks} tasks x"
        f" {per_task * 1e3:.1f} ms; T(N machines x C cores) = {listing:.2f} +"
        f" ({work:.1f} + {tasks * per_task:.2f}) / (N*C) s:"
        + "".join(
            f" {n}x8: {listing + (work + tasks * per_task) / (n * 8):.2f} s;" for n in (1, 4, 16)
        ),
        flush=True,
    )


def main() -> None:
    args = sys.argv[1:]
    repeats, steps, skip, sizes, n_tasks = 3, 100, set(), [], 1000
    while args:
        a = args.pop(0)
        if a == "--repeats":
            repeats = int(args.pop(0))
        elif a == "--steps":
            steps = int(args.pop(0))
        elif a == "--tasks":
            n_tasks = int(args.pop(0))
        elif a == "--skip":
            skip.add(args.pop(0).lower())
        else:
            sizes.append(int(a))
    import distributed

    engines: dict[str, Callable[[str], Any]] = {"read": read_here}
    cluster = client = None
    if "dask" not in skip:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = distributed.Client(cluster)
        engines["dask 2 workers"] = read_dask
    if "ray" not in skip:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
        ray.data.DataContext.get_current().enable_progress_bars = False
        engines["ray 2 workers"] = read_ray
    print(
        f"\n## read a sweep on S3 (moto): engines of 2 workers vs read in one process"
        f" (seconds; {os.cpu_count()} cores)\n"
        f"{'case':9s} {'reader':34s} {'rows':>10s} {'n':>3s} {'mean':>8s} {'median':>8s}"
        f" {'max':>8s} {'vs tb':>9s}",
        flush=True,
    )
    try:
        with MotoS3() as s3:
            warm = fresh_dir("engines-warm")
            write_tree(warm, 2, 10)
            warm_url = s3.upload(warm, "warm")
            for fn in engines.values():
                fn(warm_url)  # imports on the client and on every worker, outside the timings
            shutil.rmtree(warm)
            for runs in sizes or [1000, 3000]:
                root = fresh_dir(f"engines-{runs}")
                try:
                    rows = write_tree(root, runs, steps)
                    t0 = time.perf_counter()
                    url = s3.upload(root, f"runs-{runs}")
                    print(f"  ({runs} runs uploaded in {time.perf_counter() - t0:.1f} s)")
                finally:
                    shutil.rmtree(root, ignore_errors=True)
                case = f"s3-{runs}"
                times, got = rounds(engines, url, repeats, rows)
                report(case, times, got, "read")
                listing = statistics.median(list_only(url) for _ in range(repeats))
                print(f"  client listing and planning: {listing:.2f} s", flush=True)
                if "tasks" not in skip and client is not None:
                    import tallyboard_dask

                    per_task = task_cost_dask(client, n_tasks)
                    per_share = share_cost(
                        lambda p, url=url: tallyboard_dask.read(url, partitions=p).compute(), 1
                    )
                    print(
                        f"  dask: a no-op task {per_task * 1e3:.2f} ms; one more share of this"
                        f" read {per_share * 1e3:.1f} ms end to end",
                        flush=True,
                    )
                    n_parts = tallyboard_dask.read(url).npartitions
                    expected(
                        "dask",
                        listing,
                        statistics.median(times["dask 2 workers"]),
                        n_parts,
                        max(per_task, per_share),
                    )
                if "tasks" not in skip and "ray 2 workers" in engines:
                    from tallyboard.reading import shares

                    per_task = task_cost_ray(n_tasks)
                    per_share = share_cost(lambda p, url=url: read_ray_in(url, p), 1)
                    print(
                        f"  ray: a no-op task {per_task * 1e3:.2f} ms; one more share of this"
                        f" read {per_share * 1e3:.1f} ms end to end",
                        flush=True,
                    )
                    n_parts = len(shares.plan(url, at_least=4))
                    expected(
                        "ray",
                        listing,
                        statistics.median(times["ray 2 workers"]),
                        n_parts,
                        max(per_task, per_share),
                    )
                if "memory" not in skip and client is not None:
                    lazy_memory(url)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        if "ray" not in skip:
            import ray

            ray.shutdown()


def read_ray_in(url: str, partitions: int) -> Any:
    import pyarrow as pa
    import ray
    import tallyboard_ray

    return pa.concat_tables(
        ray.get(tallyboard_ray.read(url, partitions=partitions).to_arrow_refs())
    )


if __name__ == "__main__":
    main()
