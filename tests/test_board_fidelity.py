"""``tallyboard board`` serves event files as TensorBoard's own data layer reads them.

Event files written by torch's ``SummaryWriter``, tensorboardX and tallyboard (and the
TensorFlow-written fixtures under ``tests/fixtures/world``) are served by the provider in this
process and asked over gRPC, as TensorBoard's frontend asks; every run and tag is compared with
what TensorBoard's own loader gives for the same files (``plugin_event_accumulator``, which
applies ``data_compat`` and ``dataclass_compat``): the series' ``SummaryMetadata`` (display
name, description, plugin content, data class), every point's step and wall time, scalars'
values, tensors' dtype, shape and values (``TensorProto`` equal), and blobs byte for byte.
``tallyboard convert --to tfevents`` of the same files must read back the same.
"""

from __future__ import annotations

import io
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tallyboard import SummaryWriter, convert
from tallyboard.board import serve
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.compat.proto import summary_pb2, types_pb2
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.pr_curve import metadata as pr_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util

FIXTURES = Path(__file__).parent / "fixtures" / "world"
Value = summary_pb2.Summary.Value


def _png(seed: int) -> bytes:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (3, 2, 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def _hparams_start() -> Value:
    info = plugin_data_pb2.SessionStartInfo(group_name="grp ✓", start_time_secs=1234.5)
    info.hparams["lr"].number_value = 0.1
    info.hparams["opt"].string_value = "adam"
    content = plugin_data_pb2.HParamsPluginData(version=0, session_start_info=info)
    meta = summary_pb2.SummaryMetadata()
    meta.plugin_data.plugin_name = hparams_metadata.PLUGIN_NAME
    meta.plugin_data.content = content.SerializeToString()
    return Value(tag=hparams_metadata.SESSION_START_INFO_TAG, metadata=meta)


def _experiment() -> Value:
    exp = api_pb2.Experiment(hparam_infos=[api_pb2.HParamInfo(name="lr")])
    content = plugin_data_pb2.HParamsPluginData(version=0, experiment=exp)
    meta = summary_pb2.SummaryMetadata()
    meta.plugin_data.plugin_name = hparams_metadata.PLUGIN_NAME
    meta.plugin_data.content = content.SerializeToString()
    return Value(tag=hparams_metadata.EXPERIMENT_TAG, metadata=meta)


def _summaries(step: int) -> list[Value]:
    """Hand-built summaries, each a form the issue found lost or changed."""
    pngs = [_png(step * 10 + i) for i in range(3)]
    vector = np.array(["a ✓", "b"], dtype=object)
    matrix = np.array([["r0c0", "r0c1"], ["r1c0", "r1c1"], ["é", ""]], dtype=object)
    histo = np.array([[0.0, 0.1, 3.0], [0.1, 1 / 3, 4.0]], np.float64) + step
    pr = np.linspace(0, 1, 6 * 5, dtype=np.float32).reshape(6, 5)
    return [
        Value(
            tag="cos",
            metadata=scalar_metadata.create_summary_metadata("", "cosine ✓"),
            tensor=tensor_util.make_tensor_proto(np.float32(0.5 + step)),
        ),
        Value(
            tag="cos64",
            metadata=scalar_metadata.create_summary_metadata("a name", "float64"),
            tensor=tensor_util.make_tensor_proto(np.float64(1 / 3 + step)),
        ),
        Value(
            tag="table/vector",
            metadata=text_metadata.create_summary_metadata("", "a vector"),
            tensor=tensor_util.make_tensor_proto(vector),
        ),
        Value(
            tag="table/matrix",
            metadata=text_metadata.create_summary_metadata("", ""),
            tensor=tensor_util.make_tensor_proto(matrix),
        ),
        Value(
            tag="images",
            metadata=image_metadata.create_summary_metadata(
                "", "three of them", converted_to_tensor=True
            ),
            tensor=tensor_util.make_tensor_proto([b"2", b"3", *pngs]),
        ),
        Value(
            tag="legacy_image",
            metadata=summary_pb2.SummaryMetadata(display_name="tb img", summary_description="d"),
            image=summary_pb2.Summary.Image(
                height=3, width=2, colorspace=3, encoded_image_string=pngs[0]
            ),
        ),
        Value(
            tag="pr",
            metadata=pr_metadata.create_summary_metadata(
                "pr display ✓", "pr desc", num_thresholds=5
            ),
            tensor=tensor_util.make_tensor_proto(pr),
        ),
        Value(
            tag="histo64",
            metadata=histogram_metadata.create_summary_metadata("", "float64 buckets"),
            tensor=tensor_util.make_tensor_proto(histo),
        ),
    ]


def _write_torch(root: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    w = TorchWriter(str(root / "torch"))
    for step in range(3):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("weights", np.arange(10.0) * (step + 1), step)
        w.add_image("img", np.full((3, 4, 5), step / 3, np.float32), step)
        w.add_text("note", f"step **{step}** ✓", step)
        w.add_pr_curve("curve", np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.6, 0.4]), step)
        w.file_writer.add_summary(summary_pb2.Summary(value=_summaries(step)), step)
    w.file_writer.add_summary(summary_pb2.Summary(value=[_experiment()]), 0)
    w.file_writer.add_summary(summary_pb2.Summary(value=[_hparams_start()]), 0)
    w.close()


