"""TallyboardLogger beside Lightning's TensorBoardLogger on the same training: what both write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import load_run

STATUS_SUCCESS, STATUS_FAILURE = 1, 2

HPARAMS = {
    "lr": 0.05,
    "hidden": 8,
    "scheduler": None,  # TensorBoardLogger shows it as the string "None"
    "opt": {"name": "sgd", "momentum": 0.0},
    "stages": [{"epochs": 1}, {"epochs": 2}],
    "tags": [1, 2],
}

_MODULE = """
import lightning.pytorch as pl
import torch


class Tiny(pl.LightningModule):
    def __init__(self, lr=0.05, hidden=8, scheduler=None, opt=None, stages=None, tags=None,
                 fail_at=-1, kill_at=-1):
        super().__init__()
        self.save_hyperparameters(ignore=["fail_at", "kill_at"])
        self.fail_at, self.kill_at = fail_at, kill_at
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        )

    def training_step(self, batch, index):
        if self.global_step == self.fail_at:
            raise RuntimeError("the training step failed")
        if self.global_step == self.kill_at:
            import os, signal
            os.kill(os.getpid(), signal.SIGKILL)
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def fit(logger, steps=6, **kwargs):
    import warnings
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    trainer = pl.Trainer(
        logger=logger, max_steps=steps, log_every_n_steps=1, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1,
    )
    model = Tiny(**kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(num_workers|does not have many workers).*")
        warnings.filterwarnings("ignore", message=r"`isinstance\\(treespec, LeafSpec\\)`")
        trainer.fit(model, DataLoader(data, batch_size=4))
    return trainer
"""


@pytest.fixture(scope="module")
def lit(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The module above, importable (the SIGKILL test runs it in a child process too)."""
    folder = tmp_path_factory.mktemp("litmod")
    (folder / "litmod.py").write_text(_MODULE)
    sys.path.insert(0, str(folder))
    try:
        import litmod

        yield litmod
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("litmod", None)


def _plugin_data(acc: Any) -> dict[str, Any]:
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = acc.PluginTagToContent("hparams")
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(c) for tag, c in content.items()}


