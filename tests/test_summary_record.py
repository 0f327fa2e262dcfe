"""SummaryRecord writes MindSpore summary and lineage files, read back with an independent reader."""

from __future__ import annotations

import io
import logging
import os
import platform
import stat
import subprocess
import sys
import time
from pathlib import Path

import mindspore_reader as msr
import numpy as np
import pytest
import tallyboard
from conftest import load_run
from PIL import Image
from tallyboard import SummaryRecord
from tallyboard.faces.ops import HistogramSummary, ImageSummary, ScalarSummary, TensorSummary


def only(path: Path, suffix: str = "_MS") -> Path:
    files = [p for p in path.iterdir() if p.name.endswith(suffix)]
    assert len(files) == 1, files
    return files[0]


def summary_events(path: Path) -> list:
    return [e for e in msr.read_events(only(path)) if e.HasField("summary")]


def test_files_names_version_event_and_one_event_per_record(logdir: Path) -> None:
    with SummaryRecord(str(logdir)) as record:
        assert list(logdir.iterdir()) == []  # nothing until the first write
        record.add_value("scalar", "loss", np.float32(0.1))
        record.add_value("scalar", "acc", np.array([0.5]))
        assert record.record(1) is True
        record.add_value("scalar", "loss", np.float32(0.0))
        assert record.record(2) is True
        assert record.record(3) is True  # nothing pooled: no event
        path = Path(record.log_dir)
        assert record.file_info == {"file_name": path.name, "file_path": str(path)}
    name = path.name
    stamp = name.split(".")[4]
    assert name == f"events.out.events.summary.{stamp}.0.{platform.node()}_MS"
    assert abs(int(stamp) - time.time()) < 60
    events = msr.read_events(path)
    assert events[0].version == "MindSpore.Event:1" and not events[0].HasField("step")
    assert [(e.step, [(v.tag, v.scalar_value) for v in e.summary.value]) for e in events[1:]] == [
        (1, [("loss", pytest.approx(0.10000000149011612, abs=0)), ("acc", 0.5)]),
        (2, [("loss", 0.0)]),
    ]
    assert events[2].summary.value[0].HasField("scalar_value")  # a zero is still written
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    assert [p.name for p in logdir.iterdir()] == [name]