def _write_tensorboardx(root: Path) -> None:
    from tensorboardX import SummaryWriter as XWriter

    w = XWriter(str(root / "tensorboardx"))
    for step in range(3):
        w.add_scalar("acc", 0.25 * step, step, display_name="accuracy", summary_description="d ✓")
        w.add_scalar("plain", step / 7, step)
        w.add_histogram("h", np.linspace(-1, 1, 50) * step, step)
        w.add_images("batch", np.random.default_rng(step).random((2, 3, 4, 5)), step)
        w.add_text("t", "hello", step)
    w.add_hparams({"lr": 0.1, "name": "x"}, {"hparam/m": 1.0}, name="trial")
    w.close()


def _write_tallyboard(root: Path) -> None:
    with SummaryWriter(root / "tallyboard") as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_histogram("weights", np.arange(10.0) * (step + 1), step)
            w.add_image("img", np.full((3, 4, 5), step / 3, np.float32), step)
            w.add_text("note", f"step {step}", step)
            w.add_summary(summary_pb2.Summary(value=_summaries(step)), step)
        w.add_hparams({"lr": 0.5}, {"m": 1.0}, run_name="trial")


def _accumulator(run_dir: Path) -> Any:
    acc = pea.EventAccumulator(
        str(run_dir), size_guidance={k: 0 for k in pea.DEFAULT_SIZE_GUIDANCE}
    )
    acc.Reload()
    return acc


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fidelity")
    _write_torch(root)
    _write_tensorboardx(root)
    _write_tallyboard(root)
    for name in ("tf1", "tf2", "keras", "tensorboardx", "torch"):
        shutil.copytree(FIXTURES / name, root / "world" / name)
    return root


def _run_dirs(root: Path) -> dict[str, Path]:
    """Every directory holding event files, by its run name."""
    out = {}
    for path in sorted(root.rglob("*tfevents*")):
        run = path.parent.relative_to(root).as_posix() or "."
        out[run] = path.parent
    return out


