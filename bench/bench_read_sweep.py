"""Reading sweeps: tallyboard.read vs RustBoard (gRPC), EventAccumulator and tbparse, one process.

``python bench/bench_read_sweep.py [case ...] [--repeats N] [--slow-repeats N] [--skip NAME]``
(NAME: ``eventaccumulator``, ``tbparse``, ``rustboard``: leave that reader out).
Cases (default: all):

- ``file-1m``: one run, one file of 1,000,000 scalars (10 tags x 100,000 steps);
- ``runs-1k``: 1,000 runs x 1,000 steps x 3 tags (1,000 files, 3,000,000 scalars);
- ``runs-10k``: 10,000 runs x 100 steps x 3 tags (10,000 files, 3,000,000 scalars);
- ``s3-1k``: ``runs-1k`` on S3 (moto's server in its own process on 127.0.0.1), against s3fs
  fetching every file at once (``fs.cat``), which decodes nothing.

Every reader gives one table of every scalar (``run, tag, step, wall_time, value``); each is timed
end to end (starting RustBoard, loading and fetching every point over gRPC included), and the row
counts must agree. RustBoard is ``tensorboard-data-server`` with ``--reload once`` and every point
kept (``--samples-per-plugin scalars=all``), run without and with ``--checksum`` (its default checks
no CRC; tallyboard, EventAccumulator and tbparse check every one). The runs of a tree are copies of
one file written by tallyboard's SummaryWriter (readers do not cache between files). Reported:
mean, median and max (tail) of the repeats, in seconds, and each reader's median over tallyboard's;
then the peak memory of tallyboard's read (traced, in one process) against the table it returns.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_read import read_event_accumulator, read_tbparse  # noqa: E402
from common import fresh_dir  # noqa: E402

TAGS3 = ("loss", "accuracy", "lr")


def write_tree(root: str, runs: int, steps: int, tags: tuple[str, ...] = TAGS3) -> int:
    """``runs`` run directories each holding one event file of ``steps`` x ``tags`` scalars."""
    from tallyboard import SummaryWriter

    first = os.path.join(root, "run00000")
    with SummaryWriter(first) as w:
        for s in range(steps):
            for k, tag in enumerate(tags):
                w.add_scalar(tag, 1.0 / (s + 1) + k, s)
    (name,) = os.listdir(first)
    for i in range(1, runs):
        d = os.path.join(root, f"run{i:05d}")
        os.makedirs(d)
        shutil.copyfile(os.path.join(first, name), os.path.join(d, name))
    return runs * steps * len(tags)


def write_one_file(root: str, n: int) -> int:
    from tallyboard import SummaryWriter

    with SummaryWriter(root) as w:
        for step in range(n // 10):
            for k in range(10):
                w.add_scalar(f"tag{k}", step * 0.001 + k, step)
    return n // 10 * 10


def read_tallyboard(path: str) -> Any:
    import tallyboard

    return tallyboard.read(path, progress=False)


def read_tallyboard_one_core(path: str) -> Any:
    import tallyboard

    return tallyboard.read(path, workers=1, progress=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_written(path: str) -> bool:
    return os.path.exists(path) and Path(path).read_text().endswith("\n")


def rustboard(expected: int, series: int, last_step: int, checksum: bool) -> Callable[[str], Any]:
    """A reader that starts RustBoard on the log dir and fetches every scalar over gRPC: it
    polls the cheap ``ListScalars`` until each of the ``series`` (run, tag) pairs has reached
    ``last_step``, then reads every point (again, should a run be only partly loaded)."""

    def read(path: str) -> Any:
        import grpc
        import numpy as np
        import pandas as pd
        from tensorboard.data.proto import data_provider_pb2 as pb
        from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc
        from tensorboard_data_server import server_binary

        port_file = os.path.join(tempfile.mkdtemp(prefix="rb-port-"), "port")
        cmd = [
            str(server_binary()),
            f"--logdir={path}",
            "--reload=once",
            "--samples-per-plugin=scalars=all",
            "--host=127.0.0.1",
            "--port=0",
            f"--port-file={port_file}",
            "--die-after-stdin",
            "--checksum" if checksum else "--no-checksum",
        ]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            while not _port_written(port_file):
                if proc.poll() is not None:
                    raise RuntimeError(f"RustBoard exited with {proc.returncode}")
                time.sleep(0.002)
            port = int(Path(port_file).read_text())
            with grpc.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", -1)]
            ) as channel:
                stub = pb_grpc.TensorBoardDataProviderStub(channel)
                request = pb.ReadScalarsRequest(
                    plugin_filter=pb.PluginFilter(plugin_name="scalars"),
                    downsample=pb.Downsample(num_points=1 << 30),
                )
                listing = pb.ListScalarsRequest(plugin_filter=request.plugin_filter)
                while True:  # until loading has reached every point
                    listed = stub.ListScalars(listing)
                    done = sum(
                        t.metadata.max_step == last_step for r in listed.runs for t in r.tags
                    )
                    if done < series:
                        time.sleep(0.01)
                        continue
                    response = stub.ReadScalars(request)
                    got = sum(len(t.data.step) for r in response.runs for t in r.tags)
                    if got >= expected:
                        break
                    time.sleep(0.01)
                runs, tags, steps, walls, values = [], [], [], [], []
                for r in response.runs:
                    for t in r.tags:
                        n = len(t.data.step)
                        runs.append(np.full(n, r.run_name, object))
                        tags.append(np.full(n, t.tag_name, object))
                        steps.append(np.array(t.data.step, np.int64))
                        walls.append(np.array(t.data.wall_time, np.float64))
                        values.append(np.array(t.data.value, np.float64))
                return pd.DataFrame(
                    {
                        "run": pd.Categorical(np.concatenate(runs)),
                        "tag": pd.Categorical(np.concatenate(tags)),
                        "step": np.concatenate(steps),
                        "wall_time": np.concatenate(walls),
                        "value": np.concatenate(values),
                    }
                )
        finally:
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait(10)

    return read


class MotoS3:
    """moto's S3 server in its own process on 127.0.0.1, with s3fs pointed at it."""

    BUCKET = "sweep"

    def __enter__(self) -> MotoS3:
        import fsspec
        import s3fs

        port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for var, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            os.environ[var] = value
        fsspec.config.conf["s3"] = {
            "endpoint_url": f"http://127.0.0.1:{port}",
            "key": "testing",
            "secret": "testing",
        }
        s3fs.S3FileSystem.clear_instance_cache()
        self.fs = fsspec.filesystem("s3")
        deadline = time.monotonic() + 30
        while True:
            try:
                self.fs.mkdir(self.BUCKET)
                break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.2)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    def upload(self, local: str, prefix: str) -> str:
        self.fs.put(local, f"{self.BUCKET}/{prefix}", recursive=True)
        return f"s3://{self.BUCKET}/{prefix}"

    def s3fs_fetch_all(self, url: str) -> Any:
        """s3fs's own concurrent fetch of every file (listing included), bytes only."""
        self.fs.invalidate_cache()
        paths = [p for p in self.fs.find(url) if "tfevents" in p]
        data = self.fs.cat(paths)
        return [None] * sum(len(v) > 0 for v in data.values())


