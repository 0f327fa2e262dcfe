"""TensorBoard through ``tallyboard board`` against TensorBoard with RustBoard and its Python loader.

``python bench/bench_board.py [--runs N] [--steps N] [--repeats N] [--skip NAME ...]``
(NAME: ``sweep``, ``rustboard``, ``python``, ``tiny``, ``s3``; ``--s3-runs N`` and
``--tiny-runs N`` size the S3 and tiny trees).

On the same log dir (``--runs`` runs x ``--steps`` steps x 3 tags, one event file per run, as
``bench_read_sweep.py`` writes it; default 1,000 x 1,000: 3,000,000 scalars), each contender is
started as a user starts it and measured end to end:

- ``tallyboard board DIR`` (the provider and TensorBoard's frontend);
- ``tensorboard --logdir DIR --load_fast=true`` (RustBoard, the Rust data server);
- ``tensorboard --logdir DIR --load_fast=false`` (TensorBoard's Python loader).

Measured per contender, in headless Chromium and over HTTP:

- **first chart**: seconds from starting the command until the SCALARS dashboard, opened as soon
  as the server answers, has drawn a line (a page that says no dashboard is active is reloaded
  with TensorBoard's reload button every second, as an impatient user would); the page shows
  the first 10 runs (``regexInput``): drawing 1,000 lines of 1,000 points takes TensorBoard's
  frontend minutes on a 2-core machine whatever serves the data;
- **all runs**: seconds until TensorBoard lists every run;
- **chart of all**: then, seconds TensorBoard takes to answer the data of one chart of every run
  (``scalars_multirun`` of one tag over 1,000 runs: what that chart asks);
- **reload**: 1% more data (1% of the runs get a second event file as long as the first), then
  seconds until TensorBoard serves the new points of every grown run (reload intervals 1 s),
  asked every 50 ms in one request for all of them (``scalars_multirun``);
- **memory**: peak resident memory of the data layer (the ``tallyboard board`` process, which
  holds the provider; RustBoard's process; TensorBoard's process for the Python loader) and of
  the whole process tree (TensorBoard's frontend included), sampled every 0.2 s.

Then the tiny sweep (``--tiny-runs`` runs of one step x 3 tags each, default 2,000): each data
layer alone, started as TensorBoard starts it (RustBoard's binary as
``tensorboard.data.server_ingester`` runs it, on a port given to it; ``tallyboard serve``), and
asked ``ListRuns`` over gRPC as soon as its port accepts a connection (tried every 5 ms, the same
for both): the seconds from the start of the command until the first answer and until an answer
first lists every run (asked every 10 ms; tallyboard's first answer lists them all, RustBoard
answers with the runs read so far). Also timed: Python starting and importing what any Python
provider needs to answer (``python floor``: gRPC, TensorBoard's protos, NumPy).
Then, as a user waits: the seconds from starting ``tallyboard board`` or ``tensorboard
--load_fast=true`` until TensorBoard's ``/data/runs`` lists every run.

Then the S3 sweep: the same measures with the tree (``--s3-runs`` runs) in moto's S3 server on
127.0.0.1 (a fresh copy uploaded for each contender and round), for ``tallyboard board s3://...``
and TensorBoard's Python loader on the same URL (TensorBoard reads ``s3://`` through boto3 when
boto3 is installed, as here, without tensorflow-io; RustBoard reads no S3). Each contender runs
``--repeats`` times, in turn; reported: mean, median and max of each measure, and each
reference's median over tallyboard's. The host may be shared: compare within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_read_sweep import TAGS3, write_tree  # noqa: E402

CONTENDERS = ("tallyboard", "rustboard", "python")
#: on S3: RustBoard reads local disks and gs:// only; TensorBoard's Python loader reads s3://
#: through boto3 when it is installed (it is here), without tensorflow-io.
S3_CONTENDERS = ("tallyboard", "python")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(base: str, route: str, timeout: float = 30) -> Any:
    import json

    with urllib.request.urlopen(base + route, timeout=timeout) as resp:
        return json.loads(resp.read())


def command(name: str, logdir: str, port: int) -> list[str]:
    if name == "tallyboard":
        return [sys.executable, "-m", "tallyboard", "board", logdir, "--port", str(port)] + [
            "--reload",
            "1",
        ]
    tb = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--port", str(port)]
    tb += ["--host", "127.0.0.1", "--reload_interval", "1"]
    return tb + ["--load_fast=" + ("true" if name == "rustboard" else "false")]


class Memory:
    """Peak resident memory of a process and of its tree, sampled on a thread."""

    def __init__(self, pid: int, data_layer: str) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.data_layer = data_layer
        self.peak_data = self.peak_tree = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _data(self, procs: list[Any]) -> int:
        if self.data_layer == "rustboard":
            found = [p for p in procs if "data_server" in " ".join(p.cmdline())]
            return sum(p.memory_info().rss for p in found)
        return int(self.root.memory_info().rss)  # the board process, or TensorBoard itself

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.2):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                tree = sum(p.memory_info().rss for p in procs)
                data = self._data(procs)
            except psutil.Error:
                continue
            self.peak_tree = max(self.peak_tree, tree)
            self.peak_data = max(self.peak_data, data)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def started(cmd: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_http(base: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        try:
            get_json(base, "/data/environment", timeout=2)
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError("server did not answer")


def first_chart(page: Any, base: str, timeout: float, names: list[str]) -> bool:
    """Open SCALARS showing the first 10 runs and wait for a drawn line; reload when no
    dashboard is active yet. (TensorBoard's frontend takes minutes on a 2-core machine, whatever
    the data server, to draw 1,000 lines of 1,000 points: the data of a chart of every run is
    timed over HTTP instead, ``chart of all``.)"""
    shown = "^(" + "|".join(names[:10]) + ")$"
    page.goto(f"{base}/#scalars&regexInput={shown}", wait_until="commit")
    line = page.locator("tf-scalar-dashboard tf-scalar-card vz-line-chart2 svg path.line[d*='L']")
    inactive = page.get_by_text("No dashboards are active")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line.first.wait_for(state="attached", timeout=1000)
            return True
        except Exception:
            pass
        if inactive.count() and inactive.first.is_visible():
            with contextlib.suppress(Exception):
                page.locator("app-header-reload button").first.click(timeout=1000)
    return False


def chart_of_all(base: str, names: list[str]) -> float:
    """Seconds TensorBoard takes to answer the data of one SCALARS chart of every run."""
    import json

    runs = len(names)
    form = "tag=loss&" + "&".join(f"runs={name}" for name in names)
    req = urllib.request.Request(base + "/data/plugin/scalars/scalars_multirun", form.encode())
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=600) as resp:
        got = json.loads(resp.read())
    assert len(got) == runs, len(got)
    return time.monotonic() - t0


def runs_listed(base: str) -> int:
    try:
        return len(get_json(base, "/data/runs"))
    except OSError:
        return -1


def grow(logdir: str, names: list[str], steps: int, s3: Any = None) -> list[str]:
    """1% more data: 1% of the runs get a second file as long as the first. Each file is
    written aside and then moved in (renamed, or uploaded), so it appears whole at once."""
    from tallyboard import SummaryWriter

    grown = names[::100]
    aside = tempfile.mkdtemp(prefix="bench-board-grow-")
    try:
        for run in grown:
            with SummaryWriter(os.path.join(aside, run)) as w:
                for s in range(steps, 2 * steps):
                    for k, tag in enumerate(TAGS3):
                        w.add_scalar(tag, 1.0 / (s + 1) + k, s)
        for run in grown:
            for name in os.listdir(os.path.join(aside, run)):
                src = os.path.join(aside, run, name)
                if s3 is None:
                    os.rename(src, os.path.join(logdir, run, name))
                else:
                    s3.put(src, f"{logdir}/{run}/{name}")
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return grown


def served_steps(base: str, runs: list[str]) -> list[int]:
    """The last step of ``loss`` TensorBoard serves for each of ``runs`` (-1: none), asked in
    one request (``scalars_multirun``, what a chart of those runs asks), so the measure is
    not a series of round trips made one after the other."""
    import json

    form = "tag=loss&" + "&".join(f"runs={run}" for run in runs)
    req = urllib.request.Request(base + "/data/plugin/scalars/scalars_multirun", form.encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            got = json.loads(resp.read())
    except OSError:
        return [-1] * len(runs)
    return [int(got[run][-1][1]) if got.get(run) else -1 for run in runs]


def measure(
    name: str,
    tree: str,
    runs: int,
    steps: int,
    page: Any,
    cap: float,
    s3: Any = None,
) -> dict[str, float]:
    """One contender on a fresh copy of ``tree`` (on S3 when ``s3`` is the moto uploader)."""
    work = tempfile.mkdtemp(prefix=f"bench-board-{name}-")
    names = sorted(os.listdir(tree))
    if s3 is None:
        logdir = os.path.join(work, "logs")
        shutil.copytree(tree, logdir)
        env = None
    else:
        logdir, env = s3(tree, runs)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out: dict[str, float] = {}
    try:
        start = time.monotonic()
        with started(command(name, logdir, port), env) as proc:
            mem = Memory(proc.pid, name)
            try:
                wait_http(base, proc, 120)
                out["answer"] = time.monotonic() - start
                ok = first_chart(page, base, cap, names)
                out["first chart"] = time.monotonic() - start if ok else float("nan")
                deadline = start + cap
                while runs_listed(base) < runs and time.monotonic() < deadline:
                    time.sleep(0.1)
                n = runs_listed(base)
                out["all runs"] = time.monotonic() - start if n >= runs else float("nan")
                if n >= runs:
                    out["chart of all"] = chart_of_all(base, names)
                    grown = grow(logdir, names, steps, s3)
                    t0 = time.monotonic()
                    last = [2 * steps - 1] * len(grown)
                    while not (done := served_steps(base, grown) == last):
                        if time.monotonic() - t0 > cap:
                            break
                        time.sleep(0.05)
                    out["reload"] = time.monotonic() - t0 if done else float("nan")
                time.sleep(0.5)
            finally:
                mem.stop()
            out["peak MB (data)"] = mem.peak_data / 2**20
            out["peak MB (tree)"] = mem.peak_tree / 2**20
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


@contextlib.contextmanager
def moto_s3() -> Iterator[dict[str, str]]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "FSSPEC_S3_ENDPOINT_URL": url,
        "FSSPEC_S3_KEY": "testing",
        "FSSPEC_S3_SECRET": "testing",
    }
    try:
        yield env
    finally:
        server.stop()


class Uploader:
    """Copies of the tree on moto's S3, a fresh prefix each time."""

    def __init__(self, env: dict[str, str]) -> None:
        import boto3

        self.env = {**os.environ, **env}
        self.client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.client.create_bucket(Bucket="sweep")
        self.copies = 0

    def __call__(self, tree: str, runs: int) -> tuple[str, dict[str, str]]:
        self.copies += 1
        prefix = f"logs{self.copies}"
        for run in sorted(os.listdir(tree))[:runs]:
            for name in os.listdir(os.path.join(tree, run)):
                self.client.upload_file(
                    os.path.join(tree, run, name), "sweep", f"{prefix}/{run}/{name}"
                )
        return f"s3://sweep/{prefix}", self.env

    def put(self, path: str, url: str) -> None:
        """Upload the local file ``path`` to ``url`` (``s3://sweep/...``)."""
        self.client.upload_file(path, "sweep", url.removeprefix("s3://sweep/"))


