"""tallyboard's data provider against RustBoard, TensorBoard's own: the same answers.

The same log dir (written here by TensorBoard's own ``EventFileWriter``, torch.utils.tensorboard's
SummaryWriter, tensorboardX and tallyboard's SummaryWriter and torch.monitor faces, plus the
TF-written fixtures of ``tests/fixtures/world``) is served by RustBoard (the ``tensorboard_data_server`` binary of the ``tensorboard-data-server``
package, started as ``tensorboard.data.server_ingester`` starts it, on 127.0.0.1) and by
``tallyboard.board.serve``. Every RPC of TensorBoard's data-provider service is asked of both
with the same requests (no filter, run and tag filters, several downsamplings, bad requests)
and the answers are compared field by field: run names and start times, plugin names, each
series' metadata (plugin name and content, display name, description, data class), max step,
max wall time and max length, every point's step, wall time and value (tensors decoded as the
frontend decodes them: dtype, shape and values; blobs read back through ``ReadBlob``, byte for
byte), and the status codes of malformed requests.

Where tallyboard deliberately follows TensorBoard's Python loader instead of RustBoard, the
difference is listed in docs/board.md ("Where it differs from RustBoard") and encoded here in
:data:`EXCEPTIONS`, one by one: each rewrites RustBoard's answer where it applies into what
TensorBoard's Python loader makes of the same file (read here with its own
``EventFileLoader`` and ``data_compat``), and tallyboard's answer must then equal it exactly;
nothing is ignored.

Each log dir is written once per module and each server started once per module.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc
from tensorboard.util import tensor_util

FIXTURES = Path(__file__).parent / "fixtures" / "world"
#: RustBoard's series are kept whole below these counts (its defaults, which are tallyboard's):
#: each series written here stays under them, so no downsampling at load differs.
SCALARS, TENSORS, BLOBS = 1000, 100, 10
#: The plugins holding data in the log dir, each asked of every list and read RPC.
PLUGINS = [
    "audio",
    "custom_scalars",
    "graphs",
    "histograms",
    "hparams",
    "images",
    "mesh",
    "pr_curves",
    "scalars",
    "text",
]
#: Read downsamplings asked: everything, fewer points than most series hold, one, none.
DOWNSAMPLES = [10_000, 200, 13, 3, 1, 0]

#: Value fields of an event file that TensorBoard's loaders migrate (``data_compat``).
LEGACY = ("simple_value", "histo", "image", "audio")


# -- the log dir ------------------------------------------------------------------------------


def _image(step: int, h: int = 6, w: int = 8) -> np.ndarray:
    img = np.zeros((3, h, w), np.float32)
    img[0] = np.linspace(0, 1, w)[None, :]
    img[1] = np.linspace(0, 1, h)[:, None]
    img[2] = 0.25 * step
    return img


def _write_common(w: Any, rng: np.random.Generator, *, audio: bool = True) -> None:
    """What the torch-like writers (torch, tensorboardX, tallyboard's face) share."""
    for step in range(20):
        w.add_scalar("loss", math.exp(-step / 7), step)
    for step in range(600):  # read downsampled: RustBoard's seeded sample, each algorithm
        w.add_scalar("long", step * 0.5, step)
    for step, v in enumerate([math.nan, math.inf, -math.inf, 1e39, -0.0, 3.5e-45]):
        w.add_scalar("odd", v, step)  # NaN, infinities, float32 overflow and subnormal
    w.add_scalar("late_step", 1.0, 2**63 - 1)
    w.add_scalar("ünï/cödé ✓", 0.5, 0)
    w.add_scalars("pair", {"a": 1.0, "b": 2.0}, 0)  # runs of their own
    for step in range(3):
        w.add_histogram("weights", rng.normal(step, 1.0, size=200), step)
        w.add_image("picture", _image(step), step)
    w.add_images("batch", np.stack([_image(0), _image(1), _image(2)]), 0)
    w.add_text("note", "Hello **board**", 0)
    labels = rng.integers(0, 2, size=50)
    w.add_pr_curve("pr", labels, np.clip(labels * 0.4 + rng.random(50) * 0.6, 0, 1), 0)
    if audio:
        t = np.arange(800) / 8000
        w.add_audio("tone", (0.5 * np.sin(2 * np.pi * 440 * t))[None, :], 0, 8000)
    w.add_custom_scalars({"Board": {"loss": ["Multiline", ["loss"]]}})


def _write_torch(root: Path) -> None:
    import torch
    from torch.utils.tensorboard import SummaryWriter

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    with SummaryWriter(str(root / "torch")) as w:
        _write_common(w, rng)
        w.add_scalar("tensor_style", 0.25, 0, new_style=True)
        w.add_scalar("double", 0.1, 0, new_style=True, double_precision=True)
        w.add_mesh(
            "tetra",
            vertices=torch.tensor([[[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]]),
            colors=torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]]]),
            faces=torch.tensor([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]]),
            global_step=0,
        )
        w.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hp/score": 0.75}, run_name="trial")
    with SummaryWriter(str(root / "rün ✓ 2")) as w:  # a unicode run name
        w.add_scalar("loss", 1.0, 0)
    with SummaryWriter(str(root / "torch_quiet")) as w:  # a file, no value
        w.flush()
    with SummaryWriter(str(root / "torch_restart"), filename_suffix=".a") as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    time.sleep(0.01)
    with SummaryWriter(str(root / "torch_restart"), filename_suffix=".b") as w:
        for step in range(5, 12):  # resumed from step 5: the points from 5 on are replaced
            w.add_scalar("loss", 100.0 + step, step)


