"""What the ``tallyboard board`` tests share: runs in every format, a third-party reader plugin
installed as a distribution, and ``tallyboard board`` / ``tallyboard serve`` as subprocesses.

The runs (:func:`write_formats`), one per format, each holding what its format can hold:

- ``events/all``: event files from the SummaryWriter face, every kind (scalars, a histogram,
  an image, audio, text, a PR curve, a mesh, custom scalars, a graph, an embedding) plus an
  hparams trial ``events/all/trial``;
- ``mindspore/seed0``: a MindSpore summary file from the SummaryRecord face (scalar, image,
  histogram, tensor);
- ``csv/run``: a CSV file (scalars); ``jsonl/run``: a JSONL file (scalars, text, histogram,
  image, audio);
- ``tsv/run``: a format no built-in reader knows, read by :data:`TSV_PLUGIN` (a third-party
  reader plugin installed by :func:`install_tsv_plugin`, found through its entry point).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tb_server import TensorBoard, free_port, stop_process_group

#: The third-party plugin: ``*.scalars.tsv`` files of ``step<TAB>tag<TAB>value`` lines, read back as
#: scalars through a ChunkedFileReader (so it keeps offsets and reads only what is new).
TSV_PLUGIN = '''
"""A third-party reader plugin: tab-separated scalars (step, tag, value per line)."""
from tallyboard import hookimpl
from tallyboard.plugin.readers import ChunkedFileReader, ReaderSpec


class TsvReader(ChunkedFileReader):
    unit_end = b"\\n"

    def __init__(self, fs, path, decoders):
        super().__init__(fs, path)
        self.wall = 1_700_000_000.0

    def _scan(self, data, batch):
        end = data.rfind(b"\\n") + 1
        for line in data[:end].decode().splitlines():
            step, tag, value = line.split("\\t")
            batch.tags.append(tag)
            batch.steps.append(int(step))
            batch.wall_times.append(self.wall + int(step))
            batch.values.append(float(value))
        return end


@hookimpl
def register_readers(register):
    register(
        ReaderSpec(
            name="tsv",
            matches=lambda name: name.endswith(".scalars.tsv"),
            open=TsvReader,
            description="tab-separated scalars",
            priority=20,
        )
    )
'''

#: A reader plugin whose reads stall: ``*.stall`` files make the first pass hang (a disk or a
#: decode that takes minutes), after writing the path in ``$TALLYBOARD_STALL_MARK`` once it has
#: begun (so a test knows the load is under way).
STALL_PLUGIN = '''
"""A third-party reader plugin whose reads take 120 s."""
import os
import time

from tallyboard import hookimpl
from tallyboard.plugin.readers import ChunkedFileReader, ReaderSpec


class StallReader(ChunkedFileReader):
    def __init__(self, fs, path, decoders):
        super().__init__(fs, path)

    def _scan(self, data, batch):
        mark = os.environ.get("TALLYBOARD_STALL_MARK")
        if mark:
            with open(mark, "w") as f:
                f.write(self.path)
        time.sleep(120)
        return len(data)


@hookimpl
def register_readers(register):
    register(ReaderSpec(name="stall", matches=lambda name: name.endswith(".stall"),
                        open=StallReader, description="reads that stall", priority=20))
'''

RUNS = ["csv/run", "events/all", "events/all/trial", "jsonl/run", "mindspore/seed0", "tsv/run"]


def install_tsv_plugin(root: Path, name: str = "tsv", source: str = TSV_PLUGIN) -> Path:
    """Install :data:`TSV_PLUGIN` (or ``source``) as the distribution ``tallyboard-<name>``
    under ``root`` (a package plus its ``.dist-info`` with the entry point); put ``root`` on
    ``sys.path`` or ``PYTHONPATH`` to have it found like any installed plugin."""
    pkg = root / f"tallyboard_{name}"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(source)
    info = root / f"tallyboard_{name}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: tallyboard-{name}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(f"[tallyboard]\n{name} = tallyboard_{name}\n")
    return root


def env_with(plugin_root: Path) -> dict[str, str]:
    """This environment with ``plugin_root`` on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(plugin_root), env.get("PYTHONPATH")] if p)
    return env


