"""PyTorch Lightning: TallyboardLogger, and Lightning's own TensorBoardLogger over tallyboard's writer."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import event_files, load_run, raw_events


def _hparams_plugin_data(acc: Any) -> dict[str, Any]:
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = acc.PluginTagToContent("hparams")
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(c) for tag, c in content.items()}


def _module(hidden: int = 8) -> Any:
    import lightning.pytorch as pl
    import torch

    class Tiny(pl.LightningModule):
        def __init__(self, lr: float = 0.05, hidden: int = 8, opt: dict | None = None) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
            )
            self.example_input_array = torch.zeros(2, 4)

        def forward(self, x: Any) -> Any:
            return self.net(x)

        def training_step(self, batch: Any, _: int) -> Any:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch: Any, _: int) -> None:
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self(x), y))

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Tiny(hidden=hidden, opt={"name": "sgd", "momentum": 0.0})


def _fit(logger: Any, steps: int = 6) -> Any:
    import lightning.pytorch as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    trainer = pl.Trainer(
        logger=logger,
        max_steps=steps,
        log_every_n_steps=1,
        limit_val_batches=2,
        val_check_interval=3,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    model = _module()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(num_workers|does not have many workers).*")
        # lightning 2.6 on torch 2.13: its own use of a deprecated torch pytree name
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`")
        # a csv sink keeps scalars only: hparams and graphs stay in the event files
        warnings.filterwarnings("ignore", message="sink 'csv' cannot encode kind")
        trainer.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=4))
    return trainer


def test_trainer_writes_scalars_hparams_and_graph_through_tallyboard_logger(tmp_path: Path) -> None:
    from tallyboard_lightning import TallyboardLogger

    logger = TallyboardLogger(tmp_path, log_graph=True)
    _fit(logger)
    assert logger.version == 0
    assert Path(logger.log_dir) == tmp_path / "lightning_logs" / "version_0"
    acc = load_run(logger.log_dir)
    train = acc.Scalars("train_loss")
    assert [e.step for e in train] == [0, 1, 2, 3, 4, 5]
    assert all(e.value > 0 for e in train)
    assert len(acc.Scalars("val_loss")) == 2
    assert [e.value for e in acc.Scalars("hp_metric")] == [-1.0]
    data = _hparams_plugin_data(acc)
    hparams = data["_hparams_/session_start_info"].session_start_info.hparams
    assert hparams["lr"].number_value == 0.05
    assert hparams["hidden"].number_value == 8
    assert hparams["opt/name"].string_value == "sgd"  # nested dicts flattened
    # no experiment summary: TensorBoard takes the metrics from the run's own curves
    assert "_hparams_/experiment" not in data
    graph = acc.Graph()
    assert any(node.op == "aten::linear" for node in graph.node)


def test_versions_increment_and_name_version_subdir(tmp_path: Path) -> None:
    from tallyboard_lightning import TallyboardLogger

    first = TallyboardLogger(tmp_path, name="exp")
    first.log_metrics({"a": 1.0}, step=0)
    first.finalize("success")
    second = TallyboardLogger(tmp_path, name="exp")
    assert (second.version, second.root_dir) == (1, str(tmp_path / "exp"))
    named = TallyboardLogger(tmp_path, name="", version="trial", sub_dir="fold0")
    assert named.log_dir == str(tmp_path / "trial" / "fold0")
    named.log_metrics({"m": 2.0, "group": {"x": 1.0, "y": 2.0}}, step=3)
    named.finalize("success")
    assert [e.value for e in load_run(named.log_dir).Scalars("m")] == [2.0]
    assert [e.value for e in load_run(Path(named.log_dir) / "group_x").Scalars("group")] == [1.0]


def test_sinks_reach_trainer_logs_and_ranks_above_zero_write_nothing(tmp_path: Path) -> None:
    import csv

    from lightning.pytorch.utilities.rank_zero import rank_zero_only
    from tallyboard_lightning import TallyboardLogger

    logger = TallyboardLogger(tmp_path, sinks=["tfevents", "csv"], default_hp_metric=False)
    _fit(logger, steps=3)
    with open(Path(logger.log_dir) / "scalars.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows if r["tag"] == "train_loss"] == ["0", "1", "2"]
    assert "hp_metric" not in {r["tag"] for r in rows}

    other = TallyboardLogger(tmp_path / "rank1")
    rank_zero_only.rank = 1
    try:
        other.experiment.add_scalar("x", 1.0, 0)  # the no-op experiment
        other.log_metrics({"x": 1.0}, step=0)
        other.log_hyperparams({"lr": 0.1})
        other.finalize("success")
    finally:
        rank_zero_only.rank = 0
    assert not (tmp_path / "rank1").exists()


def test_bad_arguments_raise_in_the_caller(tmp_path: Path) -> None:
    from tallyboard_lightning import TallyboardLogger

    with pytest.raises(TypeError, match="save_dir"):
        TallyboardLogger(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="version"):
        TallyboardLogger(tmp_path, version=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name"):
        TallyboardLogger(tmp_path, name="../outside")
    logger = TallyboardLogger(tmp_path)
    with pytest.raises(TypeError, match="params"):
        logger.log_hyperparams(["lr"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value"):
        logger.log_metrics({"loss": "high"}, step=0)
    with pytest.raises(ValueError, match="sinks"):
        TallyboardLogger(tmp_path, sinks=["nowhere"]).experiment  # noqa: B018
    logger.finalize("success")


def test_lightning_tensorboard_logger_runs_on_tallyboard_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorBoardLogger imports torch's SummaryWriter when it starts; point that at tallyboard's."""
    import tallyboard
    import torch.utils.tensorboard
    from lightning.pytorch.loggers import TensorBoardLogger

    monkeypatch.setattr(torch.utils.tensorboard, "SummaryWriter", tallyboard.SummaryWriter)
    logger = TensorBoardLogger(tmp_path, log_graph=True)
    _fit(logger)
    assert isinstance(logger.experiment, tallyboard.SummaryWriter)
    acc = load_run(logger.log_dir)
    assert len(acc.Scalars("train_loss")) == 6
    assert [e.value for e in acc.Scalars("hp_metric")] == [-1.0]
    data = _hparams_plugin_data(acc)  # written through _get_file_writer().add_summary(...)
    assert (
        data["_hparams_/session_start_info"].session_start_info.hparams["lr"].number_value == 0.05
    )
    assert [m.name.tag for m in data["_hparams_/experiment"].experiment.metric_infos] == [
        "hp_metric"
    ]
    assert any(node.op == "aten::linear" for node in acc.Graph().node)
    [events] = [f for f in event_files(logger.log_dir)]
    assert events.name.startswith("events.out.tfevents.")
    assert raw_events(logger.log_dir)[0].source_metadata.writer == "tallyboard"


