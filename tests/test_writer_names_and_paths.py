"""Names that cannot be written and names that would leave the log dir (issue 19, writing side).

A name holding a lone surrogate is refused in the call that gives it, so nothing accepted before
is lost at ``close()``; a ``comment`` or a sub-run name cannot place files outside the log dir,
not even through a symlink, while a log dir that is itself a symlink keeps working.
"""

from __future__ import annotations

import io
import os
import wave
from pathlib import Path

import numpy as np
import pytest
from conftest import load_run, raw_events
from mindspore_reader import values
from tallyboard import SummaryRecord, SummaryWriter
from tallyboard.faces.ops import ScalarSummary

BAD = "bad\ud800"


def _ms_file(log_dir: Path) -> Path:
    (path,) = [p for p in log_dir.iterdir() if p.name.endswith("_MS")]
    return path


def _scalar_steps(log_dir: Path, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in load_run(log_dir).Scalars(tag)]


@pytest.mark.parametrize(
    "plugin, value",
    [
        ("scalar", 2.0),  # the hot path: a float pooled as is
        ("scalar", np.float32(2.0)),
        ("scalar", np.array(2.0)),
        ("scalar", 2),  # the general path
        ("tensor", np.ones(2)),
        ("histogram", np.ones(3)),
        ("image", np.zeros((1, 3, 2, 2))),
    ],
)
def test_summary_record_refuses_unwritable_name_and_loses_nothing(
    logdir: Path, plugin: str, value: object
) -> None:
    with SummaryRecord(str(logdir), tensorboard=True) as record:
        record.add_value("scalar", "loss", 1.0)
        record.record(1)
        with pytest.raises(ValueError, match="name 'bad.ud800' cannot be written as UTF-8"):
            record.add_value(plugin, BAD, value)
        record.add_value("scalar", "loss", 3.0)
        record.record(3)
        record.add_value("scalar", "h\u00e9", 4.0)  # non-ASCII but writable
        record.record(4)
    got = [(step, tag, v) for step, tag, _, v in values(_ms_file(logdir))]
    assert got == [(1, "loss", 1.0), (3, "loss", 3.0), (4, "h\u00e9", 4.0)]
    assert _scalar_steps(logdir, "loss") == [(1, 1.0), (3, 3.0)]  # the TensorBoard mirror


def test_summary_record_refuses_unwritable_landscape_and_kind_names(logdir: Path) -> None:
    with SummaryRecord(str(logdir)) as record:
        with pytest.raises(ValueError, match="name"):
            record.add_value("text", BAD, "hello")  # a kind another plugin registered
        record.add_value("scalar", "loss", 1.0)
        record.record(1)
    assert [step for step, *_ in values(_ms_file(logdir))] == [1]


def test_summary_operator_refuses_unwritable_name(logdir: Path) -> None:
    with SummaryRecord(str(logdir)) as record:
        with pytest.raises(ValueError, match="name"):
            ScalarSummary()(BAD, np.array(1.0, dtype=np.float32))
        ScalarSummary()("loss", np.array(1.0, dtype=np.float32))
        record.record(1)
    assert [(s, t) for s, t, _, _ in values(_ms_file(logdir))] == [(1, "loss")]


# -- values the call accepted and a flush could not write ---------------------------------------


def test_audio_sample_rate_beyond_a_wav_header_is_refused_in_the_call(logdir: Path) -> None:
    from tallyboard_audio.convert import MAX_SAMPLE_RATE

    with SummaryWriter(str(logdir)) as w:
        w.add_scalar("before", 1.0, 1)
        for rate in (1e12, MAX_SAMPLE_RATE + 1, 2**64):
            with pytest.raises(ValueError, match="sample_rate"):
                w.add_audio("a", np.zeros(8), 1, sample_rate=rate)
        w.add_audio("a", np.zeros((8, 2)), 2, sample_rate=MAX_SAMPLE_RATE)  # stereo at the limit
        w.flush()
    acc = load_run(logdir)
    assert [e.step for e in acc.Scalars("before")] == [1]
    (audio,) = acc.Audio("a")
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getnframes()) == (MAX_SAMPLE_RATE, 2, 8)


