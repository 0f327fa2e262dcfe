"""add_hparams: read back with TensorBoard's own hparams protos."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2


def _hparams(run: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ev in raw_events(run):
        for v in ev.summary.value:
            if v.metadata.plugin_data.plugin_name == "hparams":
                assert not v.HasField("tensor") and not v.HasField("simple_value")
                out[v.tag] = plugin_data_pb2.HParamsPluginData.FromString(
                    v.metadata.plugin_data.content
                )
    return out


def test_child_run_types_and_metrics(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_hparams(
            {
                "lr": 0.1,
                "bs": np.int64(32),
                "opt": "adam",
                "aug": True,
                "drop": np.float32(0.5),
                "t": torch.tensor(3.0),
                "skip": None,
            },
            {"acc": 0.9, "loss": np.float32(0.25)},
            hparam_domain_discrete={"opt": ["adam", "sgd"], "aug": [True, False]},
            run_name="trial1",
            global_step=7,
        )
    assert not _hparams(logdir)  # the parent run gets nothing
    data = _hparams(logdir / "trial1")
    exp = data["_hparams_/experiment"].experiment
    types = {h.name: h.type for h in exp.hparam_infos}
    assert types == {
        "lr": api_pb2.DATA_TYPE_FLOAT64,
        "bs": api_pb2.DATA_TYPE_FLOAT64,
        "opt": api_pb2.DATA_TYPE_STRING,
        "aug": api_pb2.DATA_TYPE_BOOL,
        "drop": api_pb2.DATA_TYPE_FLOAT64,
        "t": api_pb2.DATA_TYPE_FLOAT64,
    }
    domains = {
        h.name: [getattr(v, v.WhichOneof("kind")) for v in h.domain_discrete.values]
        for h in exp.hparam_infos
    }
    assert (
        domains["opt"] == ["adam", "sgd"]
        and domains["aug"] == [True, False]
        and domains["lr"] == []
    )
    assert [m.name.tag for m in exp.metric_infos] == ["acc", "loss"]
    start = data["_hparams_/session_start_info"].session_start_info.hparams
    assert start["aug"].bool_value is True and start["aug"].WhichOneof("kind") == "bool_value"
    assert start["bs"].number_value == 32 and start["opt"].string_value == "adam"
    assert (
        start["drop"].number_value == 0.5 and start["t"].number_value == 3.0 and "skip" not in start
    )
    assert data["_hparams_/session_end_info"].session_end_info.status == api_pb2.STATUS_SUCCESS
    steps = {v.tag: ev.step for ev in raw_events(logdir / "trial1") for v in ev.summary.value}
    assert set(steps.values()) == {7}
    acc = load_run(logdir / "trial1")
    assert acc.Scalars("acc")[0].value == pytest.approx(0.9) and acc.Scalars("loss")[0].step == 7


def test_default_run_name_is_a_time(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_hparams({"a": 1}, {"m": 2.0})
    (child,) = [p for p in logdir.iterdir() if p.is_dir()]
    assert math.isfinite(float(child.name))
    assert "_hparams_/experiment" in _hparams(child)


def test_own_run_attaches_hparams_to_the_run_curves(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_hparams({"lr": 0.01}, {"loss": None, "acc": 0.75}, global_step=2, own_run=True)
    assert [p for p in logdir.iterdir() if p.is_dir()] == []
    data = _hparams(logdir)
    assert [m.name.tag for m in data["_hparams_/experiment"].experiment.metric_infos] == [
        "loss",
        "acc",
    ]
    acc = load_run(logdir)
    assert [e.step for e in acc.Scalars("loss")] == [0, 1, 2]  # None declares, writes nothing more
    assert acc.Scalars("acc")[0].value == 0.75
    with pytest.raises(ValueError, match="run_name"), SummaryWriter(logdir) as w:
        w.add_hparams({"lr": 0.01}, {}, run_name="x", own_run=True)


@pytest.mark.parametrize(
    ("hparams", "metrics", "error", "match"),
    [
        ({"lr": [0.1]}, {}, TypeError, "hparam_dict\\['lr'\\]"),
        ({"lr": object()}, {}, TypeError, "'lr'"),
        ({"lr": torch.tensor([])}, {}, ValueError, "'lr'"),
        ({1: 0.1}, {}, TypeError, "keys"),
        ({"lr": 0.1}, {"acc": "high"}, TypeError, "metric_dict\\['acc'\\]"),
        ({"lr": 0.1}, {"acc": [1.0, 2.0]}, ValueError, "metric_dict\\['acc'\\]"),
        ({"n": 2**60}, {}, ValueError, "'n'"),
    ],
)
def test_bad_values_name_the_key(
    logdir: Path, hparams: dict[Any, Any], metrics: dict[str, Any], error: type, match: str
) -> None:
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_hparams(hparams, metrics, run_name="bad")
    assert not (logdir / "bad").exists()


def test_bad_containers_and_domains(logdir: Path) -> None:
    class D(dict):  # type: ignore[type-arg]
        pass

    with SummaryWriter(logdir) as w:
        with pytest.raises(TypeError, match="hparam_dict"):
            w.add_hparams(D(a=1), {})
        with pytest.raises(TypeError, match="metric_dict"):
            w.add_hparams({"a": 1}, [("m", 1)])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="hparam_domain_discrete\\['opt'\\]"):
            w.add_hparams({"opt": "adam"}, {}, hparam_domain_discrete={"opt": ["adam", 3]})
        with pytest.raises(ValueError, match="names no hparam"):
            w.add_hparams({"opt": "adam"}, {}, hparam_domain_discrete={"other": ["x"]})
        with pytest.raises(TypeError, match="global_step"):
            w.add_hparams({"a": 1}, {}, global_step=1.5)
    assert [p for p in logdir.iterdir() if p.is_dir()] == []


@pytest.mark.parametrize(
    "run_name", ["../../../ESC3", "/abs/ESC3", "a/../../ESC3", "..", "a\0b", "C:\\x"]
)
def test_run_name_cannot_escape(tmp_path: Path, run_name: str) -> None:
    logdir = tmp_path / "a" / "b" / "logdir"
    with SummaryWriter(logdir) as w, pytest.raises(ValueError, match="run_name"):
        w.add_hparams({"a": 1}, {"m": 1.0}, run_name=run_name)
    assert sorted(p.name for p in tmp_path.rglob("*") if "ESC3" in p.name) == []
    assert [p for p in logdir.iterdir() if p.is_dir()] == []


def test_nested_run_name_stays_inside(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_hparams({"a": 1}, {"m": 1.0}, run_name="sweep/t1")
    assert "_hparams_/session_start_info" in _hparams(logdir / "sweep" / "t1")


def test_add_value_with_ready_plugin_data(logdir: Path) -> None:
    content = plugin_data_pb2.HParamsPluginData(version=0)
    content.session_start_info.hparams["x"].number_value = 4.0
    with SummaryWriter(logdir) as w:
        w.add_value("hparams", "_hparams_/session_start_info", content)
        w.add_value("hparams", "_hparams_/session_end_info", b"\x22\x02\x08\x01")
        with pytest.raises(TypeError, match="HParamsPluginData"):
            w.add_value("hparams", "t", {"x": 1})
    data = _hparams(logdir)
    assert data["_hparams_/session_start_info"].session_start_info.hparams["x"].number_value == 4.0
    assert data["_hparams_/session_end_info"].session_end_info.status == api_pb2.STATUS_SUCCESS


def test_matches_torch_layout(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    hp, metrics = {"lr": 0.1, "opt": "sgd", "n": 3}, {"acc": 0.5}
    with TorchWriter(tmp_path / "t") as tw:
        tw.add_hparams(hp, metrics, run_name="r", global_step=2)
    with SummaryWriter(tmp_path / "p") as w:
        w.add_hparams(hp, metrics, run_name="r", global_step=2)
    ours, theirs = _hparams(tmp_path / "p" / "r"), _hparams(tmp_path / "t" / "r")
    assert ours == theirs