def test_tallyboard_and_its_registry_import_neither_lightning_nor_transformers(
    tmp_path: Path,
) -> None:
    code = (
        "import sys, tallyboard\n"
        f"tallyboard.SummaryWriter({str(tmp_path)!r}).close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'lightning', 'pytorch_lightning', 'transformers', 'ray', 'optuna', 'accelerate'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_tensorboard_hparams_tab_shows_each_runs_own_metrics(tmp_path: Path) -> None:
    """A real TensorBoard: two versions, each session's metric values are its own last losses."""
    import time

    from tallyboard_lightning import TallyboardLogger
    from tb_server import tensorboard_server

    last = {}
    for _ in range(2):
        logger = TallyboardLogger(tmp_path)
        _fit(logger, steps=3)
        last[f"lightning_logs/version_{logger.version}"] = (
            load_run(logger.log_dir).Scalars("train_loss")[-1].value
        )
    body = {
        "experimentName": "",
        "allowedStatuses": ["STATUS_SUCCESS"],
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 100,
    }
    with tensorboard_server(tmp_path) as tb:
        deadline = time.monotonic() + 30
        while True:
            groups = tb.post_json("/data/plugin/hparams/session_groups", body).get(
                "sessionGroups", []
            )
            if len(groups) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        experiment = tb.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
    assert {m["name"]["tag"] for m in experiment["metricInfos"]} == {
        "epoch",
        "hp_metric",
        "train_loss",
        "val_loss",
    }
    seen = {}
    for group in groups:
        [session] = group["sessions"]
        values = {v["name"]["tag"]: v["value"] for v in session["metricValues"]}
        assert group["hparams"]["lr"] == 0.05
        seen[session["name"]] = values["train_loss"]
    assert seen == pytest.approx(last)


def test_standalone_pytorch_lightning_trainer_takes_the_logger(tmp_path: Path) -> None:
    import pytorch_lightning
    import torch
    from tallyboard_lightning import TallyboardLogger
    from torch.utils.data import DataLoader, TensorDataset

    class Tiny(pytorch_lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(4, 1)

        def training_step(self, batch: Any, _: int) -> Any:
            loss = torch.nn.functional.mse_loss(self.net(batch[0]), batch[1])
            self.log("loss", loss)
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    logger = TallyboardLogger(tmp_path)
    trainer = pytorch_lightning.Trainer(
        logger=logger,
        max_steps=3,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    data = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(num_workers|does not have many workers).*")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`")
        trainer.fit(Tiny(), data)
    assert [e.step for e in load_run(logger.log_dir).Scalars("loss")] == [0, 1, 2]
