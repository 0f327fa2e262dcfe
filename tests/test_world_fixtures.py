"""Logs written by the real writers (TF2 tf.summary, tf.compat.v1, Keras 3 on TensorFlow, torch,
tensorboardX; tests/fixtures/world, made by tests/fixtures/make_world_fixtures.py) read back
with ``tallyboard.read`` equal, kind by kind and value by value, what TensorBoard's own data
layer gives for them (EventAccumulator and ``tensor_util.make_ndarray``, run here on the same
files), and no value of them is missing from ``read``, ``ls`` or ``convert``'s report.

The only values not compared are the histogram statistics the tensor format does not hold
(``sum`` and ``sum_squares`` of a TF2 histogram are NaN, as the README says).
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tallyboard
from PIL import Image
from tallyboard.reading.runs import RunReader
from tallyboard.warn import ReadWarning
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.meta_graph_pb2 import MetaGraphDef
from tensorboard.plugins.graph import graph_util
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.util import tensor_util

WORLD = Path(__file__).parent / "fixtures" / "world"
RUNS = sorted(str(p.parent.relative_to(WORLD)) for p in WORLD.rglob("*") if "tfevents" in p.name)
#: PIL mode of a PNG -> Summary.Image colorspace.
CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}
#: Values of these fixtures no installed kind decodes, by (run, plugin name, tag): a third-party
#: plugin's tensors.
UNDECODED = {("tf2", "custom_plugin", "tensors/custom_plugin"): 2}


def _quiet_read(kind: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        return tallyboard.read(str(WORLD), kind=kind)


@pytest.fixture(scope="module")
def tables() -> dict[str, Any]:
    kinds = ("scalar", "histogram", "image", "audio", "text", "tensor", "pr_curve", "graph")
    kinds += ("run_metadata", "mesh", "custom_scalars", "meta_graph", "keras_model")
    return {kind: _quiet_read(kind) for kind in kinds}


@pytest.fixture(scope="module")
def accumulators() -> dict[str, Any]:
    out = {}
    for run in RUNS:
        acc = ea.EventAccumulator(str(WORLD / run), size_guidance=ea.STORE_EVERYTHING_SIZE_GUIDANCE)
        acc.Reload()
        out[run] = acc
    return out


def _rows(table: Any, run: str) -> list[dict[str, Any]]:
    if table.empty:
        return []
    return [dict(r) for _, r in table[table["run"] == run].iterrows()]


def _plugin(acc: Any, tag: str) -> str | None:
    """The plugin of a tensor tag as EventAccumulator keeps it (from the tag's first metadata)."""
    try:
        return str(acc.SummaryMetadata(tag).plugin_data.plugin_name)
    except KeyError:  # written with no metadata at all (tf.summary.write)
        return None


def _tensors(acc: Any, plugin: str | None) -> dict[str, list[Any]]:
    """Every tensor tag of ``plugin`` (None: no metadata, or an empty plugin name)."""
    out = {}
    for tag in acc.Tags()["tensors"]:
        name = _plugin(acc, tag)
        if name == plugin or (plugin is None and name == ""):
            out[tag] = acc.Tensors(tag)
    return out


def _by_tag_step(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["tag"], int(row["step"])), []).append(row)
    for group in out.values():
        group.sort(key=lambda r: int(r.get("sample", 0)))
    return out