def test_empty_record_creates_nothing(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        record.record(0)
    assert list(logdir.iterdir()) == []


def test_prefix_suffix_and_values_from_torch_lists_and_python(logdir: Path) -> None:
    import torch

    with SummaryRecord(str(logdir), file_prefix="xx_", file_suffix="_yy") as record:
        record.add_value("scalar", "torch", torch.tensor(2.5))
        record.add_value("scalar", "list", [1])
        record.add_value("scalar", "float", 3.0)
        record.add_value("tensor", "t", torch.arange(3, dtype=torch.int64))
        record.record(-4)
    path = only(logdir, "_yy")
    assert path.name.startswith("xx_.out.events.summary.")
    assert {step for step, *_ in msr.values(path)} == {-4}
    assert [(tag, kind) for _, tag, kind, _ in msr.values(path)] == [
        ("torch", "scalar_value"), ("list", "scalar_value"), ("float", "scalar_value"), ("t", "tensor"),
    ]  # fmt: skip


def test_tensor_encoding(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        record.add_value("tensor", "i32", np.array([[1, 2], [3, 4]], dtype=np.int32))
        record.add_value("tensor", "f16", np.array([1.5, -2.0], dtype=np.float16))
        record.add_value("tensor", "big", np.array([2**24 + 1], dtype=np.int64))
        record.add_value("tensor", "empty", np.zeros((0,), np.float32))
        record.add_value("tensor", "bool", np.array([True, False]))
        record.record(7)
    tensors = {tag: value for _, tag, _, value in msr.values(logdir / only(logdir).name)}
    assert list(tensors["i32"].dims) == [2, 2] and tensors["i32"].data_type == 4
    assert list(tensors["i32"].float_data) == [1.0, 2.0, 3.0, 4.0]
    assert not tensors["i32"].int32_data and not tensors["i32"].raw_data
    assert tensors["f16"].data_type == 10 and list(tensors["f16"].float_data) == [1.5, -2.0]
    assert (
        tensors["big"].data_type == 5 and tensors["big"].float_data[0] == 2**24
    )  # float32 precision
    assert list(tensors["empty"].dims) == [0] and not tensors["empty"].float_data
    assert tensors["bool"].data_type == 1 and list(tensors["bool"].float_data) == [1.0, 0.0]


def histograms(logdir: Path, **arrays: np.ndarray) -> dict:
    with SummaryRecord(logdir) as record:
        for tag, array in arrays.items():
            record.add_value("histogram", tag, array)
        record.record(1)
    return {tag: value for _, tag, _, value in msr.values(only(logdir))}


def test_histogram_encoding_worked_values(logdir: Path) -> None:
    rng = np.random.default_rng(1)
    h = histograms(
        logdir,
        ints=np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64),
        bad=np.array([np.nan, np.nan, np.nan, np.inf, -np.inf]),
        ones=np.ones((100, 100)),
        normal=rng.normal(size=50).astype(np.float32),
        same=np.array([3, 3, 3]),
        eleven=np.arange(11.0),
        empty=np.zeros((0,), np.float32),
    )
    ints = h["ints"]
    assert (ints.count, ints.min, ints.max, ints.sum) == (6, 1, 6, 21)
    assert [(b.left, b.width, b.count) for b in ints.buckets] == [(1, 1, 1), (2, 2, 2), (4, 2, 3)]
    assert (ints.nan_count, ints.pos_inf_count, ints.neg_inf_count) == (0, 0, 0)
    assert ints.HasField("nan_count")  # always written, even when 0
    bad = h["bad"]
    assert (bad.count, bad.nan_count, bad.pos_inf_count, bad.neg_inf_count) == (5, 3, 1, 1)
    assert not bad.buckets and not bad.HasField("min") and not bad.HasField("sum")
    ones = h["ones"]
    assert len(ones.buckets) == 90 and sum(b.count for b in ones.buckets) == 10000
    assert ones.buckets[0].left == 0.5 and ones.buckets[-1].left + ones.buckets[
        -1
    ].width == pytest.approx(1.5)
    assert len(h["normal"].buckets) == 6 and sum(b.count for b in h["normal"].buckets) == 50
    assert [(b.left, b.width, b.count) for b in h["same"].buckets] == [(2, 1, 0), (3, 0, 3)]
    assert len(h["eleven"].buckets) == 2
    assert h["empty"].count == 0 and not h["empty"].buckets


def test_histogram_sum_min_max_over_finite_values(logdir: Path) -> None:
    values = np.array([1.0, 2.0, np.nan, np.inf, 4.0], dtype=np.float32)
    (h,) = histograms(logdir, h=values).values()
    assert (h.min, h.max, h.sum, h.count, h.nan_count, h.pos_inf_count) == (1.0, 4.0, 7.0, 5, 1, 1)
    assert len(h.buckets) == 2 and sum(b.count for b in h.buckets) == 3


def decode_png(image) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(image.encoded_image)))


def test_image_grid_and_scaling(logdir: Path) -> None:
    batch = np.zeros((10, 3, 4, 5), np.float32)
    batch[0] = 1.0
    gray = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2) * 85  # 0..255 -> scaled by 255/256
    with SummaryRecord(logdir) as record:
        record.add_value("image", "grid", batch)
        record.add_value("image", "gray", gray)
        record.add_value("image", "two_channels", np.ones((1, 2, 4, 4)))  # dropped when written
        record.add_value("scalar", "kept", np.float32(1))
        record.record(1)
    images = {tag: value for _, tag, _, value in msr.values(only(logdir))}
    assert set(images) == {"grid", "gray", "kept"}
    grid = images["grid"]
    assert (grid.height, grid.width, grid.colorspace) == (8, 40, 3)
    pixels = decode_png(grid)
    assert pixels.shape == (8, 40, 3)
    assert (pixels[:4, :5] == 255).all() and (pixels[:4, 5:] == 0).all() and (pixels[4:] == 0).all()
    gray_pixels = decode_png(images["gray"])
    assert gray_pixels[..., 0].tolist() == [[0, 84], [169, 254]]
    assert (gray_pixels[..., 0] == gray_pixels[..., 2]).all()