def write_tsv(path: Path, rows: list[tuple[int, str, float]]) -> None:
    """Append ``(step, tag, value)`` lines to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.writelines(f"{s}\t{t}\t{v!r}\n" for s, t, v in rows)


def _image(step: int) -> Any:
    img = np.zeros((3, 16, 24), dtype=np.float32)
    img[0] = np.linspace(0, 1, 24)[None, :]
    img[1] = np.linspace(0, 1, 16)[:, None]
    img[2] = 0.3 * step
    return img


def write_events(root: Path) -> None:
    """``events/all`` (every kind) and its hparams trial, written by the SummaryWriter face."""
    import torch
    from tallyboard import SummaryWriter

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with SummaryWriter(root / "events/all") as w:
        for step in range(30):
            w.add_scalar("loss", math.exp(-step / 10), step)
        w.add_scalar("acc", 0.1, 0)  # one point: drawn as a dot
        for step in range(3):
            w.add_histogram("weights", rng.normal(step, 1.0, size=500), step)
            w.add_image("picture", _image(step), step)
        w.add_text("note", "Hello **board**", 0)
        t = np.arange(8000) / 8000
        w.add_audio("tone", 0.5 * np.sin(2 * np.pi * 440 * t)[None, :], 0, 8000)
        labels = rng.integers(0, 2, size=100)
        w.add_pr_curve("pr", labels, np.clip(labels * 0.4 + rng.random(100) * 0.6, 0, 1), 0)
        w.add_mesh(
            "tetra",
            vertices=np.array([[[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]]),
            colors=np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]]]),
            faces=np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]]),
            global_step=0,
        )
        w.add_custom_scalars({"Board": {"loss and acc": ["Multiline", ["loss", "acc"]]}})
        w.add_graph(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), torch.zeros(1, 4))
        w.add_embedding(
            rng.normal(size=(20, 4)).astype(np.float32), metadata=[f"p{i % 2}" for i in range(20)]
        )
        w.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"hp/score": 0.75}, run_name="trial")


def write_mindspore(root: Path) -> None:
    """``mindspore/seed0``: a MindSpore summary file from the SummaryRecord face."""
    from tallyboard import SummaryRecord

    with SummaryRecord(root / "mindspore/seed0") as record:
        for step in range(1, 11):
            record.add_value("scalar", "ms_loss", np.float32(1.0 / step))
            if step <= 3:
                record.add_value("image", "ms_image", _image(step)[None])
                record.add_value(
                    "histogram", "ms_weights", np.linspace(-1, 1, 40, dtype=np.float32) * step
                )
                record.add_value("tensor", "ms_tensor", np.arange(6, dtype=np.float32) * step)
            record.record(step)


def write_line_formats(root: Path) -> None:
    """``csv/run`` (scalars) and ``jsonl/run`` (scalars, text, histogram, image, audio)."""
    from tallyboard import SummaryWriter

    with SummaryWriter(root / "csv/run", sinks=["csv"]) as w:
        for step in range(20):
            w.add_scalar("csv_loss", 2.0 / (step + 1) + 0.1, step)
    rng = np.random.default_rng(1)
    with SummaryWriter(root / "jsonl/run", sinks=["jsonl"]) as w:
        for step in range(20):
            w.add_scalar("jsonl_loss", 1.5 / (step + 1), step)
        for step in range(2):
            w.add_image("jsonl_picture", _image(step + 1), step)
            w.add_histogram("jsonl_weights", rng.normal(0, 1 + step, size=300), step)
        w.add_text("jsonl_note", "from *jsonl*", 0)
        t = np.arange(4000) / 8000
        w.add_audio("jsonl_tone", 0.3 * np.sin(2 * np.pi * 220 * t)[None, :], 0, 8000)


def write_formats(root: Path) -> list[str]:
    """Every run of the module docstring under ``root``; returns the run names."""
    write_events(root)
    write_mindspore(root)
    write_line_formats(root)
    write_tsv(
        root / "tsv/run/metrics.scalars.tsv", [(s, "tsv_loss", 1.0 / (s + 2)) for s in range(15)]
    )
    return RUNS


def convert_to_events(src: Path, dst: Path, env: dict[str, str]) -> None:
    """``tallyboard convert SRC DST --to tfevents`` (the reference the board must equal)."""
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "convert", str(src), str(dst), "--to", "tfevents"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr


class Board:
    """A running ``tallyboard board``: the TensorBoard client, the process, what it printed."""

    def __init__(self, tb: TensorBoard, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.tb, self.proc, self.log = tb, proc, log

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def board(
    logdir: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    log: Path | None = None,
) -> Iterator[Board]:
    """``tallyboard board LOGDIR`` on a free port until TensorBoard lists runs; stopped with
    SIGINT (Ctrl-C) on exit. Its stderr goes to ``log`` (a temporary file by default, removed
    on exit)."""
    import tempfile

    port = free_port()
    own_log = log is None
    if log is None:
        log = Path(tempfile.mkstemp(prefix="board-", suffix=".log")[1])
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tallyboard", "board", logdir, "--port", str(port), *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
        )
    running = Board(TensorBoard(port), proc, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tallyboard board exited: {running.stderr()[-3000:]}")
            try:
                if running.tb.get_json("/data/runs"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"tallyboard board served no runs in {timeout} s")
            time.sleep(0.2)
        yield running
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                stop_process_group(proc, 10)
        if own_log:
            log.unlink(missing_ok=True)


def wait_until(predicate: Any, timeout: float, what: str, every: float = 0.1) -> Any:
    """``predicate()`` once it is truthy; ``TimeoutError`` naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout} s (last: {got!r})")
        time.sleep(every)


@contextlib.contextmanager
def provider_stub(root: Path, **options: Any) -> Iterator[Any]:
    """``tallyboard.board.serve`` over ``root`` in this process (no reload unless ``options``
    say), first load done, as a gRPC stub of TensorBoard's data-provider service."""
    import grpc
    from tallyboard.board import serve
    from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

    with serve(str(root), **{"reload": 0, **options}) as server:
        assert server.wait_loaded(60)
        channel = grpc.insecure_channel(server.address)
        try:
            yield pb_grpc.TensorBoardDataProviderStub(channel)
        finally:
            channel.close()
