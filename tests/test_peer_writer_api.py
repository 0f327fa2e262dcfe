"""The peers' writer API that people rely on: torch's public ``file_writer`` and tensorboardX's
``write_to_disk=False``, ``export_scalars_to_json``, ``add_hparams(..., name)``, ``logdir=`` and
``add_images`` of a list, each side by side with the peer that has it."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
import tensorboardX
from PIL import Image
from tallyboard import SummaryWriter
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto.summary_pb2 import Summary
from torch.utils.tensorboard import SummaryWriter as TorchWriter


def _acc(path) -> EventAccumulator:
    acc = EventAccumulator(str(path), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    return acc


def test_file_writer_is_public_as_in_torch_and_none_once_closed(tmp_path):
    ours, theirs = SummaryWriter(tmp_path / "ours"), TorchWriter(str(tmp_path / "torch"))
    for writer in (ours, theirs):
        assert writer.file_writer is not None
        assert writer.file_writer.get_logdir() == str(writer.get_logdir())
        summary = Summary(value=[Summary.Value(tag="raw", simple_value=2.5)])
        writer.file_writer.add_summary(summary, 7)
        writer.close()
        assert writer.file_writer is None
    for name in ("ours", "torch"):
        assert [(e.step, e.value) for e in _acc(tmp_path / name).Scalars("raw")] == [(7, 2.5)]
    ours.add_scalar("after", 1.0, 0)  # an add_* after close() opens the run again, as in torch
    assert ours.file_writer is not None
    ours.close()


def test_write_to_disk_false_checks_every_call_and_writes_nothing(tmp_path):
    for cls, name in ((SummaryWriter, "ours"), (tensorboardX.SummaryWriter, "tbx")):
        with cls(str(tmp_path / name), write_to_disk=False) as writer:
            writer.add_scalar("loss", 1.0, 0)
            writer.add_scalars("acc", {"a": 1.0}, 0)
            writer.add_histogram("h", np.arange(10.0), 0)
        assert not (tmp_path / name).exists()
    with SummaryWriter(tmp_path / "ours", write_to_disk=False) as writer, pytest.raises(TypeError):
        writer.add_scalar("loss", "not a number", 0)  # still checked in the call
    with pytest.raises(TypeError, match="write_to_disk must be a bool"):
        SummaryWriter(tmp_path / "x", write_to_disk="no")


def test_logdir_is_accepted_as_tensorboardx_names_it(tmp_path):
    with SummaryWriter(logdir=str(tmp_path / "run")) as writer:
        writer.add_scalar("loss", 1.0, 0)
    assert len(_acc(tmp_path / "run").Scalars("loss")) == 1
    with pytest.raises(ValueError, match="not both"):
        SummaryWriter(tmp_path / "a", logdir=str(tmp_path / "b"))


def test_export_scalars_to_json_writes_what_tensorboardx_writes(tmp_path):
    exported = {}
    for cls, name in ((SummaryWriter, "ours"), (tensorboardX.SummaryWriter, "tbx")):
        with cls(str(tmp_path / name)) as writer:
            writer.add_scalar("not_exported", 1.0, 0)
            for step in range(3):
                writer.add_scalars("loss", {"train": 0.5 * step, "val": np.float32(step)}, step)
            writer.export_scalars_to_json(str(tmp_path / f"{name}.json"))
            writer.add_scalars("loss", {"train": 9.0}, 3)
            writer.export_scalars_to_json(str(tmp_path / f"{name}2.json"))
        for part in ("", "2"):
            data = json.loads((tmp_path / f"{name}{part}.json").read_text())
            exported[name, part] = {
                os.path.relpath(key, tmp_path / name): [[s, v] for _, s, v in rows]
                for key, rows in data.items()
            }
    assert exported["ours", ""] == exported["tbx", ""]
    assert exported["ours", "2"] == exported["tbx", "2"] == {"loss/train": [[3, 9.0]]}


def test_add_hparams_takes_tensorboardx_name_positionally_and_by_keyword(tmp_path):
    for cls, name in ((SummaryWriter, "ours"), (tensorboardX.SummaryWriter, "tbx")):
        with cls(str(tmp_path / name)) as writer:
            writer.add_hparams({"lr": 0.1}, {"hparam/acc": 0.5}, "trial_a")
            writer.add_hparams({"lr": 0.2}, {"hparam/acc": 0.7}, name="trial_b")
        for trial, acc in (("trial_a", 0.5), ("trial_b", 0.7)):
            got = _acc(tmp_path / name / trial)
            assert got.Scalars("hparam/acc")[0].value == pytest.approx(acc)
            assert "_hparams_/session_start_info" in got.summary_metadata
    with SummaryWriter(tmp_path / "x") as writer, pytest.raises(ValueError, match="not both"):
        writer.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name="a", name="b")


def test_add_images_of_a_list_draws_what_tensorboardx_draws(tmp_path):
    rng = np.random.default_rng(0)
    chw = [rng.random((3, 8, 6)).astype(np.float32) for _ in range(3)]
    hwc = [np.transpose(img, (1, 2, 0)) for img in chw]
    pixels = {}
    for cls, name in ((SummaryWriter, "ours"), (tensorboardX.SummaryWriter, "tbx")):
        with cls(str(tmp_path / name)) as writer:
            writer.add_images("chw", chw, 0, dataformats="CHW")
            writer.add_images("hwc", hwc, 0, dataformats="HWC")
        acc = _acc(tmp_path / name)
        for tag in ("chw", "hwc"):
            encoded = acc.Images(tag)[0].encoded_image_string
            pixels[name, tag] = np.asarray(Image.open(io.BytesIO(encoded)).convert("RGB"))
    assert pixels["ours", "chw"].shape == pixels["tbx", "chw"].shape
    for tag in ("chw", "hwc"):
        assert np.array_equal(pixels["ours", tag], pixels["tbx", tag])
    with SummaryWriter(tmp_path / "bad") as writer:
        with pytest.raises(ValueError, match="share one shape"):
            writer.add_images("x", [np.zeros((3, 4, 4)), np.zeros((3, 5, 4))], 0, dataformats="CHW")
        with pytest.raises(ValueError, match="empty list"):
            writer.add_images("x", [], 0, dataformats="CHW")
