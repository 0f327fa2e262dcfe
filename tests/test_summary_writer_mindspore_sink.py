"""The mindspore sink used from the SummaryWriter face: the torch-style kinds' payloads encode."""

from __future__ import annotations

import io
from pathlib import Path

import mindspore_reader as msr
import numpy as np
from conftest import load_run
from PIL import Image
from tallyboard import SummaryWriter


def test_summary_writer_writes_mindspore_and_tensorboard_files_with_the_same_data(
    logdir: Path,
) -> None:
    img = np.zeros((3, 4, 6), np.float32)
    img[0] = 1.0  # red
    with SummaryWriter(logdir, sinks=["tfevents", "mindspore"]) as w:
        w.add_scalar("loss", 0.25, 3)
        w.add_histogram("h", np.array([1.0, 2.0, 3.0]), 3)
        w.add_image("img", img, 3)
    (ms_file,) = [p for p in logdir.iterdir() if p.name.endswith("_MS")]
    values = {tag: (step, value) for step, tag, _, value in msr.values(ms_file)}
    assert values["loss"][0] == 3 and values["loss"][1] == 0.25
    step, h = values["h"]
    assert step == 3 and (h.count, h.min, h.max, h.sum) == (3, 1.0, 3.0, 6.0)
    assert sum(b.count for b in h.buckets) == 3
    tb_hist = load_run(logdir).Histograms("h")[0].histogram_value
    assert [b.left + b.width for b in h.buckets] == list(tb_hist.bucket_limit)[1:]
    _, image = values["img"]
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image)))
    assert (image.height, image.width) == (4, 6) and pixels[0, 0].tolist() == [255, 0, 0]
    assert load_run(logdir).Scalars("loss")[0].value == 0.25


def test_mindspore_sink_creates_a_log_dir_that_does_not_exist_yet(tmp_path: Path) -> None:
    log_dir = tmp_path / "new" / "run"
    with SummaryWriter(str(log_dir), sinks=["mindspore"]) as w:
        w.add_scalar("loss", 0.5, 3)
    (path,) = [p for p in log_dir.iterdir() if ".out.events.summary." in p.name]
    assert [(step, tag, value) for step, tag, _, value in msr.values(path)] == [(3, "loss", 0.5)]


def test_a_histogram_with_values_below_its_first_limit_keeps_them_in_mindspore(
    tmp_path: Path,
) -> None:
    with SummaryWriter(str(tmp_path), sinks=["mindspore"]) as w:
        w.add_histogram_raw("h", -3.0, 3.0, 10, 0.0, 10.0, [0.0, 1.0, 3.0], [4, 3, 3], 1)
    (path,) = [p for p in tmp_path.iterdir() if ".out.events.summary." in p.name]
    ((_, tag, _, hist),) = msr.values(path)
    buckets = [(b.left, b.width, b.count) for b in hist.buckets]
    assert tag == "h" and buckets == [(-3.0, 3.0, 4), (0.0, 1.0, 3), (1.0, 2.0, 3)]
    assert sum(b[2] for b in buckets) == hist.count == 10