class Served:
    """The provider over ``root``, asked over gRPC."""

    def __init__(self, stub: Any) -> None:
        self.stub = stub

    def metadata(self, plugin: str, data_class: int) -> dict[tuple[str, str], Any]:
        """``(run, tag) -> SummaryMetadata`` of every series of ``plugin``."""
        ask = {
            summary_pb2.DATA_CLASS_SCALAR: (pb.ListScalarsRequest, self.stub.ListScalars),
            summary_pb2.DATA_CLASS_TENSOR: (pb.ListTensorsRequest, self.stub.ListTensors),
            summary_pb2.DATA_CLASS_BLOB_SEQUENCE: (
                pb.ListBlobSequencesRequest,
                self.stub.ListBlobSequences,
            ),
        }[data_class]
        req = ask[0]()
        req.plugin_filter.plugin_name = plugin
        return {
            (r.run_name, t.tag_name): t.metadata.summary_metadata
            for r in ask[1](req).runs
            for t in r.tags
        }

    def points(self, plugin: str, data_class: int, run: str, tag: str) -> list[Any]:
        """``(step, wall_time, value)`` of one series: a float, a TensorProto or the blobs."""
        if data_class == summary_pb2.DATA_CLASS_SCALAR:
            req = pb.ReadScalarsRequest()
            call = self.stub.ReadScalars
        elif data_class == summary_pb2.DATA_CLASS_TENSOR:
            req = pb.ReadTensorsRequest()
            call = self.stub.ReadTensors
        else:
            req = pb.ReadBlobSequencesRequest()
            call = self.stub.ReadBlobSequences
        req.plugin_filter.plugin_name = plugin
        req.run_tag_filter.runs.names.append(run)
        req.run_tag_filter.tags.names.append(tag)
        req.downsample.num_points = 1 << 20
        [r] = call(req).runs
        [t] = r.tags
        d = t.data
        if data_class == summary_pb2.DATA_CLASS_SCALAR:
            return list(zip(d.step, d.wall_time, d.value))
        if data_class == summary_pb2.DATA_CLASS_TENSOR:
            return list(zip(d.step, d.wall_time, d.value))
        return [
            (step, wall, [self.blob(ref.blob_key) for ref in seq.blob_refs])
            for step, wall, seq in zip(d.step, d.wall_time, d.values)
        ]

    def blob(self, key: str) -> bytes:
        return b"".join(part.data for part in self.stub.ReadBlob(pb.ReadBlobRequest(blob_key=key)))


@pytest.fixture(scope="module")
def served(logdir: Path) -> Iterator[Served]:
    with serve(str(logdir), reload=0, samples=_keep_all()) as server:
        assert server.wait_loaded(120)
        channel = grpc.insecure_channel(server.address)
        yield Served(pb_grpc.TensorBoardDataProviderStub(channel))
        channel.close()


def _keep_all() -> dict[str, int]:
    names = [
        "scalars",
        "images",
        "audio",
        "histograms",
        "text",
        "pr_curves",
        "hparams",
        "mesh",
        "graphs",
        "graph_run_metadata",
        "graph_run_metadata_graph",
        "graph_keras_model",
        "custom_scalars",
        "custom_plugin",
    ]
    return dict.fromkeys(names, 0)


def _expected(run_dir: Path) -> dict[str, tuple[Any, list[Any]]]:
    """``tag -> (SummaryMetadata, tensor events)`` as TensorBoard's own loader reads them."""
    acc = _accumulator(run_dir)
    out = {}
    for tag in acc.Tags()["tensors"]:
        meta = acc.summary_metadata.get(tag, summary_pb2.SummaryMetadata())  # none: not served
        out[tag] = (meta, acc.Tensors(tag))
    return out


def _compare(served: Served, run: str, tag: str, meta: Any, events: list[Any]) -> None:
    plugin, data_class = meta.plugin_data.plugin_name, meta.data_class
    if data_class == summary_pb2.DATA_CLASS_UNKNOWN:
        return  # TensorBoard's data layer serves no such series
    listed = served.metadata(plugin, data_class)
    assert (run, tag) in listed, (run, tag, plugin)
    assert listed[(run, tag)] == meta, (run, tag, listed[(run, tag)], meta)
    got = served.points(plugin, data_class, run, tag)
    assert [(s, w) for s, w, _ in got] == [(e.step, e.wall_time) for e in events], (run, tag)
    for (_, _, value), event in zip(got, events):
        want = event.tensor_proto
        if data_class == summary_pb2.DATA_CLASS_SCALAR:
            # the protocol carries scalars as float32 (ScalarData.value), RustBoard's too
            assert value == float(np.float32(tensor_util.make_ndarray(want).item())), (run, tag)
        elif data_class == summary_pb2.DATA_CLASS_TENSOR:
            assert value == want, (run, tag, value, want)
        else:
            assert value == list(want.string_val), (run, tag)