def _listening(port: int, proc: subprocess.Popen[bytes], cap: float) -> None:
    """Return once 127.0.0.1:``port`` accepts a TCP connection (tried every 5 ms), the same
    for every server: a gRPC channel that finds no listener backs off for a second or more,
    which would time its reconnection, not the server."""
    start = time.monotonic()
    while time.monotonic() - start < cap:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.005)
    raise RuntimeError(f"nothing listened on port {port} in {cap:g} s")


def _list_runs_until(port: int, proc: subprocess.Popen[bytes], want: int, cap: float) -> Any:
    """``(time of the first answer, runs it listed, time of the first answer listing want)``
    of ``ListRuns`` asked at 127.0.0.1:``port`` as soon as it listens, then every 10 ms."""
    import grpc
    from tensorboard.data.proto import data_provider_pb2 as pb
    from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

    _listening(port, proc, cap)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.TensorBoardDataProviderStub(channel)
    first = None
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"exited with {proc.returncode}")
            try:
                n = len(stub.ListRuns(pb.ListRunsRequest(), wait_for_ready=True, timeout=cap).runs)
            except grpc.RpcError:
                time.sleep(0.01)
                continue
            now = time.monotonic()
            if first is None:
                first = (now, n)
            if n >= want:
                return first[0], first[1], now
            if now - first[0] > cap:
                return first[0], first[1], float("nan")
            time.sleep(0.01)
    finally:
        channel.close()