def test_video_fps_below_a_gif_frame_is_refused_in_the_call(logdir: Path) -> None:
    from PIL import Image
    from tallyboard_image.convert import MIN_FPS

    video = np.zeros((1, 2, 3, 4, 4))
    with SummaryWriter(str(logdir)) as w:
        for fps in (1e-9, MIN_FPS / 2, 0.0):
            with pytest.raises(ValueError, match="fps"):
                w.add_video("v", video, 1, fps=fps)
        w.add_video("v", video, 2, fps=MIN_FPS)  # the slowest a GIF can hold
        w.flush()
    (image,) = load_run(logdir).Images("v")
    gif = Image.open(io.BytesIO(image.encoded_image_string))
    assert gif.info["duration"] == 655350


def test_slow_video_of_frames_the_palette_makes_identical_still_encodes(logdir: Path) -> None:
    """Pillow merges frames equal once quantized, summing their durations past a GIF's limit."""
    from PIL import Image
    from tallyboard_image.convert import MIN_FPS

    rng = np.random.default_rng(0)
    first = rng.integers(0, 256, (3, 32, 32), dtype=np.uint8)
    second = first.copy()
    second[0, 0, 0] ^= 1  # differs in RGB, not after the palette
    video = np.stack([first, second])[None].astype(np.float32) / 255
    with SummaryWriter(str(logdir)) as w:
        w.add_video("v", video, 1, fps=MIN_FPS)
        w.flush()
    (image,) = load_run(logdir).Images("v")
    gif = Image.open(io.BytesIO(image.encoded_image_string))
    assert gif.info["duration"] <= 655350


def test_string_tensor_with_lone_surrogate_is_refused_in_the_call(logdir: Path) -> None:
    from tensorboard.util import tensor_util

    with SummaryWriter(str(logdir)) as w:
        with pytest.raises(ValueError, match=r"tensor\[1\]\[0\] 'bad.ud800'"):
            w.add_tensor("t", np.array([["ok"], [BAD]]), 1)
        with pytest.raises(ValueError, match=r"tensor\[1\]"):
            w.add_tensor("t", ["ok", BAD], 1)
        w.add_tensor("t", np.array(["ok", "h\u00e9"]), 2)
        w.flush()
    (event,) = load_run(logdir).Tensors("t")
    assert event.step == 2
    assert tensor_util.make_ndarray(event.tensor_proto).tolist() == [b"ok", "h\u00e9".encode()]


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda w: w.add_text("t", BAD), "text_string"),
        (lambda w: w.add_scalars("m", {BAD: 1.0}), "tag_scalar_dict key"),
        (lambda w: w.add_hparams({BAD: 1.0}, {"m": 1.0}), "hparam_dict key"),
        (lambda w: w.add_hparams({"k": BAD}, {"m": 1.0}), "hparam_dict['k']"),
        (lambda w: w.add_hparams({"k": "a"}, {BAD: 1.0}), "metric_dict key"),
        (
            lambda w: w.add_hparams({"k": "a"}, {"m": 1.0}, {"k": ["a", BAD]}),
            "hparam_domain_discrete['k']",
        ),
        (lambda w: w.add_hparams({"k": 1.0}, {"m": 1.0}, run_name=BAD), "run_name"),
        (lambda w: w.add_custom_scalars({"c": {BAD: ["Multiline", ["s"]]}}), "chart title"),
        (lambda w: w.add_custom_scalars({"c": {"t": ["Multiline", ["s", BAD]]}}), "tags[1]"),
        (lambda w: w.add_custom_scalars_marginchart(["a", "b", "c"], category=BAD), "category"),
        (lambda w: w.add_embedding(np.eye(2), metadata=["a", BAD]), "metadata[1]"),
        (
            lambda w: w.add_embedding(np.eye(2), [["a"], ["b"]], metadata_header=[BAD]),
            "metadata_header[0]",
        ),
        (
            lambda w: w.add_image_with_boxes(
                "b", np.zeros((3, 8, 8)), np.array([[0, 0, 2, 2]]), labels=[BAD]
            ),
            "labels[0]",
        ),
    ],
)
def test_unwritable_strings_are_refused_naming_the_argument(
    logdir: Path, call: object, arg: str
) -> None:
    with SummaryWriter(str(logdir)) as w:
        w.add_scalar("before", 1.0, 1)
        with pytest.raises(ValueError, match="cannot be written as UTF-8|lone surrogate") as info:
            call(w)  # type: ignore[operator]
        assert arg in str(info.value)
        w.add_scalar("before", 2.0, 2)
    assert [e.step for e in load_run(logdir).Scalars("before")] == [1, 2]
    assert not [p for p in logdir.rglob("*") if "\\ud800" in repr(p.name)]