def test_duplicate_tags_both_written_with_warning(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SummaryRecord(logdir) as record, caplog.at_level(logging.WARNING):
        record.add_value("scalar", "x", np.float32(1))
        record.add_value("histogram", "h", np.arange(3.0))
        record.add_value("scalar", "x", np.float32(2))
        record.record(1)
    assert "'x/scalar' has duplicate values" in caplog.text
    assert [(tag, kind) for _, tag, kind, _ in msr.values(only(logdir))] == [
        ("x", "scalar_value"), ("x", "scalar_value"), ("h", "histogram"),
    ]  # fmt: skip


def test_plugin_filter_discards_the_rest(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        record.add_value("scalar", "s", np.float32(1))
        record.add_value("tensor", "t", np.ones(2))
        record.record(1, plugin_filter=lambda plugin: plugin == "tensor")
        record.record(2)
    assert [(step, tag) for step, tag, _, _ in msr.values(only(logdir))] == [(1, "t")]


def lineage_messages():
    from tallyboard.faces.summary_record import (
        DatasetGraph,
        EvaluationLineage,
        TrainLineage,
        UserDefinedInfo,
    )

    train = TrainLineage()
    train.hyper_parameters.learning_rate = 0.01
    train.hyper_parameters.batch_size = 32
    train.algorithm.network = "ResNet"
    evaluation = EvaluationLineage(metric='{"acc": 0.9}')
    evaluation.valid_dataset.valid_dataset_size = 100
    graph = DatasetGraph()
    graph.operations.add().operationParam.mapStr["op"] = "Batch"
    custom = UserDefinedInfo()
    custom.user_info.add().map_int32["epoch"] = 3
    return train, evaluation, graph, custom


def test_lineage_only_creates_only_the_lineage_file(logdir: Path) -> None:
    train, evaluation, graph, custom = lineage_messages()
    with SummaryRecord(logdir) as record:
        record.add_value("train_lineage", "ignored", train)
        record.add_value("eval_lineage", "", evaluation)
        record.add_value("dataset_graph", "", graph)
        record.add_value("custom_lineage_data", "", custom)
        record.record(5)
    (path,) = list(logdir.iterdir())
    assert path.name.endswith("_lineage") and ".out.events.summary." in path.name
    events = msr.read_lineage(path)
    assert [next(f.name for f, _ in e.ListFields() if f.number > 2) for e in events] == [
        "train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info",
    ]  # fmt: skip
    assert not any(e.HasField("step") for e in events) and not any(
        e.HasField("version") for e in events
    )
    assert events[0].train_lineage.hyper_parameters.batch_size == 32
    assert events[0].train_lineage.hyper_parameters.learning_rate == pytest.approx(0.01)
    assert events[1].evaluation_lineage.valid_dataset.valid_dataset_size == 100
    assert events[2].dataset_graph.operations[0].operationParam.mapStr["op"] == "Batch"
    assert events[3].user_defined_info.user_info[0].map_int32["epoch"] == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o400


def test_landscape_and_graph(logdir: Path) -> None:
    from tallyboard.faces.summary_record import LossLandscape

    landscape = LossLandscape()
    landscape.landscape.x.dims.append(2)
    landscape.landscape.x.float_data.extend([1.0, 2.0])
    landscape.metadata.unit = "step"
    model = msr.ModelProto(ir_version=1)
    model.graph.name = "net"
    with SummaryRecord(logdir) as record:
        record.add_value("LANDSCAPE", "land", landscape)
        record.add_value("landscape", "land2", landscape)
        record.add_value("graph", "", model.SerializeToString())
        record.add_value("scalar", "s", np.float32(1))
        record.record(3)
    events = msr.read_events(only(logdir))
    assert events[0].HasField("version")
    assert events[1].graph_def.name == "net" and not events[1].HasField("step")
    values = events[2].summary.value
    assert [v.tag for v in values] == ["land", "land2", "s"]
    assert values[0].loss_landscape.metadata.unit == "step"
    assert list(values[0].loss_landscape.landscape.x.float_data) == [1.0, 2.0]


def test_summary_operators_drained_in_train_left_in_eval(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        ScalarSummary()("loss", np.float32(1))
        ScalarSummary()("loss", np.float32(2))  # same key: replaces
        TensorSummary()("w[:x]", np.ones(2))
        HistogramSummary()("g", np.arange(4.0))
        ImageSummary()("im", np.zeros((1, 3, 2, 2)))
        record.add_value("scalar", "added", np.float32(9))
        record.record(1)
        record.set_mode("eval")
        ScalarSummary()("eval_loss", np.float32(3))
        record.add_value("scalar", "still", np.float32(4))
        record.record(2)
        record.set_mode("train")
        record.record(3)
    got = [(step, tag, kind) for step, tag, kind, _ in msr.values(only(logdir))]
    assert got == [
        (1, "added", "scalar_value"), (1, "loss", "scalar_value"), (1, "w[:x]", "tensor"),
        (1, "g", "histogram"), (1, "im", "image"),
        (2, "still", "scalar_value"),
        (3, "eval_loss", "scalar_value"),
    ]  # fmt: skip
    assert msr.values(only(logdir))[1][3] == 2.0


def test_max_file_size(logdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SummaryRecord(logdir, max_file_size=120) as record, caplog.at_level(logging.WARNING):
        record.add_value("scalar", "a", np.float32(1))
        record.record(1)  # version (35 bytes) + this event (~46) fit
        record.add_value("tensor", "big", np.ones(100))
        record.record(2)  # does not fit: the file stops here
        record.add_value("scalar", "a", np.float32(1))
        record.record(3)  # would fit, but the file is done
        path = Path(record.log_dir)
    assert "'max_file_size' reached" in caplog.text
    assert path.stat().st_size <= 120
    assert [step for step, *_ in msr.values(path)] == [1]


def test_max_file_size_zero_leaves_an_empty_file(logdir: Path) -> None:
    with SummaryRecord(logdir, max_file_size=0) as record:
        record.add_value("scalar", "a", np.float32(1))
        record.record(1)
    assert only(logdir).stat().st_size == 0


def test_export_tensors_as_npy(logdir: Path) -> None:
    value = np.arange(6, dtype=np.int16).reshape(2, 3)
    with SummaryRecord(logdir, export_options={"tensor_format": "npy"}) as record:
        record.add_value("tensor", "a/b c", value)
        record.add_value("scalar", "s", np.float32(1))
        record.record(5)
        stamp = Path(record.log_dir).name.split(".")[4]
    exported = logdir / f"export_{stamp}" / "tensor" / "a%2Fb%20c_5.npy"
    loaded = np.load(exported)
    assert loaded.dtype == np.int16 and (loaded == value).all()
    assert stat.S_IMODE(exported.stat().st_mode) == 0o400
    assert [tag for _, tag, _, _ in msr.values(only(logdir))] == ["a/b c", "s"]


def test_no_export_directory_without_tensors(logdir: Path) -> None:
    with SummaryRecord(logdir, export_options={"tensor_format": None}) as record:
        record.add_value("tensor", "t", np.ones(2))
        record.record(1)
    assert [p.name for p in logdir.iterdir()] == [only(logdir).name]


def test_never_truncates_an_existing_file(logdir: Path) -> None:
    first = SummaryRecord(logdir)
    first.add_value("scalar", "a", np.float32(1))
    first.record(1)
    first.close()
    second = SummaryRecord(logdir)
    second.add_value("scalar", "b", np.float32(2))
    second.record(2)
    second.close()
    assert first.log_dir != second.log_dir
    assert [tag for _, tag, _, _ in msr.values(first.log_dir)] == ["a"]
    assert [tag for _, tag, _, _ in msr.values(second.log_dir)] == ["b"]


def test_one_instance_at_a_time(logdir: Path) -> None:
    record = SummaryRecord(logdir)
    with pytest.raises(RuntimeError, match="only one instance is supported"):
        SummaryRecord(logdir / "other")
    assert not (logdir / "other").exists()
    record.close()
    record.close()  # second close: nothing, and the counter is released once only
    SummaryRecord(logdir).close()
    with pytest.raises(ValueError):
        SummaryRecord(logdir, file_prefix="-bad")
    SummaryRecord(logdir).close()  # a failed constructor released the counter


def test_after_close(logdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    record = SummaryRecord(logdir)
    record.close()
    with caplog.at_level(logging.WARNING):
        assert record.record(1) is False
        record.flush()
        record.add_value("scalar", "late", np.float32(1))
    assert "closed" in caplog.text and "will never be written" in caplog.text
    with pytest.raises(ValueError, match="has been closed"):
        record.__enter__()
    with pytest.raises(TypeError):
        record.record("2")
    assert list(logdir.iterdir()) == []


def test_flush_makes_data_readable_while_open(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        record.add_value("histogram", "h", np.arange(10.0))
        record.record(1)
        record.flush()
        assert [tag for _, tag, _, _ in msr.values(record.log_dir)] == ["h"]


def test_tensorboard_option(logdir: Path) -> None:
    with SummaryRecord(logdir, tensorboard=True) as record:
        for step in range(3):
            record.add_value("scalar", "loss", np.float32(step / 2))
            record.record(step)
        record.add_value("image", "im", np.random.default_rng(0).random((2, 3, 4, 4)))
        record.add_value("histogram", "h", np.arange(10.0))
        record.add_value("tensor", "t", np.ones((2, 2)))
        record.record(3)
    acc = load_run(logdir)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert [(e.step, e.width, e.height) for e in acc.Images("im")] == [(3, 8, 4)]
    assert [(e.step, e.histogram_value.num) for e in acc.Histograms("h")] == [(3, 10)]
    assert [e.step for e in acc.Tensors("t")] == [3]
    assert [step for step, *_ in msr.values(only(logdir))] == [0, 1, 2, 3, 3, 3]


def test_message_classes_and_ops_are_public() -> None:
    from tallyboard.faces import ops
    from tallyboard.faces.summary_record import Operation, OperationParameter, TrainLineage

    assert (
        TrainLineage.HyperParameters().DESCRIPTOR.full_name
        == "mindspore.irpb.TrainLineage.HyperParameters"
    )
    assert Operation().DESCRIPTOR.fields_by_name["operationParam"].number == 1
    assert OperationParameter is not None and callable(ops.ScalarSummary())


def test_every_lineage_message_class_imports_from_tallyboard() -> None:
    from tallyboard.faces import summary_record

    names = ["TrainLineage", "EvaluationLineage", "DatasetGraph", "UserDefinedInfo"]
    for name in [*names, "LossLandscape", "Operation", "OperationParameter"]:
        assert getattr(tallyboard, name) is getattr(summary_record, name), name
        assert name in tallyboard.__all__
    op = tallyboard.Operation(operationParam=tallyboard.OperationParameter())
    assert tallyboard.Operation.FromString(op.SerializeToString()) == op
    assert tallyboard.SummaryRecord is SummaryRecord


WRITE_ERROR_SCRIPT = """
import resource, signal, sys, numpy as np
from tallyboard import SummaryRecord
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
record = SummaryRecord(sys.argv[1], raise_exception=sys.argv[2] == "1")
record.add_value("tensor", "big", np.ones(10_000))
assert record.record(1)
try:
    record.flush()
    record.add_value("scalar", "after", np.float32(1))
    record.record(2)
    record.close()
except OSError as exc:
    print("raised", type(exc).__name__)
else:
    print("no error")
"""


@pytest.mark.parametrize(("raise_exception", "expected"), [("1", "raised"), ("0", "no error")])
def test_write_errors_and_raise_exception(
    logdir: Path, raise_exception: str, expected: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", WRITE_ERROR_SCRIPT, str(logdir), raise_exception],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (
        ["raised", "OSError"] if expected == "raised" else ["no", "error"]
    )
    if expected == "no error":
        assert "failed" in out.stderr  # logged, not raised
    # whatever reached the file is still well framed: the version event, not the torn tensor
    assert [e.HasField("version") for e in msr.read_events(only(logdir))] == [True]


def test_atexit_writes_pending_data(logdir: Path) -> None:
    script = (
        "import sys, numpy as np\nfrom tallyboard import SummaryRecord\n"
        "r = SummaryRecord(sys.argv[1])\nr.add_value('histogram', 'h', np.arange(100.0))\nr.record(9)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(logdir)], check=True, timeout=60)
    assert [(step, tag) for step, tag, _, _ in msr.values(only(logdir))] == [(9, "h")]
    assert stat.S_IMODE(os.stat(only(logdir)).st_mode) == 0o400
