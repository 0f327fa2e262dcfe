"""tallyboard_jax.tensorboard.SummaryWriter against Flax's ``flax.metrics.tensorboard``.

Flax's module imports TensorFlow, which this machine lacks: its methods' signatures are read
from Flax's installed source, and the files are checked against what TensorFlow's summaries
hold (float32 scalar tensors, ``max_outputs`` images in RGB, clipped audio).
"""

from __future__ import annotations

import ast
import inspect
import io
import os
import wave
from pathlib import Path

import flax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image
from tallyboard_jax.tensorboard import SummaryWriter
from tensorboard.util import tensor_util

from tests.conftest import load_run


def _flax_signatures() -> dict[str, list[str]]:
    path = os.path.join(os.path.dirname(flax.__file__), "metrics", "tensorboard.py")
    tree = ast.parse(Path(path).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SummaryWriter"]
    return {
        f.name: [a.arg for a in f.args.args]
        for f in cls.body
        if isinstance(f, ast.FunctionDef) and (not f.name.startswith("_") or f.name == "__init__")
    }


def test_every_method_of_flaxs_writer_takes_its_arguments():
    theirs = _flax_signatures()
    assert {"scalar", "image", "audio", "histogram", "text", "write", "hparams"} <= set(theirs)
    for name, args in theirs.items():
        ours = list(inspect.signature(getattr(SummaryWriter, name)).parameters)
        assert ours == args, name


def test_scalars_are_float32_tensors_as_tensorflow_writes_them(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.scalar("loss", jnp.float32(0.1), 1)
    writer.scalar("acc", 0.75, 1)
    writer.scalar("count", np.int64(3), 2)
    writer.close()
    run = load_run(tmp_path)
    for tag, step, want in (("loss", 1, np.float32(0.1)), ("acc", 1, 0.75), ("count", 2, 3.0)):
        (event,) = run.Tensors(tag)
        value = tensor_util.make_ndarray(event.tensor_proto)
        assert (event.step, value.dtype, value.shape, float(value)) == (
            step,
            np.float32,
            (),
            float(want),
        )
        assert run.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"


def test_a_bad_scalar_names_flaxs_argument_and_costs_no_other_value(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.scalar("loss", jnp.float32(0.5), 0)
    with pytest.raises(ValueError, match=r"value must hold exactly one element, got shape \(3,\)"):
        writer.scalar("loss", jnp.ones(3), 1)  # a jax array: checked in the call, not waited for
    with pytest.raises(TypeError, match="value must be a real number, got dtype complex64"):
        writer.scalar("loss", jnp.complex64(1), 1)
    with pytest.raises(TypeError, match="value must be a number, got str"):
        writer.scalar("loss", "0.5", 1)
    with pytest.raises(ValueError, match=r"value must hold exactly one element, got shape \(2,\)"):
        writer.scalar("loss", np.zeros(2), 1)
    writer.scalar("loss", jnp.float32(0.25), 2)
    writer.close()
    events = load_run(tmp_path).Tensors("loss")
    assert [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events] == [
        (0, 0.5),
        (2, 0.25),
    ]


def test_images_keep_max_outputs_and_gray_becomes_rgb(tmp_path):
    batch = np.random.default_rng(0).integers(0, 256, (5, 4, 6), dtype=np.uint8)  # [K, H, W]
    with_writer = SummaryWriter(tmp_path)
    with_writer.image("gray", jnp.asarray(batch), 0, max_outputs=2)
    with_writer.image("one", np.ones((4, 6, 3), np.float32), 0)
    with_writer.close()
    run = load_run(tmp_path)
    assert sorted(run.Tags()["images"]) == ["gray/image/0", "gray/image/1", "one"]
    pixels = np.asarray(Image.open(io.BytesIO(run.Images("gray/image/1")[0].encoded_image_string)))
    np.testing.assert_array_equal(pixels, np.repeat(batch[1][..., None], 3, axis=-1))


def test_audio_is_clipped_to_plus_minus_one(tmp_path):
    clip = np.linspace(-2, 2, 400, dtype=np.float32).reshape(1, 400, 1)
    writer = SummaryWriter(tmp_path)
    writer.audio("a", jnp.asarray(clip), 0, sample_rate=8000)
    writer.close()
    (event,) = load_run(tmp_path).Audio("a")
    with wave.open(io.BytesIO(event.encoded_audio_string)) as wav:
        frames = np.frombuffer(wav.readframes(400), np.int16)
        assert wav.getframerate() == 8000
    assert frames.min() == -32767 and frames.max() == 32767


def test_histograms_texts_and_hparams(tmp_path):
    writer = SummaryWriter(tmp_path, auto_flush=False)
    writer.histogram("w", jnp.arange(10.0), 0, bins=5)
    writer.text("note", b"**bold**", 0)
    writer.hparams({"opt": {"lr": 0.1}, "name": "mlp", "layers": [1, 2]})
    with pytest.raises(ValueError, match="textdata"):
        writer.text("bad", 3, 0)
    writer.close()
    run = load_run(tmp_path)
    assert list(run.Histograms("w")[0].histogram_value.bucket) == [2, 2, 2, 2, 2]
    text = tensor_util.make_ndarray(run.Tensors("note/text_summary")[0].tensor_proto)
    assert text.reshape(-1)[0] == b"**bold**"
    assert "_hparams_/session_start_info" in run.PluginTagToContent("hparams")


def test_a_second_close_is_fine_and_a_bad_shape_raises(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.close()
    writer.close()  # a second close is fine, as in Flax
    with pytest.raises(ValueError, match="image must have shape"):
        SummaryWriter(tmp_path / "b").image("x", np.zeros((1, 2, 3, 4, 5)), 0)
