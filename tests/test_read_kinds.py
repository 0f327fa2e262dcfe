"""tallyboard.read for histograms, text and images: tallyboard, torch and tensorboardX files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from conftest import load_run
from tallyboard import SummaryWriter, read


def _writers() -> list[tuple[str, type]]:
    import tensorboardX
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    return [
        ("tallyboard", SummaryWriter),
        ("torch", TorchWriter),
        ("tbx", tensorboardX.SummaryWriter),
    ]


def test_histograms_match_event_accumulator(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for name, cls in _writers():
        w = cls(str(tmp_path / name))
        for step in range(3):
            w.add_histogram("w", rng.normal(size=200) + step, step)
        w.close()
    df = read(str(tmp_path), kind="histogram")
    assert sorted(df["run"].unique()) == ["tallyboard", "tbx", "torch"]
    for name, _ in _writers():
        got = df[df.run == name].sort_values("step")
        want = load_run(tmp_path / name).Histograms("w")
        assert got["step"].tolist() == [e.step for e in want] == [0, 1, 2]
        for (_, row), ev in zip(got.iterrows(), want):
            h = ev.histogram_value
            assert (row["min"], row["max"], row["num"]) == (h.min, h.max, h.num)
            assert (row["sum"], row["sum_squares"]) == (h.sum, h.sum_squares)
            assert row["bucket_limit"] == list(h.bucket_limit)
            assert row["bucket"] == list(h.bucket)
            assert row["wall_time"] == ev.wall_time


def test_text_round_trip(tmp_path: Path) -> None:
    for name, cls in _writers():
        w = cls(str(tmp_path / name))
        w.add_text("note", "hello **world**", 1)
        w.add_text("note", "ünïcode", 2)
        w.close()
    df = read(str(tmp_path), kind="text")
    for name, _ in _writers():
        got = df[df.run == name].sort_values("step")
        assert got["value"].tolist() == ["hello **world**", "ünïcode"], name
        assert got["step"].tolist() == [1, 2]
        tags = set(got["tag"])
        acc_tags = set(load_run(tmp_path / name).Tags()["tensors"])
        assert tags <= acc_tags, (tags, acc_tags)
    # text values never leak into the scalar table
    assert read(str(tmp_path)).empty


def test_images_metadata_and_bytes_decode_on_demand(tmp_path: Path) -> None:
    from PIL import Image

    img = np.zeros((3, 5, 7), np.uint8)
    img[0, 1, 2] = 255
    for name, cls in _writers()[:2]:
        w = cls(str(tmp_path / name))
        w.add_image("pic", img, 4)
        w.close()
    df = read(str(tmp_path), kind="image", table="arrow").to_pandas()
    assert sorted(df["run"]) == ["tallyboard", "torch"]
    for name in ("tallyboard", "torch"):
        row = df[df.run == name].iloc[0]
        want = load_run(tmp_path / name).Images("pic")[0]
        assert (row["width"], row["height"], row["step"]) == (7, 5, 4)
        assert (want.width, want.height) == (7, 5)
        assert row["colorspace"] == 3
        assert row["data"] == want.encoded_image_string
        pixels = np.asarray(Image.open(io.BytesIO(row["data"])))
        assert pixels.shape == (5, 7, 3) and pixels[1, 2, 0] == 255 and pixels.sum() == 255


def test_unknown_kind_is_refused_naming_the_kinds(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("x", 1.0, 0)
    with pytest.raises(ValueError, match=r"unknown kind 'nothing-such'; the kinds .*: anf_graph"):
        read(str(tmp_path), kind="nothing-such")


def test_audio_round_trip_tallyboard_and_torch(tmp_path: Path) -> None:
    import wave

    snd = (np.sin(np.arange(800) / 5.0) * 0.5).astype(np.float32)
    for name, cls in _writers()[:2]:
        w = cls(str(tmp_path / name))
        w.add_audio("sound", snd, 2, sample_rate=8000)
        w.close()
    df = read(str(tmp_path), kind="audio")
    for name in ("tallyboard", "torch"):
        row = df[df.run == name].iloc[0]
        want = load_run(tmp_path / name).Audio("sound")[0]
        assert (row["sample_rate"], row["step"]) == (8000.0, 2)
        assert row["data"] == want.encoded_audio_string
        with wave.open(io.BytesIO(row["data"])) as wav:
            assert wav.getframerate() == 8000 and wav.getnframes() == 800


def test_tensor_round_trip_matches_tensor_util(tmp_path: Path) -> None:
    from tensorboard.util import tensor_util

    arrays = {
        "f": np.arange(6, dtype=np.float32).reshape(2, 3),
        "i": np.array([[1], [-2]], dtype=np.int64),
        "s": np.array(["a", "bé"]),
    }
    with SummaryWriter(str(tmp_path)) as w:
        for tag, arr in arrays.items():
            w.add_tensor(tag, arr, 3)
    df = read(str(tmp_path), kind="tensor")
    acc = load_run(tmp_path)
    for tag, arr in arrays.items():
        row = df[df.tag == tag].iloc[0]
        want = tensor_util.make_ndarray(acc.Tensors(tag)[0].tensor_proto)
        assert row["shape"] == list(arr.shape) and row["step"] == 3
        if arr.dtype.kind == "U":
            assert row["value"].tolist() == arr.tolist() == [s.decode() for s in want.tolist()]
        else:
            assert row["dtype"] == arr.dtype.name
            assert np.array_equal(row["value"], arr) and np.array_equal(want, arr)


def test_hparams_one_row_per_run_with_final_metrics(tmp_path: Path) -> None:
    for name, cls in _writers()[:2]:
        w = cls(str(tmp_path / name))
        w.add_hparams({"lr": 0.1, "opt": "adam", "deep": True}, {"acc": 0.75}, run_name="h")
        w.close()
    df = read(str(tmp_path), kind="hparams")
    assert sorted(df["run"]) == ["tallyboard/h", "torch/h"]
    for _, row in df.iterrows():
        assert (row["lr"], row["opt"], row["deep"], row["acc"]) == (0.1, "adam", True, 0.75)


def test_hparams_final_metrics_come_from_long_runs_decoded_in_bulk(tmp_path: Path) -> None:
    # 300 same-length loss records are decoded in bulk: the final value must still be found
    with SummaryWriter(str(tmp_path / "trial")) as w:
        for step in range(300):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_hparams({"lr": 0.01}, {"best": 0.5}, own_run=True)
    (row,) = read(str(tmp_path), kind="hparams").to_dict("records")
    assert row["run"] == "trial" and row["lr"] == 0.01 and row["best"] == 0.5
    assert abs(row["loss"] - 1.0 / 300) < 1e-6
