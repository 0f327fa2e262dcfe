"""tallyboard_jax.metric_writers against CLU 0.0.12's interface and its torch writer.

CLU's ``clu.metric_writers`` package imports TensorFlow in its ``__init__``; its modules are
loaded here from the installed CLU without that ``__init__`` (no TensorFlow on the machine),
which is how a TensorFlow-free CLU user gets no MetricWriter at all.
"""

from __future__ import annotations

import importlib
import inspect
import io
import logging
import os
import sys
import types

import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

from tests.conftest import load_run
from tests.jax_support import computing


@pytest.fixture(scope="module")
def clu_modules():
    import clu

    saved = {k: v for k, v in sys.modules.items() if k.startswith("clu.metric_writers")}
    package = types.ModuleType("clu.metric_writers")
    package.__path__ = [os.path.join(os.path.dirname(clu.__file__), "metric_writers")]
    sys.modules["clu.metric_writers"] = package
    try:
        yield types.SimpleNamespace(
            interface=importlib.import_module("clu.metric_writers.interface"),
            torch=importlib.import_module("clu.metric_writers.torch_tensorboard_writer"),
            logging=importlib.import_module("clu.metric_writers.logging_writer"),
        )
    finally:
        for name in [k for k in sys.modules if k.startswith("clu.metric_writers")]:
            del sys.modules[name]
        sys.modules.update(saved)


@pytest.fixture(scope="module")
def metric_writers(clu_modules):
    from tallyboard_jax import metric_writers

    return metric_writers


def test_a_writer_is_an_instance_of_clus_metric_writer(clu_modules, metric_writers, tmp_path):
    with metric_writers.MetricWriter(tmp_path) as writer:
        assert isinstance(writer, clu_modules.interface.MetricWriter)