def _png(seed: int) -> bytes:
    """An 8x6 RGB PNG of noise (any valid PNG: the bytes must come back as written)."""
    import struct
    import zlib

    pixels = np.random.default_rng(seed).integers(0, 255, size=(6, 8 * 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    head = struct.pack(">IIBBBBB", 8, 6, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _write_tensorboard(root: Path) -> None:
    """TensorBoard's own writer (``EventFileWriter``) with TensorBoard's own summaries, as
    ``tf.summary`` writes them: a description on a scalar, a text table, several images in
    one value with a display name, a float64 histogram, a PR curve's display name, hparams'
    ``group_name`` and ``start_time_secs``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb
    from tensorboard.plugins.hparams import metadata as hp_metadata
    from tensorboard.plugins.hparams import plugin_data_pb2 as hp_pb
    from tensorboard.plugins.image import metadata as image_metadata
    from tensorboard.plugins.pr_curve import metadata as pr_metadata
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb
    from tensorboard.plugins.text.summary_v2 import text_pb
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def value(tag: str, metadata: Any, data: Any) -> Any:
        summary = summary_pb2.Summary()
        summary.value.add(tag=tag, metadata=metadata).tensor.CopyFrom(
            tensor_util.make_tensor_proto(data)
        )
        return summary

    w = EventFileWriter(str(root / "tb"))
    for step in range(3):
        at = 1_700_000_000.0 + step
        for summary in [
            scalar_pb("cos", math.cos(step), description="cosine ✓"),
            text_pb("table", np.array([["a", f"b{step}"], ["c", "d"]])),
            histogram_pb("h64", np.arange(10.0) * (step + 1), buckets=4),
            value(
                "pics",
                image_metadata.create_summary_metadata("tb img", "three pictures"),
                np.array([b"8", b"6", _png(step), _png(step + 10), _png(step + 20)], object),
            ),
            value(
                "pr",
                pr_metadata.create_summary_metadata("pr shown", "a curve", num_thresholds=3),
                np.array(
                    [[3, 2, 1], [2, 1, 0], [0, 1, 2], [0, 1, 2], [0.6, 0.66, 1], [1, 0.66, 0.33]]
                ).astype(np.float32),
            ),
        ]:
            w.add_event(event_pb2.Event(wall_time=at, step=step, summary=summary))
    info = hp_pb.SessionStartInfo(group_name="group 1", start_time_secs=1_700_000_000.0)
    info.hparams["lr"].number_value = 0.1
    meta = hp_metadata.create_summary_metadata(hp_pb.HParamsPluginData(session_start_info=info))
    w.add_event(
        event_pb2.Event(
            wall_time=1_700_000_000.0,
            summary=value(hp_metadata.SESSION_START_INFO_TAG, meta, np.array(b"")),
        )
    )
    w.close()


def _write_tensorboardx(root: Path) -> None:
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(1)
    with SummaryWriter(str(root / "tbx")) as w:
        _write_common(w, rng, audio=False)  # tensorboardX's audio needs soundfile
        w.add_hparams({"lr": 0.2}, {"hp/score": 0.5}, name="trial")


def _write_tallyboard(root: Path) -> None:
    """tallyboard's faces: the SummaryWriter face, and the torch.monitor face through it."""
    from datetime import datetime, timedelta

    from tallyboard import (
        Aggregation,
        Event,
        Stat,
        SummaryWriter,
        TensorboardEventHandler,
        log_event,
        register_event_handler,
        unregister_event_handler,
    )

    rng = np.random.default_rng(2)
    with SummaryWriter(root / "tally") as w:
        _write_common(w, rng)
        w.add_hparams({"lr": 0.3, "opt": "adam"}, {"hp/score": 0.25}, run_name="trial")
    with SummaryWriter(root / "tally_monitor") as w:
        handler = register_event_handler(TensorboardEventHandler(w))
        try:
            with Stat("step_time", [Aggregation.MEAN, Aggregation.MAX], timedelta(hours=1)) as st:
                for v in (0.5, 0.25, 1.0):
                    st.add(v)
            log_event(Event("epoch", datetime.now(), {"loss": 0.5, "acc": 0.75}))
        finally:
            unregister_event_handler(handler)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("differential") / "logs"
    shutil.copytree(FIXTURES, root / "world")
    _write_torch(root)
    _write_tensorboard(root)
    _write_tensorboardx(root)
    _write_tallyboard(root)
    return root


# -- the servers --------------------------------------------------------------------------------


def _rustboard(logdir: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """RustBoard on ``logdir`` (one load), as ``tensorboard.data.server_ingester`` starts it
    (``--port-file``, ``--die-after-stdin``), on 127.0.0.1; returns once its load is done."""
    from tensorboard_data_server import server_binary

    port_file, log = tmp / "rustboard.port", tmp / "rustboard.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [server_binary(), f"--logdir={logdir}", "--reload=once", "--host=127.0.0.1"]
            + ["--port=0", f"--port-file={port_file}", "--die-after-stdin", "--verbose"],
            stdin=subprocess.PIPE,
            stderr=err,
        )
    deadline = time.monotonic() + 60
    while "Finished load cycle" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"RustBoard did not load {logdir}: {log.read_text()[-2000:]}")
        time.sleep(0.02)
    return proc, f"127.0.0.1:{int(port_file.read_text())}"


@pytest.fixture(scope="module")
def stubs(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """``(RustBoard's stub, tallyboard's stub)`` on the same log dir."""
    from tallyboard.board import serve

    proc, address = _rustboard(logdir, tmp_path_factory.mktemp("rustboard"))
    server = serve(str(logdir), reload=0)
    try:
        assert server.wait_loaded(120), server.loader.problems
        rust = grpc.insecure_channel(address)
        tally = grpc.insecure_channel(server.address)
        yield pb_grpc.TensorBoardDataProviderStub(rust), pb_grpc.TensorBoardDataProviderStub(tally)
        rust.close()
        tally.close()
    finally:
        server.stop()
        proc.stdin.close()  # --die-after-stdin
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- answers as plain values -------------------------------------------------------------------


def _metadata(m: Any) -> dict[str, Any]:
    return {
        "plugin_name": m.plugin_data.plugin_name,
        "plugin_content": bytes(m.plugin_data.content),
        "display_name": m.display_name,
        "summary_description": m.summary_description,
        "data_class": int(m.data_class),
    }


def _listed(res: Any, blobs: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for run in res.runs:
        for t in run.tags:
            entry = {
                "max_step": t.metadata.max_step,
                "max_wall_time": t.metadata.max_wall_time,
                **_metadata(t.metadata.summary_metadata),
            }
            if blobs:
                entry["max_length"] = t.metadata.max_length
            out[f"{run.run_name} | {t.tag_name}"] = entry
    return out


def _float(v: float) -> Any:
    """A float compared exactly, NaN equal to NaN, -0.0 unequal to 0.0."""
    return ("nan",) if math.isnan(v) else (v, math.copysign(1.0, v))


def _tensor(t: Any) -> dict[str, Any]:
    """A TensorProto as the frontend reads it (``tensor_util.make_ndarray``)."""
    a = tensor_util.make_ndarray(t)
    values = a.tolist() if a.dtype == object else a.tobytes()
    return {"dtype": int(t.dtype), "shape": list(a.shape), "values": values}


def _read(res: Any, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for run in res.runs:
        for t in run.tags:
            d = t.data
            if kind == "scalars":
                values = [_float(v) for v in d.value]
            elif kind == "tensors":
                values = [_tensor(v) for v in d.value]
            else:
                values = [[r.blob_key for r in seq.blob_refs] for seq in d.values]
            out[f"{run.run_name} | {t.tag_name}"] = {
                "step": list(d.step),
                "wall_time": list(d.wall_time),
                "value": values,
            }
    return out


@functools.cache
def _blob(stub: Any, key: str) -> bytes:
    """The blob ``key`` names, read once per server (a key names the same blob while served)."""
    return b"".join(r.data for r in stub.ReadBlob(pb.ReadBlobRequest(blob_key=key)))


def _blobs(stub: Any, read: dict[str, Any]) -> dict[str, Any]:
    """Blob keys replaced by the blobs they name (keys differ by design: opaque strings)."""
    for series in read.values():
        series["value"] = [[_blob(stub, k) for k in seq] for seq in series["value"]]
    return read


def _differences(rust: Any, tally: Any, path: str = "") -> list[str]:
    """Every field where the two answers differ, as ``path: expected | tallyboard's`` (the
    expected answer is RustBoard's, with the :data:`EXCEPTIONS` applied)."""
    out: list[str] = []
    if isinstance(rust, dict) and isinstance(tally, dict):
        for key in sorted(set(rust) | set(tally), key=str):
            where = f"{path}/{key}"
            if key not in tally:
                out.append(f"{where}: only RustBoard serves it")
            elif key not in rust:
                out.append(f"{where}: only tallyboard serves it")
            else:
                out.extend(_differences(rust[key], tally[key], where))
    elif isinstance(rust, list) and isinstance(tally, list) and len(rust) == len(tally):
        for i, (a, b) in enumerate(zip(rust, tally)):
            out.extend(_differences(a, b, f"{path}[{i}]"))
    elif rust != tally:
        out.append(f"{path}: {_short(rust)} | {_short(tally)}")
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 160 else text[:160] + f"... ({len(text)} chars)"


def _same(rust: Any, tally: Any, what: str) -> None:
    diffs = _differences(rust, tally)
    assert not diffs, (
        f"{what}: {len(diffs)} field(s) differ (RustBoard, with the EXCEPTIONS | tallyboard):\n"
        + ("\n".join(diffs[:40]))
    )


def _all_same(pairs: Iterator[tuple[str, Any, Any]]) -> None:
    """:func:`_same` over every ``(what, RustBoard's, tallyboard's)``, failing once with all
    the requests that differ (a few fields of each)."""
    failed = []
    for what, rust, tally in pairs:
        diffs = _differences(rust, tally)
        if diffs:
            failed.append(
                f"{what}: {len(diffs)} field(s) differ (RustBoard, with the EXCEPTIONS | tallyboard):"
            )
            failed.extend("  " + d for d in diffs[:12])
    assert not failed, "\n".join(failed)


def _both(stubs: tuple[Any, Any], call: str, req: Any) -> tuple[Any, Any]:
    rust, tally = stubs
    return getattr(rust, call)(req), getattr(tally, call)(req)


def _plugins(stubs: tuple[Any, Any]) -> list[str]:
    return sorted(p.name for p in stubs[0].ListPlugins(pb.ListPluginsRequest()).plugins)


# -- the deliberate differences ---------------------------------------------------------------


class FileView:
    """What the event files hold, read by TensorBoard's own reader (no migration): per ``(run, tag)`` the
    values in file order, as ``(step, wall_time, Summary.Value)`` (the tag's first metadata
    given to every value, as the loaders do)."""

    def __init__(self, logdir: Path) -> None:
        from tensorboard.backend.event_processing import event_file_loader

        self.values: dict[tuple[str, str], list[tuple[int, float, Any]]] = {}
        for path in sorted(logdir.rglob("*tfevents*")):
            run = str(path.parent.relative_to(logdir))
            first: dict[str, Any] = {}
            for event in event_file_loader.LegacyEventFileLoader(str(path)).Load():
                for value in event.summary.value:
                    if value.HasField("metadata"):
                        first.setdefault(value.tag, value.metadata)
                    elif value.tag in first:
                        value.metadata.CopyFrom(first[value.tag])
                    got = self.values.setdefault((run, value.tag), [])
                    got.append((event.step, event.wall_time, value))

    def legacy(self, key: str) -> str | None:
        """The legacy field (:data:`LEGACY`) the series ``run | tag`` is written in, if any."""
        got = self.values.get(tuple(key.split(" | ", 1)))  # type: ignore[arg-type]
        field = got[0][2].WhichOneof("value") if got else None
        return field if field in LEGACY else None

    def double_scalars(self) -> list[tuple[str, str]]:
        """Scalar series written as float64 tensors (``add_scalar(double_precision=True)``)."""
        return [
            key
            for key, got in self.values.items()
            if got[0][2].WhichOneof("value") == "tensor"
            and got[0][2].metadata.plugin_data.plugin_name == "scalars"
            and got[0][2].tensor.dtype == 2  # DT_DOUBLE
        ]


def _wanted(req: Any, run: str, tag: str) -> bool:
    if not req.HasField("run_tag_filter"):
        return True
    f = req.run_tag_filter
    return (not f.HasField("runs") or run in f.runs.names) and (
        not f.HasField("tags") or tag in f.tags.names
    )


def _legacy_display_name(view: FileView, call: str, req: Any, answer: dict[str, Any]) -> None:
    """A value in a legacy field gets ``display_name`` = its tag (or the one it has) from
    ``data_compat``, which TensorBoard's Python loaders apply; RustBoard leaves it empty."""
    if call.startswith("List"):
        for key, entry in answer.items():
            if view.legacy(key) and not entry["display_name"]:
                entry["display_name"] = key.split(" | ", 1)[1]


def _legacy_audio_content(view: FileView, call: str, req: Any, answer: dict[str, Any]) -> None:
    """Legacy audio: ``data_compat`` writes its metadata with ``encoding: WAV`` beside
    ``converted_to_tensor``; RustBoard writes ``converted_to_tensor`` only."""
    from tensorboard.plugins.audio import metadata

    wav = metadata.create_summary_metadata(
        "", "", encoding=metadata.Encoding.Value("WAV"), converted_to_tensor=True
    )
    if call.startswith("List"):
        for key, entry in answer.items():
            if view.legacy(key) == "audio":
                entry["plugin_content"] = bytes(wav.plugin_data.content)


def _legacy_histograms(view: FileView, call: str, req: Any, answer: dict[str, Any]) -> None:
    """Legacy histograms: ``data_compat`` makes float32 ``[left, right, count]`` rows of the
    buckets between the first and last non-empty ones; RustBoard makes float64 rows of every
    bucket. The values are TensorBoard's Python loader's, computed here from the file."""
    from tensorboard import data_compat

    if call != "ReadTensors":
        return
    for key, series in answer.items():
        if view.legacy(key) != "histo":
            continue
        by_step = {s: v for s, _, v in view.values[tuple(key.split(" | ", 1))]}  # type: ignore[index]
        series["value"] = [
            _tensor(data_compat.migrate_value(by_step[step]).tensor) for step in series["step"]
        ]


def _double_scalars(view: FileView, call: str, req: Any, answer: dict[str, Any]) -> None:
    """Scalars written as float64 tensors: RustBoard serves none of them; TensorBoard's
    Python loader serves them (as float64 in its own process; the data-provider protocol's
    ``ScalarData.value`` carries float32)."""
    from tallyboard.board.sampling import downsample

    if req.plugin_filter.plugin_name != "scalars" or call not in ("ListScalars", "ReadScalars"):
        return
    for run, tag in view.double_scalars():
        if not _wanted(req, run, tag):
            continue
        points = view.values[(run, tag)]
        first = points[0][2].metadata
        if call == "ListScalars":
            answer[f"{run} | {tag}"] = {
                "max_step": max(p[0] for p in points),
                "max_wall_time": max(p[1] for p in points),
                **_metadata(first),
                "data_class": 1,  # dataclass_compat: a scalar
            }
        else:
            picked = np.arange(len(points))[downsample(len(points), req.downsample.num_points)]
            kept = [points[i] for i in picked.tolist()]
            answer[f"{run} | {tag}"] = {
                "step": [p[0] for p in kept],
                "wall_time": [p[1] for p in kept],
                # ScalarData.value is a float field: the protocol carries float32
                "value": [
                    _float(float(np.float32(tensor_util.make_ndarray(p[2].tensor)))) for p in kept
                ],
            }


#: The deliberate differences (docs/board.md, "Where it differs from RustBoard"), each a
#: function that turns RustBoard's answer into TensorBoard's Python loader's where it applies.
EXCEPTIONS = [_legacy_display_name, _legacy_audio_content, _legacy_histograms, _double_scalars]


@pytest.fixture(scope="module")
def view(logdir: Path) -> FileView:
    return FileView(logdir)


def _expected(view: FileView, call: str, req: Any, rust: dict[str, Any]) -> dict[str, Any]:
    """RustBoard's answer with :data:`EXCEPTIONS` applied: what tallyboard must answer."""
    for exception in EXCEPTIONS:
        exception(view, call, req, rust)
    return rust


# -- the RPCs -----------------------------------------------------------------------------------


def test_the_experiment_is_the_log_dir(stubs: tuple[Any, Any], logdir: Path) -> None:
    rust, tally = _both(stubs, "GetExperiment", pb.GetExperimentRequest())
    assert tally == rust
    assert tally.data_location == str(logdir)


def test_the_same_plugins_are_listed(stubs: tuple[Any, Any]) -> None:
    rust, tally = _both(stubs, "ListPlugins", pb.ListPluginsRequest())
    _same(sorted(p.name for p in rust.plugins), sorted(p.name for p in tally.plugins), "plugins")
    assert set(PLUGINS) <= set(_plugins(stubs))  # every one the RPC tests ask about


def test_the_same_runs_are_listed_with_the_same_start_times_in_the_same_order(
    stubs: tuple[Any, Any],
) -> None:
    rust, tally = _both(stubs, "ListRuns", pb.ListRunsRequest())
    _same(
        {r.name: r.start_time for r in rust.runs},
        {r.name: r.start_time for r in tally.runs},
        "runs",
    )
    # equal start times may come in either order; the order of distinct ones is the same
    assert sorted((r.start_time, r.name) for r in tally.runs) == sorted(
        (r.start_time, r.name) for r in rust.runs
    )
    names = {r.name for r in tally.runs}
    assert {"torch_quiet", "torch/pair_a", "world/tf2", "tally/trial", "tb", "rün ✓ 2"} <= names
    assert "tally_monitor" in names


LISTS = [
    ("ListScalars", pb.ListScalarsRequest, False),
    ("ListTensors", pb.ListTensorsRequest, False),
    ("ListBlobSequences", pb.ListBlobSequencesRequest, True),
]
READS = [
    ("ReadScalars", pb.ReadScalarsRequest, "scalars"),
    ("ReadTensors", pb.ReadTensorsRequest, "tensors"),
    ("ReadBlobSequences", pb.ReadBlobSequencesRequest, "blobs"),
]


def _filters(stubs: tuple[Any, Any]) -> list[tuple[str, pb.RunTagFilter | None]]:
    """No filter; runs only; tags only; both (with a name that does not exist); empty ones."""
    return [
        ("none", None),
        ("runs", pb.RunTagFilter(runs=pb.RunFilter(names=["torch", "tb", "world/tf2", "nope"]))),
        ("tags", pb.RunTagFilter(tags=pb.TagFilter(names=["loss", "pics", "table", "x"]))),
        (
            "both",
            pb.RunTagFilter(
                runs=pb.RunFilter(names=["tbx", "tally", "world/torch"]),
                tags=pb.TagFilter(names=["weights", "batch", "pr", "note/text_summary"]),
            ),
        ),
        ("empty runs", pb.RunTagFilter(runs=pb.RunFilter(names=[]))),
        ("empty tags", pb.RunTagFilter(tags=pb.TagFilter(names=[]))),
    ]


def _request(make: Any, plugin: str, rtf: pb.RunTagFilter | None, **fields: Any) -> Any:
    req = make(plugin_filter=pb.PluginFilter(plugin_name=plugin), **fields)
    if rtf is not None:
        req.run_tag_filter.CopyFrom(rtf)
    return req


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("call, make, blobs", LISTS, ids=[c for c, *_ in LISTS])
def test_every_list_rpc_gives_the_same_series_and_metadata(
    stubs: tuple[Any, Any], view: FileView, call: str, make: Any, blobs: bool, plugin: str
) -> None:
    def pairs() -> Iterator[tuple[str, Any, Any]]:
        for name, rtf in _filters(stubs):
            req = _request(make, plugin, rtf)
            rust, tally = _both(stubs, call, req)
            expected = _expected(view, call, req, _listed(rust, blobs))
            yield f"{call} {plugin}, filter {name}", expected, _listed(tally, blobs)

    _all_same(pairs())


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("call, make, kind", READS, ids=[c for c, *_ in READS])
def test_every_read_rpc_gives_the_same_points(
    stubs: tuple[Any, Any], view: FileView, call: str, make: Any, kind: str, plugin: str
) -> None:
    def pairs() -> Iterator[tuple[str, Any, Any]]:
        for name, rtf in _filters(stubs):
            for n in DOWNSAMPLES if name == "none" else DOWNSAMPLES[:2]:
                req = _request(make, plugin, rtf, downsample=pb.Downsample(num_points=n))
                rust, tally = _both(stubs, call, req)
                got_rust, got_tally = _read(rust, kind), _read(tally, kind)
                if kind == "blobs":
                    got_rust = _blobs(stubs[0], got_rust)
                    got_tally = _blobs(stubs[1], got_tally)
                expected = _expected(view, call, req, got_rust)
                yield f"{call} {plugin}, filter {name}, {n} points", expected, got_tally

    _all_same(pairs())


def _status(stub: Any, call: str, req: Any) -> grpc.StatusCode:
    try:
        res = getattr(stub, call)(req)
        if call == "ReadBlob":
            list(res)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


BAD = [
    ("ListScalars", pb.ListScalarsRequest()),  # no plugin name
    ("ReadScalars", pb.ReadScalarsRequest(downsample=pb.Downsample(num_points=5))),
    ("ReadTensors", pb.ReadTensorsRequest(plugin_filter=pb.PluginFilter(plugin_name="text"))),
    (
        "ReadBlobSequences",
        pb.ReadBlobSequencesRequest(
            plugin_filter=pb.PluginFilter(plugin_name="images"),
            downsample=pb.Downsample(num_points=-1),
        ),
    ),
    ("ReadBlob", pb.ReadBlobRequest(blob_key="")),
    ("ReadBlob", pb.ReadBlobRequest(blob_key="not a key")),
    ("ReadBlob", pb.ReadBlobRequest(blob_key="W3RydWVd")),  # [true]
    ("ReadBlob", pb.ReadBlobRequest(blob_key="W" * 3_000_000)),
]


@pytest.mark.parametrize("call, req", BAD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(BAD)])
def test_malformed_requests_get_the_same_status(
    stubs: tuple[Any, Any], call: str, req: Any
) -> None:
    rust, tally = (_status(stub, call, req) for stub in stubs)
    assert tally == rust, (call, rust, tally)
    assert tally != grpc.StatusCode.OK


def test_the_rustboard_binary_is_tensorboards(stubs: tuple[Any, Any]) -> None:
    # the reference is the provider TensorBoard starts for --load_fast: the same binary
    import tensorboard_data_server
    from tensorboard.data import server_ingester

    assert os.path.exists(tensorboard_data_server.server_binary())
    assert hasattr(server_ingester, "SubprocessServerDataIngester")


@pytest.mark.parametrize(
    "exception, call, plugin",
    [
        (_legacy_display_name, "ListScalars", "scalars"),
        (_legacy_audio_content, "ListBlobSequences", "audio"),
        (_legacy_histograms, "ReadTensors", "histograms"),
        (_double_scalars, "ListScalars", "scalars"),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_each_listed_difference_is_met_in_the_log_dir(
    stubs: tuple[Any, Any], view: FileView, exception: Any, call: str, plugin: str
) -> None:
    # no exception is dead: RustBoard's answer does differ there, and tallyboard's is the one
    # the exception gives (TensorBoard's Python loader's)
    make = {c: m for c, m, _ in LISTS + READS}[call]
    fields = {"downsample": pb.Downsample(num_points=10_000)} if call.startswith("Read") else {}
    req = _request(make, plugin, None, **fields)
    rust, tally = _both(stubs, call, req)
    if call.startswith("List"):
        blobs = call == "ListBlobSequences"
        before, got = _listed(rust, blobs), _listed(tally, blobs)
    else:
        before, got = _read(rust, "tensors"), _read(tally, "tensors")
    for other in EXCEPTIONS:  # the others first: one series may meet two of them
        if other is not exception:
            other(view, call, req, before)
    after = copy.deepcopy(before)
    exception(view, call, req, after)
    assert after != before
    changed = [k for k in after if after[k] != before.get(k)]
    assert changed and all(got[k] == after[k] for k in changed)
