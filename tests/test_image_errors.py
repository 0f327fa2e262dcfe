"""Bad image input raises in the caller, naming the argument, and writes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_run, raw_events
from tallyboard import SummaryWriter

IMG = np.zeros((3, 4, 4), dtype=np.float32)


def _figure():
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1), dpi=10)


BAD_CALLS = [
    (
        "add_image",
        ("t", np.zeros((2, 3, 4, 4, 1))),
        {},
        ValueError,
        r"dataformats 'CHW' has 3 letters but img_tensor has 5",
    ),
    (
        "add_image",
        ("t", IMG),
        {"dataformats": "HWCX"},
        ValueError,
        "dataformats 'HWCX' must use distinct letters",
    ),
    ("add_image", ("t", IMG), {"dataformats": "HHW"}, ValueError, "distinct letters"),
    (
        "add_image",
        ("t", IMG),
        {"dataformats": "NHW"},
        ValueError,
        "dataformats 'NHW' must be a permutation",
    ),
    (
        "add_image",
        ("t", IMG),
        {"dataformats": "HW"},
        ValueError,
        "has 2 letters but img_tensor has 3",
    ),
    ("add_image", ("t", IMG), {"dataformats": 3}, TypeError, "dataformats must be a str"),
    ("add_image", ("t", np.zeros((5, 4, 4))), {}, ValueError, "img_tensor has 5 channels"),
    ("add_image", ("t", np.zeros((3, 0, 4))), {}, ValueError, "img_tensor is empty"),
    (
        "add_image",
        ("t", np.zeros((3, 4, 4), dtype=np.complex64)),
        {},
        TypeError,
        "img_tensor must hold real numbers",
    ),
    (
        "add_image",
        ("t", np.array([["a"]])),
        {"dataformats": "HW"},
        TypeError,
        "img_tensor must hold numbers",
    ),
    ("add_image", ("t", "not an image"), {}, TypeError, "img_tensor must be numeric"),
    ("add_image", (5, IMG), {}, TypeError, "tag must be a str"),
    ("add_image", ("t", IMG, 1.5), {}, TypeError, "global_step must be an int"),
    ("add_image", ("t", IMG, 1, float("nan")), {}, ValueError, "walltime must be finite"),
    (
        "add_images",
        ("t", IMG),
        {},
        ValueError,
        "dataformats 'NCHW' has 4 letters but img_tensor has 3",
    ),
    ("add_images", ("t", np.zeros((0, 3, 4, 4))), {}, ValueError, "img_tensor is empty"),
    ("add_images", ("t", np.zeros((2, 6, 4, 4))), {}, ValueError, "img_tensor has 6 channels"),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3]]),
        {},
        ValueError,
        r"box_tensor must have shape \(K, 4\)",
    ),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3, np.nan]]),
        {},
        ValueError,
        "box_tensor holds NaN",
    ),
    ("add_image_with_boxes", ("t", IMG, "box"), {}, TypeError, "box_tensor must be numeric"),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3, 4]]),
        {"labels": 7},
        TypeError,
        "labels must be a str",
    ),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3, 4]]),
        {"rescale": 0},
        ValueError,
        "rescale must be a finite",
    ),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3, 4]]),
        {"rescale": 0.1},
        ValueError,
        "shrinks the 4x4 image",
    ),
    (
        "add_image_with_boxes",
        ("t", IMG, [[1, 2, 3, 4]]),
        {"rescale": "2"},
        TypeError,
        "rescale must be a number",
    ),
    (
        "add_video",
        ("t", np.zeros((2, 3, 4, 4))),
        {},
        ValueError,
        r"vid_tensor must have shape \(N, T, C, H, W\)",
    ),
    ("add_video", ("t", np.zeros((1, 2, 4, 4, 4))), {}, ValueError, "vid_tensor has 4 channels"),
    ("add_video", ("t", np.zeros((1, 0, 3, 4, 4))), {}, ValueError, "vid_tensor is empty"),
    (
        "add_video",
        ("t", np.zeros((1, 2, 3, 4, 4))),
        {"fps": 0},
        ValueError,
        "fps must be a finite number > 0",
    ),
    (
        "add_video",
        ("t", np.zeros((1, 2, 3, 4, 4))),
        {"fps": None},
        TypeError,
        "fps must be a number",
    ),
    ("add_figure", ("t", np.zeros((3, 4, 4))), {}, TypeError, "figure must be a matplotlib Figure"),
    ("add_figure", ("t", []), {}, ValueError, "figure is an empty list"),
    (
        "add_value",
        ("image", "t", np.zeros((1, 1, 3, 4, 4))),
        {},
        ValueError,
        "value must be an HW, CHW or NCHW",
    ),
    ("add_value", ("image", "t", np.zeros((7, 4, 4))), {}, ValueError, "value has 7 channels"),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "error", "message"), BAD_CALLS)
def test_bad_input_raises_in_caller_and_writes_nothing(
    logdir, method, args, kwargs, error, message
):
    with SummaryWriter(logdir) as w:
        with pytest.raises(error, match=message):
            getattr(w, method)(*args, **kwargs)
        w.flush()
    assert [e for e in raw_events(logdir) if e.HasField("summary")] == []


def test_mixed_figure_sizes_rejected_and_good_values_kept(logdir):
    import matplotlib.pyplot as plt

    small, big = _figure(), plt.figure(figsize=(2, 1), dpi=10)
    with SummaryWriter(logdir) as w:
        w.add_image("ok", IMG, 0)
        with pytest.raises(
            ValueError, match="figure: every figure in the list must have the same pixel size"
        ):
            w.add_figure("t", [small, big])
        with pytest.raises(TypeError, match=r"figure\[1\] must be a matplotlib Figure"):
            w.add_figure("t", [_figure(), "x"])
        w.add_image("ok", IMG, 1)
    plt.close("all")
    assert [e.step for e in load_run(logdir).Images("ok")] == [0, 1]
    assert load_run(logdir).Tags()["images"] == ["ok"]