def test_every_method_of_clus_interface_takes_clus_arguments(clu_modules, metric_writers):
    theirs = clu_modules.interface.MetricWriter
    for name in theirs.__abstractmethods__:
        want = inspect.signature(getattr(theirs, name))
        got = inspect.signature(getattr(metric_writers.MetricWriter, name))
        assert [(p.name, p.kind) for p in got.parameters.values()] == [
            (p.name, p.kind) for p in want.parameters.values()
        ], name
    # CLU's create_default_writer (clu.metric_writers.utils imports TensorFlow's writer):
    got = inspect.signature(metric_writers.create_default_writer).parameters
    assert [(n, p.kind, p.default) for n, p in got.items()] == [
        ("logdir", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
        ("just_logging", inspect.Parameter.KEYWORD_ONLY, False),
        ("asynchronous", inspect.Parameter.KEYWORD_ONLY, True),
        ("collection", inspect.Parameter.KEYWORD_ONLY, None),
    ]


def test_scalars_and_images_read_back_as_clus_torch_writer_writes_them(
    clu_modules, metric_writers, tmp_path
):
    image = np.random.default_rng(0).random((8, 6, 3)).astype(np.float32)
    ours = metric_writers.MetricWriter(tmp_path / "ours")
    theirs = clu_modules.torch.TorchTensorboardWriter(str(tmp_path / "clu"))
    for step in range(3):
        loss = jnp.float32(1.0 / (step + 1))
        ours.write_scalars(step, {"loss": loss, "acc": step * 0.25})
        theirs.write_scalars(step, {"loss": np.asarray(loss), "acc": step * 0.25})
        ours.write_images(step, {"img": jnp.asarray(image)})
        theirs.write_images(step, {"img": image})
    ours.close()
    theirs.close()
    got, want = load_run(tmp_path / "ours"), load_run(tmp_path / "clu")
    for tag in ("loss", "acc"):
        assert [(e.step, e.value) for e in got.Scalars(tag)] == [
            (e.step, e.value) for e in want.Scalars(tag)
        ]
    for a, b in zip(got.Images("img"), want.Images("img"), strict=True):
        assert (a.step, a.width, a.height) == (b.step, b.width, b.height)
        pixels = [np.asarray(Image.open(io.BytesIO(e.encoded_image_string))) for e in (a, b)]
        np.testing.assert_array_equal(*pixels)


def test_histograms_are_clus_tensorflow_buckets_and_pytrees_are_one_per_leaf(
    clu_modules, metric_writers, tmp_path
):
    data = np.asarray(jnp.asarray(np.random.default_rng(1).normal(size=500)))  # float32
    params = {"Dense_0": {"kernel": jnp.asarray(data[:12].reshape(3, 4)), "bias": jnp.zeros(4)}}
    with metric_writers.MetricWriter(tmp_path) as writer:
        writer.write_histograms(0, {"w": jnp.asarray(data)}, num_buckets={"w": 12})
        writer.write_histograms(0, {"params": params})
    run = load_run(tmp_path)
    counts, edges = clu_modules.logging._compute_histogram_as_tf(data, num_buckets=12)
    (h,) = run.Histograms("w")
    value = h.histogram_value
    assert list(value.bucket) == counts.tolist()
    np.testing.assert_allclose(value.bucket_limit, edges[1:])
    assert (value.min, value.max, value.num) == (edges[0], edges[-1], 500)
    assert set(run.Tags()["histograms"]) >= {"params/Dense_0/kernel", "params/Dense_0/bias"}
    (bias,) = run.Histograms("params/Dense_0/bias")
    assert list(bias.histogram_value.bucket) == [4]  # all equal: one bucket of width 1
    assert (bias.histogram_value.min, bias.histogram_value.max) == (-0.5, 0.5)


def test_batches_of_images_and_clips_get_one_tag_each(metric_writers, tmp_path):
    with metric_writers.MetricWriter(tmp_path) as writer:
        writer.write_images(0, {"batch": jnp.ones((2, 4, 5, 1))})
        writer.write_audios(0, {"clip": jnp.zeros((1, 80, 1))}, sample_rate=8000)
        writer.write_videos(0, {"video": np.zeros((3, 4, 4, 3), np.uint8)})
        writer.write_texts(0, {"note": "**hi**"})
        writer.write_summaries(0, {"raw": jnp.arange(3.0)})
    tags = load_run(tmp_path).Tags()
    assert tags["images"] == ["batch/image/0", "batch/image/1", "video"]
    assert tags["audio"] == ["clip"]
    assert set(tags["tensors"]) == {"note/text_summary", "raw"}
    assert load_run(tmp_path).Audio("clip")[0].sample_rate == 8000


def test_point_clouds_go_to_the_mesh_tab(metric_writers, tmp_path):
    from tensorboard.plugins.mesh import metadata as mesh_metadata
    from tensorboard.plugins.mesh import plugin_data_pb2

    points = np.random.default_rng(2).random((10, 3)).astype(np.float32)
    colors = np.full((10, 3), 200, np.uint8)
    with metric_writers.MetricWriter(tmp_path) as writer:
        writer.write_pointcloud(0, {"cloud": points}, point_colors={"cloud": colors})
    run = load_run(tmp_path)
    vertices = [t for t in run.Tags()["tensors"] if t.startswith("cloud") and "VERTEX" in t]
    (event,) = run.Tensors(vertices[0])
    got = tensor_util.make_ndarray(event.tensor_proto)
    np.testing.assert_allclose(got.reshape(-1, 3), points)
    data = mesh_metadata.parse_plugin_metadata(run.SummaryMetadata(vertices[0]).plugin_data.content)
    assert data.content_type == plugin_data_pb2.MeshPluginData.VERTEX


def test_the_default_writer_logs_and_writes_into_its_collection(metric_writers, tmp_path, caplog):
    caplog.set_level(logging.INFO, "tallyboard_jax.metric_writers")
    writer = metric_writers.create_default_writer(tmp_path, collection="eval")
    writer.write_scalars(7, {"acc": 0.5, "loss": jnp.float32(0.25)})
    writer.close()
    assert load_run(tmp_path / "eval").Scalars("loss")[0].value == 0.25
    assert "[7] collection=eval acc=0.5" in caplog.text
    assert "[7] collection=eval loss=0.25" in caplog.text


def test_asynchronous_false_reads_and_logs_device_values_in_the_call(
    metric_writers, tmp_path, caplog
):
    caplog.set_level(logging.INFO, "tallyboard_jax.metric_writers")
    for asynchronous in (True, False):
        caplog.clear()
        writer = metric_writers.create_default_writer(
            tmp_path / str(asynchronous), asynchronous=asynchronous
        )
        loss, params = computing(jnp.float32(0.25), jnp.arange(4.0))
        writer.write_scalars(3, {"loss": loss})
        writer.write_histograms(3, {"params": params})
        # synchronous: the call waited for the device and logged the value; else neither yet
        assert loss.is_ready() is params.is_ready() is (not asynchronous)
        assert ("[3] loss=0.25" in caplog.text) is (not asynchronous)
        writer.close()
        assert "[3] loss=0.25" in caplog.text
        run = load_run(tmp_path / str(asynchronous))
        assert run.Scalars("loss")[0].value == 0.25
        assert run.Histograms("params")[0].histogram_value.num == 4
    with pytest.raises(TypeError, match="asynchronous must be a bool"):
        metric_writers.create_default_writer(tmp_path, asynchronous="no")


def test_just_logging_writes_no_file(metric_writers, tmp_path):
    writer = metric_writers.create_default_writer(tmp_path / "run", just_logging=True)
    writer.write_scalars(0, {"loss": jnp.float32(1.0)})
    writer.write_images(0, {"img": np.zeros((2, 2, 3))})
    writer.close()
    assert not (tmp_path / "run").exists()


def test_bad_input_names_the_argument(metric_writers, tmp_path):
    with metric_writers.MetricWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"images\['x'\] must have shape \[N, H, W, C\]"):
            writer.write_images(0, {"x": np.zeros((4, 4))})
        with pytest.raises(TypeError, match="step must be an int"):
            writer.write_scalars(None, {"a": 1.0})
        with pytest.raises(TypeError, match="scalars must be a mapping"):
            writer.write_scalars(0, [1.0])
        with pytest.raises(ValueError, match=r"scalars\['a'\] must hold exactly one element"):
            writer.write_scalars(0, {"a": jnp.ones(3)})
        writer.write_scalars(1, {"a": 1.0})
        writer.write_scalars(2, {"a": jnp.float32(2)})  # jax's array type is known from here on
        # a call refused in part writes none of its values
        with pytest.raises(ValueError, match=r"scalars\['b'\] must hold exactly one element"):
            writer.write_scalars(3, {"a": jnp.float32(3), "b": jnp.ones(2)})
        with pytest.raises(TypeError, match=r"scalars\['c'\] must be a real number.*complex"):
            writer.write_scalars(3, {"a": jnp.float32(3), "c": jnp.complex64(1)})
        with pytest.raises(TypeError, match="scalars keys must be str, got int: 1"):
            writer.write_scalars(3, {"a": jnp.float32(3), 1: jnp.float32(1)})
    assert [(e.step, e.value) for e in load_run(tmp_path).Scalars("a")] == [(1, 1.0), (2, 2.0)]