def test_every_series_of_event_files_is_served_as_tensorboards_loader_reads_it(
    logdir: Path, served: Served
) -> None:
    seen = 0
    for run, run_dir in _run_dirs(logdir).items():
        for tag, (meta, events) in _expected(run_dir).items():
            _compare(served, run, tag, meta, events)
            seen += 1
    assert seen > 60


def _one(served: Served, logdir: Path, run: str, tag: str) -> tuple[Any, list[Any]]:
    meta, events = _expected(logdir / run)[tag]
    _compare(served, run, tag, meta, events)
    return served.metadata(meta.plugin_data.plugin_name, meta.data_class)[(run, tag)], (
        served.points(meta.plugin_data.plugin_name, meta.data_class, run, tag)
    )


@pytest.mark.parametrize("run", ["torch", "tallyboard"])
def test_text_tables_keep_their_string_vector_and_matrix(
    served: Served, logdir: Path, run: str
) -> None:
    _, vector = _one(served, logdir, run, "table/vector")
    assert tensor_util.make_ndarray(vector[0][2]).tolist() == ["a ✓".encode(), b"b"]
    _, matrix = _one(served, logdir, run, "table/matrix")
    assert tensor_util.make_ndarray(matrix[2][2]).shape == (3, 2)


@pytest.mark.parametrize("run", ["torch", "tallyboard"])
def test_a_multi_image_summary_keeps_every_image_byte_for_byte(
    served: Served, logdir: Path, run: str
) -> None:
    _, points = _one(served, logdir, run, "images")
    for step, _, blobs in points:
        assert blobs == [b"2", b"3", *[_png(step * 10 + i) for i in range(3)]]


@pytest.mark.parametrize("run", ["torch", "tallyboard"])
def test_descriptions_and_display_names_are_served_as_written(
    served: Served, logdir: Path, run: str
) -> None:
    meta, _ = _one(served, logdir, run, "cos")
    assert (meta.summary_description, meta.display_name) == ("cosine ✓", "")
    meta, _ = _one(served, logdir, run, "legacy_image")
    assert meta.display_name == "tb img"
    meta, _ = _one(served, logdir, run, "pr")
    assert meta.display_name == "pr display ✓"
    meta, _ = _one(served, logdir, run, "table/matrix")
    assert meta.display_name == ""  # a tensor-form value: none is invented
    meta, _ = _one(served, logdir, "tensorboardx", "acc")
    assert (meta.display_name, meta.summary_description) == ("accuracy", "d ✓")


@pytest.mark.parametrize("run", ["torch", "tallyboard"])
def test_float64_values_stay_float64(served: Served, logdir: Path, run: str) -> None:
    _, points = _one(served, logdir, run, "histo64")
    assert points[1][2].dtype == types_pb2.DT_DOUBLE
    assert tensor_util.make_ndarray(points[1][2])[1, 1] == 1 / 3 + 1  # not rounded to float32


def test_hparams_session_start_keeps_group_name_and_start_time(
    served: Served, logdir: Path
) -> None:
    meta, _ = _one(served, logdir, "torch", hparams_metadata.SESSION_START_INFO_TAG)
    data = plugin_data_pb2.HParamsPluginData.FromString(meta.plugin_data.content)
    info = data.session_start_info
    assert (info.group_name, info.start_time_secs) == ("grp ✓", 1234.5)


def test_convert_to_event_files_keeps_what_the_files_hold(logdir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in ("torch", "tensorboardx", "tallyboard"):
        shutil.copytree(logdir / name, src / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = convert(src, tmp_path / "dst", to="tfevents")
    assert not summary.not_converted, summary.not_converted_line()
    for name in ("torch", "tensorboardx", "tallyboard"):
        before, after = _expected(src / name), _expected(tmp_path / "dst" / name)
        assert sorted(after) == sorted(before), name
        for tag, (meta, events) in before.items():
            got_meta, got = after[tag]
            assert got_meta == meta, (name, tag)
            assert [(e.step, e.wall_time, e.tensor_proto) for e in got] == [
                (e.step, e.wall_time, e.tensor_proto) for e in events
            ], (name, tag)
