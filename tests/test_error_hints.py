"""Errors that can name the fix do: a likely layout for images, videos, meshes, boxes, audio and
label images; a tag and a value passed in each other's place; a missing extra's install line.

Where a message suggests a ``dataformats``, the test makes the call again as suggested and reads
the image back with TensorBoard's reader: the suggestion is the fix, not a guess.
"""

from __future__ import annotations

import re
import sys

import matplotlib
import numpy as np
import pytest
from conftest import load_run
from tallyboard import SummaryRecord, SummaryWriter
from tallyboard.extras import MissingExtra

matplotlib.use("Agg")


@pytest.fixture
def writer(logdir):
    with SummaryWriter(logdir) as w:
        yield w


def suggested_format(message: str) -> str:
    found = re.search(r"pass dataformats='(\w+)'", message)
    assert found, message
    return found.group(1)


@pytest.mark.parametrize(
    "method, shape, given, expected",
    [
        ("add_image", (12, 10, 3), "CHW", "HWC"),  # the issue's case: an HWC image, torch's default
        ("add_image", (12, 10, 4), "chw", "HWC"),
        ("add_image", (3, 12, 10), "HWC", "CHW"),
        ("add_images", (2, 12, 10, 3), "NCHW", "NHWC"),
        ("add_images", (2, 3, 12, 10), "NHWC", "NCHW"),
        ("add_image", (12, 10), "CHW", "HW"),  # letters do not match the axes
        ("add_images", (3, 12, 10), "NCHW", "CHW"),
        ("add_images", (12, 10, 3), "NCHW", "HWC"),
    ],
)
def test_a_likely_image_layout_is_suggested_and_works(
    writer, logdir, method, shape, given, expected
):
    img = np.full(shape, 0.5, dtype=np.float32)
    add = getattr(writer, method)
    with pytest.raises(ValueError) as info:
        add("img", img, 0, dataformats=given)
    assert suggested_format(str(info.value)) == expected
    add("img", img, 1, dataformats=expected)
    writer.flush()
    [image] = load_run(logdir).Images("img")
    columns = shape[0] if len(expected) == 4 else 1  # a batch is gridded side by side
    assert (image.step, image.height, image.width) == (1, 12, 10 * columns)


def test_an_hwc_image_with_boxes_suggests_dataformats(writer):
    with pytest.raises(ValueError, match=r"pass dataformats='HWC'"):
        writer.add_image_with_boxes("img", np.zeros((12, 10, 3)), [[1, 1, 5, 5]], 0)


def test_a_batch_given_to_add_image_points_to_add_images(writer):
    with pytest.raises(ValueError, match=r"a batch of images goes to add_images"):
        writer.add_image("img", np.zeros((8, 3, 12, 10)), 0)


def test_a_gray_batch_given_to_add_images_suggests_a_channel_axis(writer, logdir):
    batch = np.zeros((10, 12, 10))
    with pytest.raises(ValueError, match=re.escape("add the channel axis, img_tensor[:, None]")):
        writer.add_images("img", batch, 0)
    writer.add_images("img", batch[:, None], 0)
    writer.flush()
    [image] = load_run(logdir).Images("img")
    assert (image.height, image.width) == (24, 80)  # 8 columns, 2 rows


@pytest.mark.parametrize("method", ["add_image", "add_images", "add_image_with_boxes"])
def test_dataformats_passed_as_global_step_says_to_pass_it_by_keyword(writer, method):
    args = [[[0, 0, 1, 1]]] if method == "add_image_with_boxes" else []
    img = np.zeros((12, 10, 3) if method != "add_images" else (2, 12, 10, 3))
    fmt = "HWC" if method != "add_images" else "NHWC"
    with pytest.raises(
        TypeError, match=rf"pass it by keyword, {method}\(\.\.\., dataformats='{fmt}'\)"
    ):
        getattr(writer, method)("img", img, *args, fmt)


def test_boxes_one_per_column_suggest_transposing(writer):
    boxes = np.array([[1, 2], [1, 2], [5, 6], [5, 6]])  # x1, y1, x2, y2 rows: (4, K)
    with pytest.raises(ValueError, match=r"one box per column; pass box_tensor\.T"):
        writer.add_image_with_boxes("img", np.zeros((3, 12, 10)), boxes, 0)
    writer.add_image_with_boxes("img", np.zeros((3, 12, 10)), boxes.T, 0)


def test_a_channels_last_video_suggests_the_transpose(writer, logdir):
    video = np.zeros((1, 4, 12, 10, 3))  # N, T, H, W, C
    with pytest.raises(ValueError, match=re.escape("np.transpose(vid_tensor, (0, 1, 4, 2, 3))")):
        writer.add_video("vid", video, 0)
    writer.add_video("vid", np.transpose(video, (0, 1, 4, 2, 3)), 0)
    writer.flush()
    [image] = load_run(logdir).Images("vid")
    assert (image.height, image.width) == (12, 10)


def test_one_video_without_batch_axis_suggests_adding_it(writer):
    with pytest.raises(ValueError, match=re.escape("add the batch axis, vid_tensor[None]")):
        writer.add_video("vid", np.zeros((4, 3, 12, 10)), 0)
    writer.add_video("vid", np.zeros((4, 3, 12, 10))[None], 0)


def test_one_mesh_without_batch_axis_suggests_adding_it(writer):
    points = np.zeros((10, 3))
    with pytest.raises(ValueError, match=re.escape("add the batch axis, vertices[None]")):
        writer.add_mesh("mesh", points, global_step=0)
    writer.add_mesh("mesh", points[None], global_step=0)


def test_mesh_points_per_column_suggest_the_transpose(writer):
    with pytest.raises(ValueError, match=re.escape("np.transpose(colors, (0, 2, 1))")):
        writer.add_mesh("mesh", np.zeros((1, 10, 3)), colors=np.zeros((1, 3, 10)))