def timed(fn: Callable[[str], Any], path: str, repeats: int) -> tuple[list[float], int]:
    times, rows = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rows = len(fn(path))
        times.append(time.perf_counter() - t0)
    return times, rows


def report(case: str, results: dict[str, tuple[list[float], int]], base: str) -> None:
    ref = statistics.median(results[base][0])
    for name, (times, rows) in results.items():
        med = statistics.median(times)
        print(
            f"{case:9s} {name:26s} {rows:>10,d} {len(times):>3d} {statistics.mean(times):8.3f}"
            f" {med:8.3f} {max(times):8.3f} {med / ref:8.2f}x",
            flush=True,
        )


def peak_memory(case: str, path: str) -> None:
    """Peak memory of a read (one process, so every allocation is traced) against its table."""
    import tallyboard

    tracemalloc.start()
    df = tallyboard.read(path, workers=1, progress=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    table = int(df.memory_usage(deep=True).sum())
    print(
        f"{case:9s} peak traced memory (workers=1) {peak / 1e6:.1f} MB for a"
        f" {table / 1e6:.1f} MB table: {peak / table:.2f}x",
        flush=True,
    )


def run_case(case: str, repeats: int, slow_repeats: int, skip: set[str]) -> None:
    root = fresh_dir(f"sweep-{case}")
    try:
        if case == "file-1m":
            expected, series, last = write_one_file(root, 1_000_000), 10, 99_999
        elif case in ("runs-1k", "s3-1k"):
            expected, series, last = write_tree(root, 1000, 1000), 3000, 999
        elif case == "runs-10k":
            expected, series, last = write_tree(root, 10_000, 100), 30_000, 99
        else:
            raise SystemExit(f"unknown case {case!r}")
        path = root
        if case == "s3-1k":
            with MotoS3() as s3:
                url = s3.upload(root, "runs-1k")
                results = {
                    "tallyboard": timed(read_tallyboard, url, repeats),
                    "s3fs fs.cat (bytes only)": timed(s3.s3fs_fetch_all, url, repeats),
                }
            report(case, results, "tallyboard")
            return
        readers: dict[str, tuple[Callable[[str], Any], int]] = {
            "tallyboard": (read_tallyboard, repeats),
            "tallyboard workers=1": (read_tallyboard_one_core, repeats),
            "RustBoard gRPC": (rustboard(expected, series, last, False), repeats),
            "RustBoard gRPC --checksum": (rustboard(expected, series, last, True), repeats),
            "EventAccumulator": (read_event_accumulator, slow_repeats),
            "tbparse": (read_tbparse, slow_repeats),
        }
        results = {}
        for name, (fn, n) in readers.items():
            if name.split()[0].lower() in skip:
                continue
            results[name] = timed(fn, path, n)
            if results[name][1] != expected:
                raise AssertionError(f"{case}: {name} read {results[name][1]} of {expected}")
            print(f"  ({name}: {results[name][0]})", flush=True)  # progress, before the table
        report(case, results, "tallyboard")
        if "tallyboard" not in skip:
            peak_memory(case, path)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    args = sys.argv[1:]
    repeats, slow_repeats, skip = 3, 1, set()
    cases: list[str] = []
    while args:
        a = args.pop(0)
        if a == "--repeats":
            repeats = int(args.pop(0))
        elif a == "--slow-repeats":
            slow_repeats = int(args.pop(0))
        elif a == "--skip":
            skip.add(args.pop(0).lower())
        else:
            cases.append(a)
    warm = fresh_dir("sweep-warm-up")
    write_tree(warm, 2, 10)
    for fn in (read_tallyboard, read_event_accumulator, read_tbparse):
        fn(warm)  # imports and caches outside the timings
    shutil.rmtree(warm)
    print(
        f"\n## read sweeps into a DataFrame (seconds; {os.cpu_count()} cores)\n"
        f"{'case':9s} {'reader':26s} {'rows':>10s} {'n':>3s} {'mean':>8s} {'median':>8s}"
        f" {'max':>8s} {'vs tb':>9s}"
    )
    for case in cases or ["file-1m", "runs-1k", "runs-10k", "s3-1k"]:
        run_case(case, repeats, slow_repeats, skip)


if __name__ == "__main__":
    main()