def _session_hparams(acc: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    start = _plugin_data(acc)["_hparams_/session_start_info"].session_start_info
    return {k: MessageToDict(v) for k, v in start.hparams.items()}


def _both(tmp_path: Path, lit: Any, **kwargs: Any) -> tuple[Any, Any, Exception | None]:
    """Fit the same model once with each logger; (theirs, ours, the error fit raised)."""
    from lightning.pytorch.loggers import TensorBoardLogger
    from tallyboard_lightning import TallyboardLogger

    theirs = TensorBoardLogger(tmp_path / "theirs")
    ours = TallyboardLogger(tmp_path / "ours")
    error = None
    for logger in (theirs, ours):
        try:
            lit.fit(logger, **HPARAMS, **kwargs)
        except RuntimeError as exc:
            error = exc
    return theirs, ours, error


def test_hparams_yaml_values_and_scalars_match_tensorboard_logger(tmp_path: Path, lit: Any) -> None:
    theirs, ours, error = _both(tmp_path, lit)
    assert error is None
    their_yaml = Path(theirs.log_dir, "hparams.yaml")
    our_yaml = Path(ours.log_dir, "hparams.yaml")
    assert our_yaml.read_text() == their_yaml.read_text()
    assert yaml.safe_load(our_yaml.read_text())["scheduler"] is None
    their_acc, our_acc = load_run(theirs.log_dir), load_run(ours.log_dir)
    expected = _session_hparams(their_acc)
    assert expected["scheduler"] == "None" and expected["stages/1/epochs"] == 2
    assert _session_hparams(our_acc) == expected
    for tag in ("train_loss", "hp_metric", "epoch"):
        mine = [(e.step, e.value) for e in our_acc.Scalars(tag)]
        assert mine == [(e.step, e.value) for e in their_acc.Scalars(tag)], tag
    end = _plugin_data(our_acc)["_hparams_/session_end_info"].session_end_info
    assert end.status == STATUS_SUCCESS


def test_a_fit_that_raised_ends_its_session_as_failed(tmp_path: Path, lit: Any) -> None:
    theirs, ours, error = _both(tmp_path, lit, fail_at=2)
    assert error is not None and "the training step failed" in str(error)
    their_end = _plugin_data(load_run(theirs.log_dir))["_hparams_/session_end_info"]
    assert their_end.session_end_info.status == STATUS_SUCCESS  # TensorBoardLogger: wrong
    acc = load_run(ours.log_dir)
    assert _plugin_data(acc)["_hparams_/session_end_info"].session_end_info.status == (
        STATUS_FAILURE
    )
    assert [e.step for e in acc.Scalars("train_loss")] == [0, 1]  # nothing lost


def test_a_run_killed_by_sigkill_has_its_hparams_as_with_tensorboard_logger(
    tmp_path: Path, lit: Any
) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {os.path.dirname(lit.__file__)!r})
        import litmod
        from lightning.pytorch.loggers import TensorBoardLogger
        from tallyboard_lightning import TallyboardLogger
        logger = (TensorBoardLogger if sys.argv[1] == "theirs" else TallyboardLogger)(sys.argv[2])
        litmod.fit(logger, lr=0.05, hidden=8, scheduler=None, kill_at=3)
        """
    )
    dirs = {}
    for which in ("theirs", "ours"):
        out = subprocess.run(
            [sys.executable, "-c", script, which, str(tmp_path / which)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
        dirs[which] = tmp_path / which / "lightning_logs" / "version_0"
    for which, folder in dirs.items():
        assert yaml.safe_load((folder / "hparams.yaml").read_text()) == {
            "lr": 0.05,
            "hidden": 8,
            "scheduler": None,
            "opt": None,
            "stages": None,
            "tags": None,
        }, which
    assert _session_hparams(load_run(dirs["ours"])) == _session_hparams(load_run(dirs["theirs"]))
    assert _session_hparams(load_run(dirs["ours"]))["lr"] == 0.05


def test_save_writes_at_most_every_save_secs_not_after_every_step(tmp_path: Path, lit: Any) -> None:
    from tallyboard_lightning import TallyboardLogger

    counts = {}
    for save_secs in (0, 3600):
        logger = TallyboardLogger(tmp_path / str(save_secs), save_secs=save_secs)
        flushes = []
        real = logger.experiment.flush

        def counting_flush(real: Any = real, flushes: list[int] = flushes) -> None:
            flushes.append(1)
            real()

        logger.experiment.flush = counting_flush  # type: ignore[method-assign]
        lit.fit(logger, steps=6)
        counts[save_secs] = len(flushes)
        assert [e.step for e in load_run(logger.log_dir).Scalars("train_loss")] == list(range(6))
    assert counts[0] >= 6  # TensorBoardLogger's behaviour: a flush per logging step
    assert counts[3600] == 1  # only the one that puts the hparams on disk at the start


@pytest.mark.parametrize(
    ("value", "error"),
    [("5", TypeError), (True, TypeError), (-1, ValueError), (float("nan"), ValueError)],
)
def test_bad_save_secs_is_refused_by_name(tmp_path: Path, value: Any, error: type) -> None:
    from tallyboard_lightning import TallyboardLogger

    with pytest.raises(error, match="save_secs"):
        TallyboardLogger(tmp_path, save_secs=value)


def test_hparams_none_is_kept_with_warnings_quiet(tmp_path: Path, lit: Any) -> None:
    """log_hyperparams called directly (no Trainer): None kept as "None", yaml written."""
    from tallyboard_lightning import TallyboardLogger

    logger = TallyboardLogger(tmp_path, default_hp_metric=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logger.log_hyperparams({"a": None, "b": {"c": 1}})
    assert yaml.safe_load(Path(logger.log_dir, "hparams.yaml").read_text()) == {
        "a": None,
        "b": {"c": 1},
    }
    logger.finalize("success")
    assert _session_hparams(load_run(logger.log_dir)) == {"a": "None", "b/c": 1.0}