#: What a Python data provider imports before it can answer (timed alone: ``--tiny-runs``).
PROVIDER_IMPORTS = "import grpc, numpy; from tensorboard.data.proto import data_provider_pb2"


def _python_floor() -> float:
    """Seconds to start Python and import what any Python data provider needs to answer
    (gRPC, TensorBoard's protos, NumPy), then exit: the least a Python provider can take."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", PROVIDER_IMPORTS], check=True)
    return time.monotonic() - start


def _listed_in_tensorboard(name: str, tree: str, runs: int, cap: float) -> float:
    """Seconds from starting ``tallyboard board`` or ``tensorboard --load_fast=true`` on
    ``tree`` until TensorBoard's ``/data/runs`` lists all ``runs`` (what a user waits for)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    with started(command(name, tree, port)) as proc:
        wait_http(base, proc, cap)
        while runs_listed(base) < runs:
            if time.monotonic() - start > cap:
                return float("nan")
            time.sleep(0.02)
        return time.monotonic() - start


def tiny_sweep(runs: int, repeats: int, cap: float) -> None:
    """The tiny sweep of the module docstring."""
    from tensorboard_data_server import server_binary

    tree = tempfile.mkdtemp(prefix="bench-board-tiny-")
    try:
        write_tree(tree, runs, 1)
        print(
            f"\n## {runs:,} tiny runs (1 step x 3 tags each): ListRuns over gRPC; "
            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        rows: dict[str, dict[str, list[float]]] = {"tallyboard": {}, "rustboard": {}}
        for r in range(repeats):
            for name in ("tallyboard", "rustboard"):
                port = free_port()
                if name == "tallyboard":
                    cmd = [sys.executable, "-m", "tallyboard", "serve", tree, "--port", str(port)]
                else:  # as tensorboard.data.server_ingester starts it, on a port chosen here
                    cmd = [server_binary(), f"--logdir={tree}", "--reload=5", f"--port={port}"]
                    cmd += ["--die-after-stdin"]
                start = time.monotonic()
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                try:
                    first, listed, full = _list_runs_until(port, proc, runs, cap)
                finally:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                got = {
                    "first answer": first - start,
                    "runs in it": float(listed),
                    "all listed": full - start,
                    "all in TensorBoard": _listed_in_tensorboard(name, tree, runs, cap),
                }
                if name == "tallyboard":
                    got["python floor"] = _python_floor()
                print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in got.items()))
                for key, value in got.items():
                    rows[name].setdefault(key, []).append(value)
        for name, got in rows.items():
            report(f"{name} (tiny)", got)  # "runs in it" in runs, not seconds
        ratio = {
            key: statistics.median(rows["rustboard"][key])
            / statistics.median(rows["tallyboard"][key])
            for key in ("all listed", "all in TensorBoard")
        }
        print(
            f"  tallyboard's first ListRuns lists all {runs:,} in every round: "
            f"{all(n >= runs for n in rows['tallyboard']['runs in it'])}; medians RustBoard / "
            f"tallyboard: all listed {ratio['all listed']:.2f}x, all in TensorBoard "
            f"{ratio['all in TensorBoard']:.2f}x; Python starting and importing what a "
            f"provider needs (python floor) takes {statistics.median(rows['tallyboard']['python floor']):.3f} s, "
            f"load now {os.getloadavg()[0]:.1f}"
        )
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def report(title: str, rows: dict[str, list[float]]) -> None:
    print(f"\n### {title}")
    for key, values in rows.items():
        good = [v for v in values if v == v]
        if not good:
            print(f"  {key:16s} not reached")
            continue
        unit = "" if "MB" in key else " s"
        print(
            f"  {key:16s} mean {statistics.mean(good):8.2f}{unit}  median "
            f"{statistics.median(good):8.2f}{unit}  max {max(good):8.2f}{unit}"
            f"  ({len(good)} of {len(values)})"
        )