def _wav_facts(data: bytes) -> tuple[float, int, int]:
    """Sample rate, channels and frames from a WAV's RIFF chunks (parsed here, not by wave)."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    pos, rate, channels, align, frames = 12, 0, 0, 1, 0
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        if cid == b"fmt ":
            _, channels, rate, _, align = struct.unpack_from("<HHIIH", data, pos + 8)
        elif cid == b"data":
            frames = size // align
        pos += 8 + size + (size & 1)
    return float(rate), channels, frames


def test_the_fixtures_hold_every_writer() -> None:
    assert RUNS == [
        "keras/train",
        "keras/validation",
        "tensorboardx",
        "tensorboardx/hparams_run",
        "tensorboardx/scalars_group/train",
        "tensorboardx/scalars_group/val",
        "tf1",
        "tf2",
        "torch",
        "torch/hparams_run",
        "torch/scalars_group_train",
        "torch/scalars_group_val",
    ]


@pytest.mark.parametrize("run", RUNS)
def test_scalars_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    want = [
        (t, e.step, e.wall_time, e.value) for t in acc.Tags()["scalars"] for e in acc.Scalars(t)
    ]
    for tag, events in _tensors(acc, "scalars").items():
        for e in events:
            value = tensor_util.make_ndarray(e.tensor_proto)
            assert value.shape == ()
            want.append((tag, e.step, e.wall_time, float(value)))
    got = [(r["tag"], r["step"], r["wall_time"], r["value"]) for r in _rows(tables["scalar"], run)]
    assert sorted(got) == sorted(want) and want


@pytest.mark.parametrize("run", RUNS)
def test_histograms_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["histogram"], run))
    seen = 0
    for tag in acc.Tags()["histograms"]:  # HistogramProto: every field as written
        for e in acc.Histograms(tag):
            (row,) = got[tag, e.step]
            h = e.histogram_value
            assert row["wall_time"] == e.wall_time
            assert (row["min"], row["max"], row["num"]) == (h.min, h.max, h.num)
            assert (row["sum"], row["sum_squares"]) == (h.sum, h.sum_squares)
            assert row["bucket_limit"] == list(h.bucket_limit)
            assert row["bucket"] == list(h.bucket)
            seen += 1
    for tag, events in _tensors(acc, "histograms").items():  # TF2 / Keras: [k, 3] tensors
        for e in events:
            (row,) = got[tag, e.step]
            arr = tensor_util.make_ndarray(e.tensor_proto)
            assert arr.ndim == 2 and arr.shape[1] == 3
            assert row["wall_time"] == e.wall_time
            # left, right, count: the row's right edges and counts, and its min and max are the
            # first left and last right edges; the other left edges are the right edges before
            # them (TF2 buckets are contiguous), so the row holds the whole tensor
            assert row["bucket_limit"] == arr[:, 1].tolist()
            assert row["bucket"] == arr[:, 2].tolist()
            assert (row["min"], row["max"]) == (arr[0, 0], arr[-1, 1])
            assert np.array_equal(arr[1:, 0], arr[:-1, 1])
            assert row["num"] == arr[:, 2].sum()
            assert np.isnan(row["sum"]) and np.isnan(row["sum_squares"])  # not in the format
            seen += 1
    assert seen == sum(len(v) for v in got.values())


@pytest.mark.parametrize("run", RUNS)
def test_images_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["image"], run))
    seen = 0
    for tag in acc.Tags()["images"]:
        for e in acc.Images(tag):
            (row,) = got[tag, e.step]
            assert (row["width"], row["height"]) == (e.width, e.height)
            assert row["data"] == e.encoded_image_string and row["wall_time"] == e.wall_time
            seen += 1
    for tag, events in _tensors(acc, "images").items():  # [width, height, png, png, ...]
        for e in events:
            arr = tensor_util.make_ndarray(e.tensor_proto)
            rows = got[tag, e.step]
            assert [r["sample"] for r in rows] == list(range(len(arr) - 2))
            for row, png in zip(rows, arr[2:]):
                assert (row["width"], row["height"]) == (int(arr[0]), int(arr[1]))
                assert row["data"] == png and row["wall_time"] == e.wall_time
            seen += len(rows)
    assert seen == sum(len(v) for v in got.values())
    for rows in got.values():  # the colorspace and size are the PNG's own
        for row in rows:
            with Image.open(io.BytesIO(row["data"])) as img:
                assert CHANNELS[img.mode] == row["colorspace"]
                assert img.size == (row["width"], row["height"])


@pytest.mark.parametrize("run", RUNS)
def test_audio_equals_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["audio"], run))
    seen = 0
    for tag in acc.Tags()["audio"]:
        for e in acc.Audio(tag):
            (row,) = got[tag, e.step]
            assert row["data"] == e.encoded_audio_string and row["wall_time"] == e.wall_time
            assert (row["content_type"], row["label"]) == (e.content_type, "")
            assert (row["sample_rate"], row["length"]) == (e.sample_rate, e.length_frames)
            seen += 1
    for tag, events in _tensors(acc, "audio").items():  # [k, 2]: encoded clip, label
        for e in events:
            arr = tensor_util.make_ndarray(e.tensor_proto)
            rows = got[tag, e.step]
            assert arr.shape == (len(rows), 2)
            for row, (clip, label) in zip(rows, arr):
                assert row["data"] == clip and row["label"] == label.decode("utf-8")
                rate, channels, frames = _wav_facts(clip)
                assert (row["sample_rate"], row["num_channels"], row["length"]) == (
                    rate,
                    channels,
                    frames,
                )
                assert row["content_type"] == "audio/wav" and row["wall_time"] == e.wall_time
            seen += len(rows)
    assert seen == sum(len(v) for v in got.values())


@pytest.mark.parametrize("run", RUNS)
def test_text_keeps_its_shape(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["text"], run))
    want = _tensors(acc, "text")
    assert sum(len(v) for v in want.values()) == sum(len(v) for v in got.values())
    for tag, events in want.items():
        for e in events:
            arr = tensor_util.make_ndarray(e.tensor_proto)
            (row,) = got[tag, e.step]
            texts = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(arr)
            assert row["shape"] == list(arr.shape) and row["wall_time"] == e.wall_time
            assert row["strings"].shape == arr.shape
            assert row["strings"].tolist() == texts.tolist()
            assert row["value"] == "\n".join(texts.reshape(-1).tolist())


@pytest.mark.parametrize("run", RUNS)
def test_generic_tensors_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["tensor"], run))
    want = _tensors(acc, None)
    assert sum(len(v) for v in want.values()) == sum(len(v) for v in got.values())
    for tag, events in want.items():
        for e in events:
            arr = tensor_util.make_ndarray(e.tensor_proto)
            (row,) = got[tag, e.step]
            value = row["value"]
            assert row["shape"] == list(arr.shape) == list(value.shape)
            if arr.dtype == object:  # strings: bytes in TensorBoard, str here
                arr = np.vectorize(lambda b: b.decode("utf-8"), otypes=[str])(arr)
                assert value.tolist() == arr.tolist()
            else:
                assert value.dtype == arr.dtype and np.array_equal(value, arr)
                assert row["dtype"] == arr.dtype.name


@pytest.mark.parametrize("run", RUNS)
def test_pr_curves_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    from tallyboard_pr_curve.tfevents import ROWS

    acc = accumulators[run]
    got = _by_tag_step(_rows(tables["pr_curve"], run))
    want = _tensors(acc, "pr_curves")
    assert sum(len(v) for v in want.values()) == sum(len(v) for v in got.values())
    for tag, events in want.items():
        for e in events:
            arr = tensor_util.make_ndarray(e.tensor_proto)
            (row,) = got[tag, e.step]
            assert np.array_equal(np.stack([row[name] for name in ROWS]), arr)
            assert row["num_thresholds"] == arr.shape[1]


@pytest.mark.parametrize("run", RUNS)
def test_hparams_equal_tensorboards(run: str, accumulators: Any) -> None:
    acc = accumulators[run]
    try:
        want = acc.PluginTagToContent("hparams")
    except KeyError:  # no hparams in this run
        want = {}
    rows = [
        {"run": r, **row}
        for r, batch in RunReader(str(WORLD / run)).read()
        if r == "."  # not its sub-runs
        for row in batch.rows.get("hparams", ())
    ]
    assert {row["tag"]: row["content"] for row in rows} == want
    for row in rows:
        data = plugin_data_pb2.HParamsPluginData.FromString(want[row["tag"]])
        assert row["part"] == data.WhichOneof("data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        table = tallyboard.read(str(WORLD / run), kind="hparams")
    starts = [plugin_data_pb2.HParamsPluginData.FromString(c) for c in want.values()]
    starts = [d.session_start_info for d in starts if d.HasField("session_start_info")]
    mine = [dict(r) for _, r in table.iterrows() if r["run"] == "."]
    if not starts:
        assert mine == []
        return
    (start,) = starts
    (row,) = mine
    for name, value in start.hparams.items():
        kind = value.WhichOneof("kind")
        assert row[name] == getattr(value, kind)


@pytest.mark.parametrize("run", RUNS)
def test_graphs_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    got = _rows(tables["graph"], run)
    want = []
    if acc.Tags()["graph"]:
        want.append(("__run_graph__", acc.Graph()))
    for tag, events in _tensors(acc, "graph_run_metadata_graph").items():
        for e in events:  # trace_export: the GRAPHS tab merges the RunMetadata's functions
            meta = RunMetadata.FromString(tensor_util.make_ndarray(e.tensor_proto).item())
            graph = graph_util.merge_graph_defs(
                [f.pre_optimization_graph for f in meta.function_graphs]
            )
            want.append((tag, graph))
    assert sorted(
        (r["tag"], GraphDef.FromString(r["graph_def"]).SerializeToString(deterministic=True))
        for r in got
    ) == sorted((t, g.SerializeToString(deterministic=True)) for t, g in want)
    for row in got:
        assert row["num_nodes"] == len(GraphDef.FromString(row["graph_def"]).node) > 0
    runs = _rows(tables["run_metadata"], run)
    want_meta = {t: acc.RunMetadata(t) for t in acc.Tags()["run_metadata"]}
    assert {r["tag"]: RunMetadata.FromString(r["run_metadata"]) for r in runs} == want_meta
    models = _rows(tables["keras_model"], run)
    want_models = _tensors(acc, "graph_keras_model")
    assert [(r["tag"], r["step"], r["config"]) for r in models] == [
        (t, e.step, tensor_util.make_ndarray(e.tensor_proto).item().decode("utf-8"))
        for t, v in want_models.items()
        for e in v
    ]
    metas = _rows(tables["meta_graph"], run)
    if acc.Tags()["meta_graph"]:
        (row,) = metas
        assert MetaGraphDef.FromString(row["meta_graph_def"]) == acc.MetaGraph()
    else:
        assert metas == []


@pytest.mark.parametrize("run", RUNS)
def test_meshes_and_layouts_equal_tensorboards(run: str, tables: Any, accumulators: Any) -> None:
    acc = accumulators[run]
    meshes = _rows(tables["mesh"], run)
    want = _tensors(acc, "mesh")
    assert len(meshes) == len({(e.step, t.rsplit("_", 1)[0]) for t, v in want.items() for e in v})
    for mesh in meshes:
        for component, suffix in (("vertices", "VERTEX"), ("faces", "FACE"), ("colors", "COLOR")):
            (e,) = want[f"{mesh['tag']}_{suffix}"]
            arr = tensor_util.make_ndarray(e.tensor_proto)
            assert np.array_equal(mesh[component], arr)
    layouts = _rows(tables["custom_scalars"], run)
    want = _tensors(acc, "custom_scalars")
    assert [r["data"] for r in layouts] == [
        tensor_util.make_ndarray(e.tensor_proto).item() for v in want.values() for e in v
    ]


def _raw_values(run: str) -> Counter[tuple[str, int]]:
    """Every value of a run's files as TensorBoard's raw loader reads them: (tag, step) of each
    Summary.Value and of each other event that is no file header."""
    out: Counter[tuple[str, int]] = Counter()
    for path in sorted((WORLD / run).glob("*tfevents*")):
        for event in LegacyEventFileLoader(str(path)).Load():
            what = event.WhichOneof("what")
            if what == "summary":
                out.update((v.tag, event.step) for v in event.summary.value)
            elif what == "tagged_run_metadata":
                out[event.tagged_run_metadata.tag, event.step] += 1
            elif what != "file_version":
                out[what, event.step] += 1
    return out


@pytest.mark.parametrize("run", RUNS)
def test_no_value_is_missing_from_read(run: str, tables: Any) -> None:
    """Each raw value is a row of one kind (an image summary of k images: k rows, one value),
    or counted as undecoded; no row comes from nowhere."""
    got: Counter[tuple[str, int]] = Counter()
    for kind, table in tables.items():
        for row in _rows(table, run):
            if row.get("sample", 0) == 0:  # several images or clips of one value: one value
                tag = row["tag"]
                if kind == "graph" and tag == "__run_graph__":
                    tag = "graph_def"
                if kind == "meta_graph":
                    tag = "meta_graph_def"
                if kind == "mesh":  # one row per mesh: three values
                    got.update(
                        (f"{tag}_{c}", int(row["step"])) for c in ("VERTEX", "FACE", "COLOR")
                    )
                    continue
                got[tag, int(row["step"])] += 1
    raw = _raw_values(run)
    for sub, batch in RunReader(str(WORLD / run)).read():
        if sub != ".":
            continue
        got.update((row["tag"], int(row["step"])) for row in batch.rows.get("hparams", ()))
        for (plugin, tag), n in batch.undecoded.items():  # counted by tag, not step
            assert UNDECODED[run, plugin, tag] == n
            assert sum(count for (t, _), count in raw.items() if t == tag) == n
            raw = Counter({key: count for key, count in raw.items() if key[0] != tag})
    assert got == raw


def test_read_warns_once_naming_the_undecoded_values() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tallyboard.read(str(WORLD))
    (warning,) = [w for w in caught if issubclass(w.category, ReadWarning)]
    text = str(warning.message)
    assert warning.filename == __file__  # points at the caller
    for run, plugin, tag in UNDECODED:
        assert f"{run}: {tag!r} (plugin {plugin!r}) x{UNDECODED[run, plugin, tag]}" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no other run holds any: no warning
        tallyboard.read(str(WORLD / "torch"))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tallyboard", *args], capture_output=True, text=True, timeout=300
    )


def test_ls_lists_every_value() -> None:
    done = _cli("ls", str(WORLD), "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    undecoded = {
        (r["run"], r["plugin"], r["tag"]): r["count"] for r in listed if r["kind"] == "undecoded"
    }
    assert undecoded == UNDECODED
    counts: Counter[str] = Counter()
    for r in listed:
        if r["kind"] != "embedding":  # from projector_config.pbtxt, not from event files
            counts[r["run"]] += r["count"]
    for run in RUNS:  # every value: images and clips count one row each
        raw = sum(_raw_values(run).values())
        extra = sum(  # the extra rows of values holding several images or clips
            len(rows) - 1
            for kind in ("image", "audio")
            for rows in _by_tag_step(_rows(_quiet_read(kind), run)).values()
        )
        meshes = len(_rows(_quiet_read("mesh"), run))
        assert counts[run] == raw + extra, run
        assert meshes == 0 or run == "torch"
    lines = [line.split() for line in _cli("ls", str(WORLD / "tf2")).stdout.splitlines()]
    assert [".", "undecoded", "(custom_plugin)", "tensors/custom_plugin", "2", "-", "-"] in lines


def test_convert_reports_what_it_could_not_convert(tmp_path: Path) -> None:
    src = tmp_path / "world"
    shutil.copytree(WORLD, src)
    summary = tallyboard.convert(src, tmp_path / "out", to="tfevents")
    # to event files every value is copied as the file holds it: a plugin no installed kind
    # decodes and a 2x2 text table included
    assert list(summary.not_converted) == ["embedding"]  # the projector's files, not events
    assert summary.converted["custom_plugin"] == 2
    done = _cli("convert", str(src), str(tmp_path / "out2"), "--to", "jsonl")
    assert done.returncode == 0, done.stderr
    assert "not converted: " in done.stderr and "undecoded custom_plugin 2" in done.stderr
    # what was converted reads back the same, Keras's model config and TF1's meta graph too
    exact = {
        "keras_model": ["config"],
        "meta_graph": ["meta_graph_def"],
        "histogram": ["min", "max", "num", "bucket_limit", "bucket"],
        "audio": ["data", "sample_rate"],
        "graph": ["graph_def", "num_nodes"],
        "image": ["width", "height", "colorspace"],
    }
    for kind, fields in exact.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReadWarning)  # the undecoded custom_plugin values
            before, after = (
                sorted(
                    # a trace_export graph is written back as the run's graph (Event.graph_def)
                    (r["run"], r["tag"] if kind != "graph" else "", r["step"])
                    + tuple(repr(r[f]) for f in fields)
                    for _, r in tallyboard.read(str(root), kind=kind).iterrows()
                )
                for root in (src, tmp_path / "out")
            )
        assert before == after and before, kind
