"""Images: read back with TensorBoard's loader, PNGs decoded and checked pixel by pixel."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from PIL import Image
from tallyboard import SummaryWriter


def decode(encoded: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(encoded)) as im:
        assert im.format == "PNG"
        return np.asarray(im)


def logged(logdir, tag: str, index: int = 0):
    """(the Summary.Image event as loaded, its decoded pixels)."""
    event = load_run(logdir).Images(tag)[index]
    return event, decode(event.encoded_image_string)


def torch_pixels(tag: str, img, dataformats: str = "CHW") -> np.ndarray:
    from torch.utils.tensorboard.summary import image

    summary = image(tag, img, dataformats=dataformats)
    return decode(summary.value[0].image.encoded_image_string)


def test_float_scaling_worked_values(logdir):
    img = np.array([0.5, 0.999, 1.5, -0.5, 0.0, 1.0, np.nan, np.inf], dtype=np.float32).reshape(
        1, 2, 4
    )
    with SummaryWriter(logdir) as w:
        w.add_image("x", img, 7)
    event, px = logged(logdir, "x")
    assert event.step == 7 and (event.height, event.width) == (2, 4)
    assert px.shape == (2, 4, 3)  # one channel replicated to RGB
    assert px[:, :, 0].ravel().tolist() == [127, 254, 255, 0, 0, 255, 0, 255]
    assert (px[:, :, 0] == px[:, :, 1]).all() and (px[:, :, 0] == px[:, :, 2]).all()


@pytest.mark.parametrize(
    ("shape", "fmt"),
    [
        ((3, 6, 5), "CHW"),
        ((6, 5, 3), "HWC"),
        ((6, 5), "HW"),
        ((5, 6), "WH"),
        ((5, 3, 6), "wch"),
        ((6, 5, 1), "HWC"),
    ],
)
def test_float_pixels_identical_to_torch(logdir, shape, fmt):
    img = np.random.default_rng(1).random(shape, dtype=np.float32) * 1.2 - 0.1
    with SummaryWriter(logdir) as w:
        w.add_image("x", img, dataformats=fmt)
    event, px = logged(logdir, "x")
    expected = torch_pixels("x", img, dataformats=fmt)
    assert px.shape == expected.shape and (px == expected).all()
    assert event.height == 6 and event.width == 5


def test_float64_and_torch_tensor_pixels_identical_to_torch(logdir):
    img64 = np.random.default_rng(2).random((3, 9, 7))
    tensor = torch.rand(3, 9, 7)
    with SummaryWriter(logdir) as w:
        w.add_image("f64", img64)
        w.add_image("torch", tensor)
        w.add_image("list", img64.tolist())
    assert (logged(logdir, "f64")[1] == torch_pixels("f", img64)).all()
    assert (logged(logdir, "torch")[1] == torch_pixels("t", tensor)).all()
    assert (logged(logdir, "list")[1] == torch_pixels("f", img64)).all()


def test_grid_layout_matches_torch(logdir):
    rng = np.random.default_rng(3)
    batch = rng.random((10, 3, 8, 8), dtype=np.float32)
    nhwc = rng.random((10, 5, 6, 3), dtype=np.float32)
    with SummaryWriter(logdir) as w:
        w.add_images("nchw", batch)
        w.add_images("nhwc", nhwc, dataformats="NHWC")
        w.add_image("as_image", batch, dataformats="NCHW")
    event, px = logged(logdir, "nchw")
    assert (event.width, event.height) == (64, 16)  # 8 columns x 2 rows
    assert (px == torch_pixels("t", batch, dataformats="NCHW")).all()
    k = 9  # row 1, column 1
    assert (px[8:16, 8:16] == (batch[k].transpose(1, 2, 0) * 255).astype(np.uint8)).all()
    assert (px[8:16, 16:] == 0).all()  # empty cells stay black
    event, px = logged(logdir, "nhwc")
    assert (event.width, event.height) == (48, 10)
    assert (px == torch_pixels("t", nhwc, dataformats="NHWC")).all()
    assert (logged(logdir, "as_image")[1] == logged(logdir, "nchw")[1]).all()


def test_small_batch_uses_batch_size_columns(logdir):
    with SummaryWriter(logdir) as w:
        w.add_images("three", np.ones((3, 1, 4, 2), dtype=np.uint8) * 9)
    event, px = logged(logdir, "three")
    assert (event.width, event.height) == (6, 4)
    assert (px == 9).all()


def test_integer_dtypes_are_0_to_255(logdir):
    values = np.array([[0, 100, 200, 255, 300, -5]])
    with SummaryWriter(logdir) as w:
        w.add_image("i64", values.astype(np.int64), dataformats="HW")
        w.add_image("i16", values.astype(np.int16), dataformats="HW")
        w.add_image("u8", values.clip(0, 255).astype(np.uint8), dataformats="HW")
        w.add_image("bool", np.array([[True, False]]), dataformats="HW")
    expected = [0, 100, 200, 255, 255, 0]
    assert logged(logdir, "i64")[1][0, :, 0].tolist() == expected
    assert logged(logdir, "i16")[1][0, :, 0].tolist() == expected
    assert logged(logdir, "u8")[1][0, :, 0].tolist() == [0, 100, 200, 255, 255, 0]
    assert logged(logdir, "bool")[1][0, :, 0].tolist() == [255, 0]
    # uint8 exactly as torch writes it
    u8 = np.random.default_rng(4).integers(0, 256, (3, 5, 4), dtype=np.uint8)
    with SummaryWriter(logdir) as w:
        w.add_image("u8b", u8)
    assert (logged(logdir, "u8b")[1] == torch_pixels("t", u8)).all()


@pytest.mark.parametrize(("channels", "mode"), [(2, "LA"), (3, "RGB"), (4, "RGBA")])
def test_channels_and_colorspace(logdir, channels, mode):
    img = np.random.default_rng(5).integers(0, 256, (channels, 3, 4), dtype=np.uint8)
    batch = np.stack([img, img // 2])
    with SummaryWriter(logdir) as w:
        w.add_image("one", img)
        w.add_images("grid", batch)
    event = load_run(logdir).Images("one")[0]
    with Image.open(io.BytesIO(event.encoded_image_string)) as im:
        assert im.mode == mode
        assert (np.asarray(im).reshape(3, 4, channels) == img.transpose(1, 2, 0)).all()
    ev = next(e for e in raw_events(logdir) if e.summary.value and e.summary.value[0].tag == "one")
    assert ev.summary.value[0].image.colorspace == channels
    event, px = logged(logdir, "grid")
    assert (event.width, event.height) == (8, 3)
    assert (px.reshape(3, 8, channels)[:, 4:] == (img // 2).transpose(1, 2, 0)).all()


def test_event_matches_torch_summary_fields(logdir):
    from tensorboard.compat.proto import summary_pb2  # noqa: F401
    from torch.utils.tensorboard.summary import image

    img = np.random.default_rng(6).random((3, 10, 12), dtype=np.float32)
    with SummaryWriter(logdir) as w:
        w.add_image("x", img, 3, walltime=12.5)
    (ev,) = [e for e in raw_events(logdir) if e.HasField("summary")]
    ours, theirs = ev.summary.value[0], image("x", img, dataformats="CHW").value[0]
    assert ev.step == 3 and ev.wall_time == 12.5
    assert ours.tag == theirs.tag and not ours.HasField("metadata")
    for field in ("height", "width", "colorspace"):
        assert getattr(ours.image, field) == getattr(theirs.image, field)
    assert (
        decode(ours.image.encoded_image_string) == decode(theirs.image.encoded_image_string)
    ).all()


def test_data_is_copied_at_call_time(logdir):
    img = np.zeros((3, 4, 4), dtype=np.float32)
    with SummaryWriter(logdir, max_queue=100) as w:
        w.add_image("x", img)
        img[:] = 1.0
    assert (logged(logdir, "x")[1] == 0).all()


def test_add_value_image(logdir):
    batch = np.random.default_rng(7).random((10, 3, 8, 8), dtype=np.float32)
    with SummaryWriter(logdir) as w:
        w.add_value("image", "nchw", batch, 1)
        w.add_value("image", "chw", batch[0], 1)
        w.add_value("image", "hw", batch[0, 0], 1)
    event, px = logged(logdir, "nchw")
    assert (event.width, event.height) == (64, 16)
    assert (px == torch_pixels("t", batch, dataformats="NCHW")).all()
    assert (logged(logdir, "chw")[1] == torch_pixels("t", batch[0])).all()
    assert (logged(logdir, "hw")[1] == torch_pixels("t", batch[0, 0], dataformats="HW")).all()


def test_many_images_many_steps(logdir):
    with SummaryWriter(logdir, max_queue=3) as w:
        for step in range(25):
            w.add_image("x", np.full((1, 2, 2), step, dtype=np.uint8), step)
    events = load_run(logdir).Images("x")
    assert [e.step for e in events] == list(range(25))
    assert [int(decode(e.encoded_image_string)[0, 0, 0]) for e in events] == list(range(25))


@pytest.mark.parametrize(
    ("tag", "step"), [("x", 0), ("héllo/wörld", 300), ("t" * 200, -1), ("a", None)]
)
def test_hand_packed_event_matches_protobuf(tag, step):
    from tallyboard_image.codec import png_bytes
    from tallyboard_image.convert import ImagePayload
    from tallyboard_image.tfevents import encode
    from tensorboard.compat.proto import event_pb2, summary_pb2

    pixels = np.random.default_rng(8).integers(0, 256, (300, 200, 4), dtype=np.uint8)
    ours = encode(tag, step, 1234.5, ImagePayload(pixels))
    image = summary_pb2.Summary.Image(
        height=300, width=200, colorspace=4, encoded_image_string=png_bytes(pixels)
    )
    expected = event_pb2.Event(
        wall_time=1234.5, summary=summary_pb2.Summary(value=[{"tag": tag, "image": image}])
    )
    if step is not None:
        expected.step = step
    assert ours == expected.SerializeToString()


def test_png_compresses_smooth_images_and_stores_noise():
    from tallyboard_image.codec import png_bytes

    y, x = np.mgrid[0:256, 0:256]
    smooth = np.stack([x, y, (x + y) // 2], axis=2).astype(np.uint8)
    noise = np.random.default_rng(9).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    for pixels, limit in ((smooth, 0.05), (noise, 1.01)):
        encoded = png_bytes(pixels)
        assert len(encoded) < pixels.nbytes * limit
        assert (decode(encoded) == pixels).all()
    gray_alpha = noise[:5, :7, :2]
    assert (decode(png_bytes(np.ascontiguousarray(gray_alpha))) == gray_alpha).all()
