"""Boxes, matplotlib figures and GIF videos, decoded and checked against the spec and torch."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import load_run, raw_events
from PIL import Image
from tallyboard import SummaryWriter


def png(encoded: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(encoded)) as im:
        assert im.format == "PNG"
        return np.asarray(im.convert("RGB"))


def torch_boxes(img, boxes, **kwargs) -> np.ndarray:
    from torch.utils.tensorboard.summary import image_boxes

    return png(
        image_boxes("t", img, np.asarray(boxes), **kwargs).value[0].image.encoded_image_string
    )


def test_box_drawn_in_red(logdir):
    with SummaryWriter(logdir) as w:
        w.add_image_with_boxes("b", np.zeros((3, 32, 32)), [[10, 10, 20, 20]], 1)
    event = load_run(logdir).Images("b")[0]
    px = png(event.encoded_image_string)
    assert (event.width, event.height) == (32, 32) and px.shape == (32, 32, 3)
    assert px[15, 10].tolist() == [255, 0, 0]  # (x=10, y=15) on the left edge
    assert px[0, 0].tolist() == [0, 0, 0] and px[15, 15].tolist() == [0, 0, 0]
    assert (px == torch_boxes(np.zeros((3, 32, 32)), [[10, 10, 20, 20]])).all()


def test_boxes_with_labels_identical_to_torch(logdir):
    img = np.random.default_rng(0).random((3, 48, 64), dtype=np.float32) * 0.5
    boxes = np.array([[5, 5, 30, 40], [35, 8, 60, 30]])
    with SummaryWriter(logdir) as w:
        w.add_image_with_boxes("b", img, boxes, labels=["cat", "dog"])
        w.add_image_with_boxes("plain", img, boxes)
        w.add_image_with_boxes(
            "hwc", img.transpose(1, 2, 0), boxes.tolist(), dataformats="HWC", labels=["a", "b"]
        )
    acc = load_run(logdir)
    labelled = png(acc.Images("b")[0].encoded_image_string)
    plain = png(acc.Images("plain")[0].encoded_image_string)
    assert (labelled == torch_boxes(img, boxes, labels=["cat", "dog"])).all()
    assert (plain == torch_boxes(img, boxes)).all()
    assert (labelled != plain).any()  # the labels are really drawn
    assert (
        png(acc.Images("hwc")[0].encoded_image_string) == torch_boxes(img, boxes, labels=["a", "b"])
    ).all()


def test_one_label_string_and_single_box(logdir):
    with SummaryWriter(logdir) as w:
        w.add_image_with_boxes("b", np.zeros((3, 32, 32)), np.array([4, 4, 28, 28]), labels="only")
    px = png(load_run(logdir).Images("b")[0].encoded_image_string)
    assert (px == torch_boxes(np.zeros((3, 32, 32)), [[4, 4, 28, 28]], labels=["only"])).all()


def test_rescale_reports_original_size(logdir):
    img = np.random.default_rng(1).random((3, 4, 5), dtype=np.float32)
    with SummaryWriter(logdir) as w:
        w.add_image_with_boxes("r", img, np.zeros((0, 4)), rescale=2)
    event = load_run(logdir).Images("r")[0]
    px = png(event.encoded_image_string)
    assert (event.height, event.width) == (4, 5) and px.shape == (8, 10, 3)
    assert (px == torch_boxes(img, np.zeros((0, 4)), rescale=2)).all()


def _figure(color: str):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 2), dpi=50)
    fig.patch.set_facecolor(color)
    return fig


def test_add_figure_size_colour_and_close(logdir):
    import matplotlib.pyplot as plt

    red, blue, kept = _figure("red"), _figure("blue"), _figure("green")
    with SummaryWriter(logdir) as w:
        w.add_figure("one", red, 1)
        w.add_figure("two", [_figure("red"), blue], 1)
        w.add_figure("kept", kept, 1, close=False)
    assert not plt.fignum_exists(red.number) and not plt.fignum_exists(blue.number)
    assert plt.fignum_exists(kept.number)
    plt.close(kept)
    acc = load_run(logdir)
    one = acc.Images("one")[0]
    assert (one.width, one.height) == (100, 100)
    assert (png(one.encoded_image_string) == [255, 0, 0]).all()
    two = acc.Images("two")[0]
    assert (two.width, two.height) == (200, 100)
    px = png(two.encoded_image_string)
    assert (px[:, :100] == [255, 0, 0]).all() and (px[:, 100:] == [0, 0, 255]).all()
    assert (png(acc.Images("kept")[0].encoded_image_string) == [0, 128, 0]).all()


def test_add_figure_matches_torch(logdir):
    import matplotlib.pyplot as plt
    from torch.utils.tensorboard._utils import figure_to_image
    from torch.utils.tensorboard.summary import image

    fig = plt.figure(figsize=(2, 1.5), dpi=40)
    plt.plot([0, 1, 2], [2, 0, 1])
    with SummaryWriter(logdir) as w:
        w.add_figure("f", fig, close=False)
    theirs = image("t", figure_to_image(fig), dataformats="CHW").value[0].image
    plt.close(fig)
    ours = load_run(logdir).Images("f")[0]
    assert (ours.width, ours.height) == (theirs.width, theirs.height) == (80, 60)
    assert (png(ours.encoded_image_string) == png(theirs.encoded_image_string)).all()


def gif_frames(encoded: bytes) -> tuple[list[np.ndarray], list[int], int | None]:
    """(RGB frames, per-frame durations in ms, loop count)."""
    frames, durations = [], []
    with Image.open(io.BytesIO(encoded)) as im:
        assert im.format == "GIF"
        loop = im.info.get("loop")
        for i in range(im.n_frames):
            im.seek(i)
            frames.append(np.asarray(im.convert("RGB")))
            durations.append(im.info["duration"])
    return frames, durations, loop


COLOURS = np.array(
    [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255]], dtype=np.uint8
)


def test_video_frames_fps_and_colours(logdir):
    # one video, 5 frames of 6x4 pixels, frame t filled with COLOURS[t]
    vid = np.broadcast_to(COLOURS[None, :, :, None, None], (1, 5, 3, 6, 4)).copy()
    with SummaryWriter(logdir) as w:
        w.add_video("v", vid, 2, fps=4)
        w.add_video("float", vid.astype(np.float32) / 255, 2, fps=10)
    acc = load_run(logdir)
    event = acc.Images("v")[0]
    assert (event.width, event.height) == (4, 6)
    ev = next(e for e in raw_events(logdir) if e.summary.value and e.summary.value[0].tag == "v")
    assert ev.summary.value[0].image.colorspace == 3 and ev.step == 2
    frames, durations, loop = gif_frames(event.encoded_image_string)
    assert len(frames) == 5 and durations == [250] * 5 and loop == 0
    for t, frame in enumerate(frames):
        assert (frame == COLOURS[t]).all()
    frames, durations, _ = gif_frames(acc.Images("float")[0].encoded_image_string)
    assert durations == [100] * 5 and [f[0, 0].tolist() for f in frames] == COLOURS.tolist()


@pytest.mark.parametrize(
    ("n", "rows", "cols"), [(1, 1, 1), (2, 1, 2), (3, 1, 4), (4, 2, 2), (5, 2, 4), (16, 4, 4)]
)
def test_video_batch_tiling(logdir, n, rows, cols):
    h, w = 3, 2
    vid = np.zeros((n, 2, 3, h, w), dtype=np.uint8)
    for k in range(n):
        vid[k] = COLOURS[k % 5][None, :, None, None]
    with SummaryWriter(logdir) as writer:
        writer.add_video("v", vid)
    event = load_run(logdir).Images("v")[0]
    assert (event.width, event.height) == (w * cols, h * rows)
    frames, _, _ = gif_frames(event.encoded_image_string)
    frame = frames[0]
    for k in range(rows * cols):
        r, c = divmod(k, cols)
        cell = frame[r * h : (r + 1) * h, c * w : (c + 1) * w]
        expected = COLOURS[k % 5] if k < n else [0, 0, 0]
        assert (cell == expected).all(), k


def test_gray_video(logdir):
    vid = np.zeros((1, 3, 1, 4, 4), dtype=np.float32)
    vid[0, 1] = 0.5
    vid[0, 2] = 1.0
    with SummaryWriter(logdir) as w:
        w.add_video("g", vid, fps=2)
    ev = next(e for e in raw_events(logdir) if e.summary.value)
    assert ev.summary.value[0].image.colorspace == 1
    frames, durations, _ = gif_frames(ev.summary.value[0].image.encoded_image_string)
    assert [int(f[0, 0, 0]) for f in frames] == [0, 127, 255] and durations == [500] * 3


def test_label_count_unlike_box_count_drops_the_labels_as_torch(logdir):
    """torch draws the boxes without labels; tallyboard also warns, at the caller's line."""
    import sys

    img = np.random.default_rng(1).random((3, 48, 64), dtype=np.float32) * 0.5
    boxes = np.array([[5, 5, 30, 40], [35, 8, 60, 30]])
    with SummaryWriter(logdir) as w, pytest.warns(UserWarning, match="2 boxes") as rec:
        w.add_image_with_boxes("b", img, boxes, labels=["only one"])
        line = sys._getframe().f_lineno - 1
    [warning] = [r for r in rec if "2 boxes" in str(r.message)]
    assert (warning.filename, warning.lineno) == (__file__, line)
    got = png(load_run(logdir).Images("b")[0].encoded_image_string)
    assert (got == torch_boxes(img, boxes)).all()  # what torch's add_image_with_boxes writes