def test_hparams_are_flattened_as_clu_flattens_them(metric_writers, tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    with metric_writers.MetricWriter(tmp_path) as writer:
        writer.write_hparams({"lr": 0.1, "model": {"depth": 3, "act": None}, "sizes": [8, 16]})
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(
        content["_hparams_/session_start_info"]
    ).session_start_info
    got = {
        k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind"))
        for k, v in start.hparams.items()
    }
    assert got == {"lr": 0.1, "model.depth": 3.0, "model.act": "", "sizes.0": 8.0, "sizes.1": 16.0}


def test_summaries_keep_the_metadata_given(metric_writers, tmp_path):
    from tensorboard.compat.proto.summary_pb2 import SummaryMetadata

    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="custom"))
    with metric_writers.MetricWriter(tmp_path) as writer:
        writer.write_summaries(
            3,
            {"with": np.arange(4.0), "bytes": jnp.ones(2), "plain": jnp.zeros(3)},
            metadata={"with": metadata, "bytes": metadata.SerializeToString()},
        )
    run = load_run(tmp_path)
    for tag in ("with", "bytes"):
        assert run.SummaryMetadata(tag).plugin_data.plugin_name == "custom"
    np.testing.assert_array_equal(
        tensor_util.make_ndarray(run.Tensors("with")[0].tensor_proto), np.arange(4.0)
    )
    assert run.Tensors("plain")[0].step == 3