def test_channels_last_label_images_suggest_the_transpose(writer, logdir):
    mat = np.zeros((4, 2))
    label_img = np.zeros((4, 8, 6, 3))  # N, H, W, C
    with pytest.raises(ValueError, match=re.escape("np.transpose(label_img, (0, 3, 1, 2))")):
        writer.add_embedding(mat, label_img=label_img)
    assert not (logdir / "projector_config.pbtxt").exists()  # nothing written on error
    writer.add_embedding(mat, label_img=np.transpose(label_img, (0, 3, 1, 2)))
    assert (logdir / "00000" / "default" / "sprite.png").exists()


def test_embedding_tag_given_first_says_mat_comes_first(writer):
    with pytest.raises(TypeError, match=re.escape("add_embedding(mat, tag='words')")):
        writer.add_embedding("words", np.zeros((4, 2)))


def test_channels_first_stereo_suggests_the_transpose(writer):
    sound = np.zeros((2, 100))
    with pytest.raises(ValueError, match=r"\(2, L\), pass snd_tensor\.T"):
        writer.add_audio("snd", sound, 0)
    writer.add_audio("snd", sound.T, 0)


def _figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([0, 1])
    return fig


SWAPPED = [
    ("add_scalar", "scalar_value", lambda: 0.5),
    ("add_histogram", "values", lambda: np.arange(5.0)),
    ("add_text", "text_string", lambda: 3),
    ("add_image", "img_tensor", lambda: np.zeros((3, 4, 4))),
    ("add_images", "img_tensor", lambda: np.zeros((2, 3, 4, 4))),
    ("add_figure", "figure", _figure),
    ("add_video", "vid_tensor", lambda: np.zeros((1, 2, 3, 4, 4))),
    ("add_audio", "snd_tensor", lambda: np.zeros(100)),
    ("add_tensor", "tensor", lambda: np.zeros(3)),
    ("add_pr_curve", "labels", lambda: np.array([0, 1])),
    ("add_mesh", "vertices", lambda: np.zeros((1, 3, 3))),
]


@pytest.mark.parametrize("method, value_arg, value", SWAPPED, ids=[s[0] for s in SWAPPED])
def test_swapped_tag_and_value_say_so(writer, logdir, method, value_arg, value):
    extra = [np.array([0.2, 0.9])] if method == "add_pr_curve" else []
    with pytest.raises(TypeError) as info:
        getattr(writer, method)(value(), "loss", *extra)
    message = str(info.value)
    assert message.startswith(f"tag and {value_arg} look swapped: tag got "), message
    assert (
        f"{value_arg} got the str 'loss'; the tag comes first: {method}(tag, {value_arg}" in message
    )


def test_swapped_scalar_names_the_issues_example(writer):
    with pytest.raises(TypeError) as info:
        writer.add_scalar(1.0, "loss", 0)
    assert str(info.value) == (
        "tag and scalar_value look swapped: tag got float 1.0 and scalar_value got the str "
        "'loss'; the tag comes first: add_scalar(tag, scalar_value, ...)"
    )


def test_a_long_value_or_array_tag_is_shown_short(writer):
    with pytest.raises(TypeError) as info:
        writer.add_histogram(np.zeros((100, 100)), "x" * 500)
    message = str(info.value)
    assert "tag got ndarray of shape (100, 100)" in message and len(message) < 300


def test_swapped_add_scalars_arguments_say_so(writer):
    with pytest.raises(TypeError, match=r"main_tag and tag_scalar_dict look swapped"):
        writer.add_scalars({"train": 0.5}, "loss", 0)


def test_swapped_scalar_value_and_step_say_so(writer):
    with pytest.raises(TypeError, match=r"scalar_value and global_step look swapped"):
        writer.add_scalar("loss", 3, 0.25)
    with pytest.raises(TypeError, match=r"^global_step must be an int, got float 2\.0$"):
        writer.add_scalar("loss", 3, 2.0)  # a whole float step is no sign of a swap


def test_a_non_str_tag_with_a_number_is_not_called_a_swap(writer):
    with pytest.raises(TypeError, match=r"^tag must be a str, got int: 3$"):
        writer.add_scalar(3, 0.5, 0)


def test_summary_record_add_value_plugin_and_name_swapped_say_so(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        with pytest.raises(ValueError, match=re.escape("call add_value('scalar', 'loss', value)")):
            record.add_value("loss", "scalar", np.float32(1.0))
        with pytest.raises(ValueError, match=r"name and value look swapped, name got float32 1\.0"):
            record.add_value("scalar", np.float32(1.0), "loss")
        with pytest.raises(ValueError, match=r"no such \"plugin\" of 'lost' , expect") as info:
            record.add_value("lost", "loss", np.float32(1.0))
        assert "swapped" not in str(info.value)  # nothing recognised: MindSpore's message as is


def test_add_figure_without_matplotlib_names_the_extra(writer, monkeypatch):
    for name in [m for m in sys.modules if m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(MissingExtra) as info:
        writer.add_figure("fig", object(), 0)
    assert str(info.value) == (
        "add_figure needs matplotlib, which is not installed: "
        'pip install "tallyboard[figures]" (from a checkout: pip install ".[figures]")'
    )


def test_a_plugins_missing_extra_names_its_own_distribution() -> None:
    from tallyboard.extras import require

    with pytest.raises(MissingExtra) as info:
        require("no_such_module_xyz", "plots", "confusion charts", distribution="tb-confusion")
    assert str(info.value) == (
        "confusion charts needs no_such_module_xyz, which is not installed: "
        'pip install "tb-confusion[plots]"'
    )