# -- paths ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("comment", ["/../../../x", "/x", "\\..\\x", "_a/b", "\x00", "_" + BAD])
def test_comment_cannot_place_the_run_outside_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comment: str
) -> None:
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    with pytest.raises(ValueError, match="comment"):
        SummaryWriter(comment=comment)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert not (cwd / "runs").exists()


def test_comment_still_ends_the_default_run_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1 b\u00e9ta") as w:
        w.add_scalar("x", 1.0, 1)
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.endswith("_lr0.1 b\u00e9ta")
    assert [e.value for e in load_run(run).Scalars("x")] == [1.0]


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


def test_sub_run_through_a_symlink_out_of_the_log_dir_is_refused(tmp_path: Path) -> None:
    logdir = tmp_path / "run"
    logdir.mkdir()
    outside = _outside(tmp_path)
    os.symlink(outside, logdir / "loss_train")  # add_scalars' sub-run for key "train"
    os.symlink(outside, logdir / "trial")  # add_hparams' run_name
    os.symlink(outside, logdir / "00000")  # add_embedding's step folder
    (logdir / "deep").mkdir()
    os.symlink(outside, logdir / "deep" / "x")  # a link further down the path
    with SummaryWriter(str(logdir)) as w:
        w.add_scalar("before", 1.0, 1)
        with pytest.raises(ValueError, match=r"tag_scalar_dict key 'train'.*symlink"):
            w.add_scalars("loss", {"train": 1.0, "val": 2.0}, 1)
        with pytest.raises(ValueError, match="run_name 'trial'.*symlink"):
            w.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name="trial")
        with pytest.raises(ValueError, match="run_name 'deep/x/y'.*symlink"):
            w.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name="deep/x/y")
        with pytest.raises(ValueError, match="tag.*symlink"):
            w.add_embedding(np.eye(2), global_step=0, tag="e")
        w.add_scalar("before", 2.0, 2)
    assert list(outside.iterdir()) == []
    assert not (logdir / "loss_val").exists()  # the call wrote none of its sub-runs
    assert [e.step for e in load_run(logdir).Scalars("before")] == [1, 2]


def test_a_symlink_that_stays_inside_the_log_dir_is_followed(tmp_path: Path) -> None:
    logdir = tmp_path / "run"
    (logdir / "elsewhere").mkdir(parents=True)
    os.symlink(logdir / "elsewhere", logdir / "loss_train")
    with SummaryWriter(str(logdir)) as w:
        w.add_scalars("loss", {"train": 1.0}, 1)
    assert [e.value for e in load_run(logdir / "elsewhere").Scalars("loss")] == [1.0]


def test_a_log_dir_that_is_a_symlink_keeps_working(tmp_path: Path) -> None:
    disk = tmp_path / "other_disk" / "runs"
    disk.mkdir(parents=True)
    link = tmp_path / "run"
    os.symlink(disk, link)
    with SummaryWriter(str(link)) as w:
        w.add_scalar("x", 1.0, 1)
        w.add_scalars("loss", {"train": 2.0}, 1)
        w.add_hparams({"lr": 0.1}, {"m": 3.0}, run_name="trial")
        w.add_embedding(np.eye(2), global_step=0, tag="e")
    assert [e.value for e in load_run(disk).Scalars("x")] == [1.0]
    assert [e.value for e in load_run(disk / "loss_train").Scalars("loss")] == [2.0]
    assert any(v.tag == "m" for e in raw_events(disk / "trial") for v in e.summary.value)
    assert (disk / "00000" / "e" / "tensors.tsv").is_file()
    assert (disk / "projector_config.pbtxt").is_file()