def s3_sweep(browser: Any, tree: str, runs: int, args: Any) -> None:
    """The same measures with the tree on moto's S3."""
    results: dict[str, dict[str, list[float]]] = {c: {} for c in S3_CONTENDERS}
    with moto_s3() as env:
        upload = Uploader(env)
        print(f"\n## S3 (moto on 127.0.0.1): {runs} runs; RustBoard cannot read s3://")
        for r in range(args.repeats):
            for name in S3_CONTENDERS:
                if name in args.skip:
                    continue
                if name == "python" and r >= (args.python_repeats or args.repeats):
                    continue
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                try:
                    got = measure(name, tree, runs, args.steps, page, args.cap, s3=upload)
                finally:
                    page.close()
                print(
                    f"round {r + 1} {name} on S3: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in got.items())
                )
                for key, value in got.items():
                    results[name].setdefault(key, []).append(value)
    for name in S3_CONTENDERS:
        if results[name]:
            report(f"{name} on S3", results[name])
    compare(results, ["python"])


def compare(results: dict[str, dict[str, list[float]]], references: list[str]) -> None:
    ours = results["tallyboard"]
    print("\n### medians of each reference over tallyboard's (>1: tallyboard faster/smaller)")
    for name in references:
        for key in ours:
            a = [v for v in ours.get(key, []) if v == v]
            b = [v for v in results[name].get(key, []) if v == v]
            if a and b:
                print(f"  {name:10s} {key:16s} {statistics.median(b) / statistics.median(a):6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs in the tree (default 1000)")
    parser.add_argument("--steps", type=int, default=1000, help="steps per run (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of each (default 3)")
    parser.add_argument(
        "--python-repeats",
        type=int,
        default=None,
        help="rounds of the Python loader, slow on big trees (default: --repeats)",
    )
    parser.add_argument("--s3-runs", type=int, default=1000, help="runs on S3 (default 1000)")
    parser.add_argument(
        "--tiny-runs", type=int, default=2000, help="runs of the tiny sweep (default 2000)"
    )
    parser.add_argument(
        "--cap", type=float, default=600.0, help="longest wait for one measure (default 600 s)"
    )
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="sweep (the 1,000-run sweep in Chromium), rustboard, python, tiny, s3 (default none)",
    )
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from browser_support import chromium

    if "tiny" not in args.skip:
        tiny_sweep(args.tiny_runs, args.repeats, args.cap)
    if "sweep" in args.skip:
        return
    tree = tempfile.mkdtemp(prefix="bench-board-tree-")
    t0 = time.monotonic()
    n = write_tree(tree, args.runs, args.steps)
    print(
        f"# tallyboard board vs TensorBoard: {args.runs} runs x {args.steps} steps x 3 tags "
        f"({n:,} scalars, one event file per run), written in {time.monotonic() - t0:.1f} s; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    results: dict[str, dict[str, list[float]]] = {c: {} for c in CONTENDERS}
    try:
        with chromium() as browser:
            for r in range(args.repeats):
                for name in CONTENDERS:
                    if name in args.skip:
                        continue
                    if name == "python" and r >= (args.python_repeats or args.repeats):
                        continue
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    try:
                        got = measure(name, tree, args.runs, args.steps, page, args.cap)
                    finally:
                        page.close()
                    print(
                        f"round {r + 1} {name}: "
                        + ", ".join(f"{k} {v:.2f}" for k, v in got.items())
                    )
                    for key, value in got.items():
                        results[name].setdefault(key, []).append(value)
            for name in CONTENDERS:
                if results[name]:
                    report(name, results[name])
            ours = results["tallyboard"]
            print(
                "\n### medians of each reference over tallyboard's (>1: tallyboard faster/smaller)"
            )
            for name in ("rustboard", "python"):
                for key in ours:
                    a = [v for v in ours.get(key, []) if v == v]
                    b = [v for v in results[name].get(key, []) if v == v]
                    if a and b:
                        ratio = statistics.median(b) / statistics.median(a)
                        print(f"  {name:10s} {key:16s} {ratio:6.2f}x")
            if "s3" not in args.skip:
                s3_sweep(browser, tree, min(args.s3_runs, args.runs), args)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
