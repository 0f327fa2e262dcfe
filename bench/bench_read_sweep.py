"""Reading sweeps: tallyboard.read vs RustBoard (gRPC), EventAccumulator and tbparse, one process.

``python bench/bench_read_sweep.py [case ...] [--repeats N] [--slow-repeats N] [--rustboard-repeats N]
[--rustboard-timeout SECONDS] [--skip NAME]`` (a RustBoard that has not loaded the tree within
the timeout is reported with how many runs it had loaded, and left out of the table)
(NAME: ``eventaccumulator``, ``tbparse``, ``rustboard``, ``ls``, ``bytes``, ``export``,
``incremental``: leave that reader or measure out). Cases (default: ``file-1m runs-1k runs-10k
runs-100k s3-1k``):

- ``file-1m``: one run, one file of 1,000,000 scalars (10 tags x 100,000 steps);
- ``file-tf2-1m``: the same in tensor form (TF2's, torch's ``new_style``), so every record goes
  through the scalar decoder (not in the default cases);
- ``runs-1k``: 1,000 runs x 1,000 steps x 3 tags (1,000 files, 3,000,000 scalars);
- ``runs-10k``: 10,000 runs x 100 steps x 3 tags (10,000 files, 3,000,000 scalars);
- ``runs-100k``: 100,000 runs x 10 steps x 3 tags (100,000 files, 3,000,000 scalars);
- ``s3-1k``: ``runs-1k`` on S3 (moto's server in its own process on 127.0.0.1), against s3fs
  fetching every file at once (``fs.cat``), which decodes nothing.

Every reader gives one table of every scalar (``run, tag, step, wall_time, value``); each is timed
end to end (starting RustBoard, loading and fetching every point over gRPC included), and the row
counts must agree. RustBoard is ``tensorboard-data-server`` with ``--reload once`` and every point
kept (``--samples-per-plugin scalars=all``), run without and with ``--checksum`` (its default checks
no CRC; tallyboard, EventAccumulator and tbparse check every one). The runs of a sweep share their
tags and steps, as a sweep's trials do, but each has its own wall times and values (the files are
written record by record here, not copied). The contenders take turns: each round runs every one
of them once, so a machine whose load changes weighs on all alike. Reported: mean, median and
max (tail) of the rounds, in seconds, and each reader's median over tallyboard's.

For sweeps, four more measures on the same tree, taking turns with the reads:

- ``tallyboard ls`` (every run, tag, count, step range, last update; printed to /dev/null) and
  ``tallyboard export --dataset`` into a fresh directory, beside ``read`` plus the same
  partitioned Parquet write (``pyarrow.dataset.write_dataset``, one folder per run);
- ``bytes only``: every run folder listed and every file read, nothing decoded, one process
  per core: the floor under ``read`` and ``ls`` alike (what no Python reader of these files
  escapes);
- the incremental re-read: a ``tallyboard.Reader`` polled once (everything), then after 1% of
  the runs grew by 10 steps (a different 1% each round), polled again: the time of that poll
  against the first full ``read``; and a poll when nothing changed.

Then the peak memory: tallyboard's read and ls traced in this process (workers=1) against the
table (after a read and an ls of a one-run tree, so the modules they import on first use are not
counted), and the peak resident memory (``VmHWM``) of a fresh process reading the tree (workers=1)
beside that of the RustBoard server.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import statistics
import struct
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
#: RustBoard's peak resident memory in its last run (kB), read from /proc before it stops.
RUSTBOARD_PEAK: list[int] = []
#: rounds RustBoard takes part in (None: every round); fewer for trees it loads for minutes.
RUSTBOARD_REPEATS: list[int | None] = [None]
#: seconds RustBoard is given to load a tree (None: as long as it takes).
RUSTBOARD_TIMEOUT: list[float | None] = [None]


class NotLoaded(Exception):
    """RustBoard had not loaded the tree within ``--rustboard-timeout``."""


def _header(wall: float) -> bytes:
    """A file's first record, as TensorBoard's writers put it: the file version."""
    from tallyboard.records.framing import frame

    return frame(b"\x09" + struct.pack("<d", wall) + b"\x1a\x0dbrain.Event:2")


def sweep_records(runs: int, steps: int, tags: tuple[str, ...], start_step: int = 0) -> Any:
    """The scalar records of ``runs`` runs x ``steps`` steps x ``tags``, as the event files of
    tallyboard's SummaryWriter hold them (``Event{wall_time, step, summary{value{tag,
    simple_value}}}``, the step left out when 0), framed with their CRCs: a uint8 array of
    ``runs`` equal slices, one per run. Every run has its own wall times and values."""
    import numpy as np
    from tallyboard.records.framing import frame_fixed, in_call_order, varint_columns

    s = np.arange(start_step, start_step + steps, dtype=np.int64)
    r = np.arange(runs, dtype=np.int64)
    keys = []
    for step in s.tolist():
        width = 0 if step == 0 else (step.bit_length() + 6) // 7
        for k in range(len(tags)):
            keys.append((k, width))
    order_keys = keys * runs
    n = steps * len(tags)
    # per record, in call order: run, step, tag index
    run_of = np.repeat(r, n)
    step_of = np.tile(np.repeat(s, len(tags)), runs)
    tag_of = np.tile(np.tile(np.arange(len(tags)), steps), runs)
    wall = 1.7e9 + run_of * 3.7 + step_of * 0.25 + tag_of * 1e-3
    value = (np.sin(run_of * 0.1 + step_of * 0.01) + tag_of).astype(np.float32)

    def group(key: tuple[int, int], idx: Any) -> Any:
        k, width = key
        tag = tags[k].encode()
        step_field = b"" if width == 0 else b"\x10" + b"\x00" * width
        inner = b"\x0a" + bytes([len(tag)]) + tag + b"\x15" + b"\x00" * 4
        summary = b"\x0a" + bytes([len(inner)]) + inner
        payload = b"\x09" + b"\x00" * 8 + step_field + b"\x2a" + bytes([len(summary)]) + summary
        fields = [(1, wall[idx]), (len(payload) - 4, value[idx])]
        if width:
            fields.append((10, varint_columns(step_of[idx].astype(np.uint64), width)))
        return frame_fixed(payload, fields)

    data = in_call_order(order_keys, group)
    return np.frombuffer(data, np.uint8).reshape(runs, -1)


def write_tree(root: str, runs: int, steps: int, tags: tuple[str, ...] = TAGS3) -> int:
    """``runs`` run directories each holding one event file of ``steps`` x ``tags`` scalars."""
    per_run = sweep_records(runs, steps, tags)
    for i in range(runs):
        d = os.path.join(root, f"run{i:06d}")
        os.makedirs(d)
        with open(os.path.join(d, "events.out.tfevents.1700000000.sweep"), "wb") as fh:
            fh.write(_header(1.7e9 + i * 3.7))
            fh.write(per_run[i].tobytes())
    return runs * steps * len(tags)


def write_one_file(root: str, n: int, new_style: bool = False) -> int:
    """``n`` scalars of 10 tags in one file; ``new_style``: in tensor form (plugin ``scalars``,
    as TF2 and torch's ``new_style=True`` write them), each read by the scalar decoder."""
    from tallyboard import SummaryWriter

    with SummaryWriter(root) as w:
        for step in range(n // 10):
            for k in range(10):
                w.add_scalar(f"tag{k}", step * 0.001 + k, step, new_style=new_style)
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


def _peak_kb(pid: int) -> int:
    """A process's peak resident memory (``VmHWM``) in kB, 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rustboard(
    expected: int, series: int, last_step: int, checksum: bool, sample: list[str] | None = None
) -> Callable[[str], Any]:
    """A reader that starts RustBoard on the log dir and fetches every scalar over gRPC: it
    polls the cheap ``ListScalars`` until each of the ``series`` (run, tag) pairs has reached
    ``last_step``, then reads every point (again, should a run be only partly loaded). With
    ``sample`` (run names), the listing asked for is of those runs only, until they are all
    loaded (a listing of 100,000 runs takes seconds, and asking for it slows the loading);
    reading every point then checks the rest."""

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
                wanted = series
                if sample:
                    listing.run_tag_filter.runs.names.extend(sample)
                    wanted = series * len(sample) // max(len(sample), expected_runs(series))
                started = time.perf_counter()
                while True:  # until loading has reached every point
                    listed = stub.ListScalars(listing)
                    done = sum(
                        t.metadata.max_step == last_step for r in listed.runs for t in r.tags
                    )
                    if done < wanted:
                        limit = RUSTBOARD_TIMEOUT[0]
                        if limit is not None and time.perf_counter() - started > limit:
                            loaded = len(stub.ListRuns(pb.ListRunsRequest()).runs)
                            raise NotLoaded(
                                f"{loaded:,d} of {expected_runs(series):,d} runs loaded after"
                                f" {limit:g} s"
                            )
                        time.sleep(0.01)
                        continue
                    response = stub.ReadScalars(request)
                    got = sum(len(t.data.step) for r in response.runs for t in r.tags)
                    if got >= expected:
                        break
                    wanted = series  # the sample was loaded before the rest: list them all
                    listing = pb.ListScalarsRequest(plugin_filter=request.plugin_filter)
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
                RUSTBOARD_PEAK.append(_peak_kb(proc.pid))
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


def expected_runs(series: int) -> int:
    """The runs of a sweep of ``series`` (run, tag) pairs."""
    return series // len(TAGS3)


def tallyboard_ls(path: str) -> None:
    """``tallyboard ls`` as the command runs it, its table printed to ``/dev/null``."""
    from tallyboard.cli.read import cmd_ls

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        cmd_ls(path, False)


def bytes_only(path: str) -> int:
    """The floor under any reader of a local sweep: every run folder listed and every file's
    bytes read, nothing decoded, one process per core (the first share here, the others in
    processes forked now, as ``tallyboard.read`` and ``ls`` deal a wide tree); bytes read."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with os.scandir(path) as it:
        tops = [e.path for e in it if e.is_dir(follow_symlinks=False)]
    n = os.cpu_count() or 1
    if n == 1:
        return _read_folders(tops)
    shares = [tops[k::n] for k in range(n)]
    with ProcessPoolExecutor(n - 1, mp_context=multiprocessing.get_context("fork")) as pool:
        rest = [pool.submit(_read_folders, share) for share in shares[1:]]
        return _read_folders(shares[0]) + sum(f.result() for f in rest)


def _read_folders(folders: list[str]) -> int:
    """The bytes of every file under ``folders`` (each listed once, one read per file)."""
    total, todo = 0, list(folders)
    while todo:
        with os.scandir(todo.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    with open(entry.path, "rb") as f:
                        total += len(f.read())
    return total


def tallyboard_export_dataset(path: str) -> Any:
    """``tallyboard export --dataset`` into a fresh directory (removed afterwards)."""
    from tallyboard.cli.read import cmd_export_dataset

    out = tempfile.mkdtemp(prefix="pb-bench-dataset-")
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cmd_export_dataset(path, out, None, None)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return None


def read_and_write_parquet(path: str) -> Any:
    """``read`` as an arrow Table, then the same partitioned Parquet write: a folder per run
    and kind (``run=<run>/kind=scalar/``), a part file in each, by pyarrow's dataset writer."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as ds
    import tallyboard

    table = tallyboard.read(path, table="arrow", progress=False)
    kind = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(table.num_rows, np.int32)), pa.array(["scalar"])
    )
    out = tempfile.mkdtemp(prefix="pb-bench-parquet-")
    try:
        ds.write_dataset(
            table.append_column("kind", kind),
            out,
            format="parquet",
            partitioning=["run", "kind"],
            partitioning_flavor="hive",
            max_partitions=1 << 30,
            existing_data_behavior="overwrite_or_ignore",
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return table


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


def report(case: str, results: dict[str, list[float]], rows: dict[str, int], base: str) -> None:
    ref = statistics.median(results[base])
    for name, times in results.items():
        if not times:
            continue
        med = statistics.median(times)
        print(
            f"{case:9s} {name:34s} {rows.get(name, 0):>10,d} {len(times):>3d}"
            f" {statistics.mean(times):8.3f} {med:8.3f} {max(times):8.3f} {med / ref:8.2f}x",
            flush=True,
        )


def rounds(
    contenders: dict[str, Callable[[str], Any]], path: str, repeats: int, expected: int | None
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Each round runs every contender once, in turn; their times by name, and the rows each
    gave (checked against ``expected`` for tables). RustBoard takes part in the first
    ``--rustboard-repeats`` rounds only, when that is given."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    rows: dict[str, int] = {}
    for turn in range(repeats):
        for name, fn in contenders.items():
            limit = RUSTBOARD_REPEATS[0]
            if name.startswith("RustBoard") and limit is not None and turn >= limit:
                continue
            t0 = time.perf_counter()
            try:
                got = fn(path)
            except NotLoaded as exc:
                print(f"  ({name}: not done: {exc})", flush=True)
                continue
            times[name].append(time.perf_counter() - t0)
            if hasattr(got, "num_rows") or hasattr(got, "columns"):
                rows[name] = len(got)
                if expected is not None and rows[name] != expected:
                    raise AssertionError(f"{name} read {rows[name]} rows of {expected}")
            del got
        print(f"  (round: { ({n: round(t[-1], 3) for n, t in times.items() if t}) })", flush=True)
    return times, rows


class Growth:
    """1% of a tree's runs grown by 10 steps at a time, a different 1% each time."""

    def __init__(self, root: str, runs: int, steps: int, tags: tuple[str, ...]) -> None:
        self.root, self.runs, self.tags = root, runs, tags
        self.step, self.turn = steps, 0
        self.files = sorted(
            os.path.join(root, run, name)
            for run in os.listdir(root)
            for name in os.listdir(os.path.join(root, run))
        )

    def grow(self) -> int:
        """Append 10 steps to every hundredth run (shifted each turn); returns the scalars."""
        grown = self.files[self.turn % 100 :: 100]
        self.turn += 1
        per_run = sweep_records(len(grown), 10, self.tags, start_step=self.step)
        self.step += 10
        for path, data in zip(grown, per_run):
            with open(path, "ab") as fh:
                fh.write(data.tobytes())
        return len(grown) * 10 * len(self.tags)


def incremental(path: str, runs: int, steps: int, repeats: int, first: float) -> None:
    """A Reader polled once (everything), then after 1% of the runs grew (each round), and when
    nothing changed; the grown poll's time against ``first`` (the median full read)."""
    import tallyboard

    copy = path + "-incremental"
    shutil.copytree(path, copy)
    try:
        growth = Growth(copy, runs, steps, TAGS3)
        reader = tallyboard.Reader(copy)
        t0 = time.perf_counter()
        update = reader.poll()
        first_poll = time.perf_counter() - t0
        n = sum(len(b.scalars()[0]) for b in update.batches.values())
        del update
        grown, idle = [], []
        for _ in range(repeats):
            added = growth.grow()
            t0 = time.perf_counter()
            update = reader.poll()
            grown.append(time.perf_counter() - t0)
            got = sum(len(b.scalars()[0]) for b in update.batches.values())
            if got != added:
                raise AssertionError(f"the poll after growth read {got} scalars of {added}")
            t0 = time.perf_counter()
            if reader.poll():
                raise AssertionError("a poll with nothing new returned something")
            idle.append(time.perf_counter() - t0)
        med = statistics.median(grown)
        print(
            f"{'':9s} Reader first poll {first_poll:.3f} s ({n:,d} scalars); poll after 1% of"
            f" runs grew: mean {statistics.mean(grown):.4f}, median {med:.4f}, max"
            f" {max(grown):.4f} s ({added:,d} new scalars): {first / med:.1f}x faster than the"
            f" first read ({first:.3f} s); poll with nothing new: median"
            f" {statistics.median(idle):.4f}, max {max(idle):.4f} s",
            flush=True,
        )
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def peak_memory(case: str, path: str, ls: bool) -> None:
    """Peak memory of a read and of ls (one process, so every allocation is traced) against
    the table, and the peak resident memory of a fresh process reading (workers=1) beside
    RustBoard's server's."""
    import tallyboard

    with tempfile.TemporaryDirectory() as tiny:  # modules imported on first use are no read's
        write_tree(tiny, 1, 1)
        tallyboard.read(tiny, workers=1, progress=False)
        tallyboard_ls(tiny)
    tracemalloc.start()
    df = tallyboard.read(path, workers=1, progress=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    table = int(df.memory_usage(deep=True).sum())
    del df
    line = (
        f"{case:9s} peak traced memory (workers=1): read {peak / 1e6:.1f} MB for a"
        f" {table / 1e6:.1f} MB table: {peak / table:.2f}x"
    )
    if ls:
        tracemalloc.start()
        tallyboard_ls(path)
        _, ls_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        line += f"; ls {ls_peak / 1e6:.1f} MB: {ls_peak / table:.2f}x"
    print(line, flush=True)
    code = (
        "import sys, tallyboard, pandas, pyarrow\n"
        "if sys.argv[1] != '-': tallyboard.read(sys.argv[1], workers=1, progress=False)\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    )
    peaks = []
    for arg in ("-", path):
        got = subprocess.run(
            [sys.executable, "-c", code, arg], capture_output=True, text=True, check=True
        )
        peaks.append(int(got.stdout.split()[-1]))
    idle, rss = peaks
    rb = f"; RustBoard's server {max(RUSTBOARD_PEAK) / 1e3:.0f} MB" if RUSTBOARD_PEAK else ""
    print(
        f"{case:9s} peak resident memory (VmHWM) of a fresh process reading with workers=1:"
        f" {rss / 1e3:.0f} MB, of which the interpreter with its imports {idle / 1e3:.0f} MB"
        f"{rb}",
        flush=True,
    )


def run_case(case: str, repeats: int, slow_repeats: int, skip: set[str]) -> None:
    root = fresh_dir(f"sweep-{case}")
    RUSTBOARD_PEAK.clear()
    try:
        runs = steps = 0
        if case == "file-1m":
            expected, series, last = write_one_file(root, 1_000_000), 10, 99_999
        elif case == "file-tf2-1m":
            expected, series, last = write_one_file(root, 1_000_000, new_style=True), 10, 99_999
        elif case in ("runs-1k", "s3-1k"):
            runs, steps = 1000, 1000
        elif case == "runs-10k":
            runs, steps = 10_000, 100
        elif case == "runs-100k":
            runs, steps = 100_000, 10
        else:
            raise SystemExit(f"unknown case {case!r}")
        sample = None
        if runs:
            expected = write_tree(root, runs, steps)
            series, last = runs * len(TAGS3), steps - 1
            if runs > 10_000:  # every hundredth run, as the listing of all of them is slow
                sample = [f"run{i:06d}" for i in range(0, runs, 100)]
        path = root
        if case == "s3-1k":
            with MotoS3() as s3:
                url = s3.upload(root, "runs-1k")
                times, rows = rounds(
                    {
                        "tallyboard": read_tallyboard,
                        "s3fs fs.cat (bytes only)": s3.s3fs_fetch_all,
                    },
                    url,
                    repeats,
                    expected,
                )
            report(case, times, rows, "tallyboard")
            return
        contenders: dict[str, Callable[[str], Any]] = {
            "tallyboard": read_tallyboard,
            "tallyboard workers=1": read_tallyboard_one_core,
            "RustBoard gRPC": rustboard(expected, series, last, False, sample),
            "RustBoard gRPC --checksum": rustboard(expected, series, last, True, sample),
        }
        if sample:  # 100,000 runs take RustBoard long enough without its checksums
            del contenders["RustBoard gRPC --checksum"]
        if runs and "ls" not in skip:
            contenders["tallyboard ls"] = tallyboard_ls
        if runs and "bytes" not in skip:
            contenders["bytes only (list + read, no decode)"] = bytes_only
        if runs and "export" not in skip:
            contenders["tallyboard export --dataset"] = tallyboard_export_dataset
            contenders["read + the same Parquet write"] = read_and_write_parquet
        contenders = {n: f for n, f in contenders.items() if n.split()[0].lower() not in skip}
        times, rows = rounds(contenders, path, repeats, expected)
        for name, fn in (("EventAccumulator", read_event_accumulator), ("tbparse", read_tbparse)):
            if name.lower() not in skip:
                more_times, more_rows = rounds({name: fn}, path, slow_repeats, expected)
                times.update(more_times)
                rows.update(more_rows)
        report(case, times, rows, "tallyboard")
        if runs and "incremental" not in skip and "tallyboard" in times:
            incremental(path, runs, steps, repeats, statistics.median(times["tallyboard"]))
        if "tallyboard" not in skip:
            peak_memory(case, path, bool(runs) and "ls" not in skip)
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
        elif a == "--rustboard-repeats":
            RUSTBOARD_REPEATS[0] = int(args.pop(0))
        elif a == "--rustboard-timeout":
            RUSTBOARD_TIMEOUT[0] = float(args.pop(0))
        elif a == "--skip":
            skip.add(args.pop(0).lower())
        else:
            cases.append(a)
    warm = fresh_dir("sweep-warm-up")
    write_tree(warm, 2, 10)
    for name, fn in (
        ("tallyboard", read_tallyboard),
        ("eventaccumulator", read_event_accumulator),
        ("tbparse", read_tbparse),
        ("ls", tallyboard_ls),
        ("export", tallyboard_export_dataset),
        ("export", read_and_write_parquet),
    ):
        if name not in skip:
            fn(warm)  # imports and caches outside the timings
    shutil.rmtree(warm)
    print(
        f"\n## read sweeps into a DataFrame (seconds; {os.cpu_count()} cores)\n"
        f"{'case':9s} {'reader':34s} {'rows':>10s} {'n':>3s} {'mean':>8s} {'median':>8s}"
        f" {'max':>8s} {'vs tb':>9s}"
    )
    for case in cases or ["file-1m", "runs-1k", "runs-10k", "runs-100k", "s3-1k"]:
        run_case(case, repeats, slow_repeats, skip)


if __name__ == "__main__":
    main()
