"""Accelerate: TallyboardTracker beside Accelerate's own TensorBoardTracker on one Accelerator."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import load_run

CONFIG = {"lr": 0.1, "epochs": 2, "optimizer": "sgd", "warmup": None}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from accelerate import Accelerator
    from accelerate.tracking import TensorBoardTracker
    from tallyboard_accelerate import TallyboardTracker

    tmp = tmp_path_factory.mktemp("accelerate")
    accelerator = Accelerator(
        cpu=True,
        log_with=[
            TensorBoardTracker("run", tmp / "theirs"),
            TallyboardTracker("run", tmp / "ours"),
        ],
    )
    accelerator.init_trackers("run", config=CONFIG)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=CONFIG["lr"])
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(6):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.log(
            {"loss": loss.item(), "grad_steps": step, "split": {"train": 1.0 * step}}, step=step
        )
    accelerator.log({"note": "done"}, step=6)
    accelerator.end_training()
    return tmp


def test_scalars_and_text_match_tensorboard_tracker(trained: Path) -> None:
    theirs, ours = load_run(trained / "theirs" / "run"), load_run(trained / "ours" / "run")
    for tag in ("loss", "grad_steps"):
        assert [(e.step, e.value) for e in ours.Scalars(tag)] == [
            (e.step, e.value) for e in theirs.Scalars(tag)
        ]
    assert len(ours.Scalars("loss")) == 6
    [mine], [their] = ours.Tensors("note/text_summary"), theirs.Tensors("note/text_summary")
    assert mine.tensor_proto.string_val == their.tensor_proto.string_val


def test_config_is_this_runs_hparams_and_hparams_yml(trained: Path) -> None:
    """TensorBoardTracker puts the config in a separate run named after the time (no metrics
    there) and hparams.yml in another; ours attaches them to the run itself."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = load_run(trained / "ours" / "run").PluginTagToContent("hparams")
    data = {k: plugin_data_pb2.HParamsPluginData.FromString(v) for k, v in content.items()}
    start = data["_hparams_/session_start_info"].session_start_info.hparams
    assert start["lr"].number_value == 0.1 and start["optimizer"].string_value == "sgd"
    assert start["warmup"].string_value == "None"  # kept, where TensorBoardTracker drops it
    assert data["_hparams_/session_end_info"].session_end_info.status == 1  # success
    assert yaml.safe_load((trained / "ours" / "run" / "hparams.yml").read_text()) == CONFIG
    [their_yml] = (trained / "theirs" / "run").glob("*/hparams.yml")
    assert yaml.safe_load(their_yml.read_text()) == CONFIG
    import tallyboard

    table = tallyboard.read(str(trained / "ours"), kind="hparams")
    [row] = table.to_dict("records")
    assert (
        row["run"] == "run"
        and row["lr"] == 0.1
        and row["loss"]
        == pytest.approx(load_run(trained / "ours" / "run").Scalars("loss")[-1].value)
    )


def test_bad_values_are_refused_before_any_is_written(tmp_path: Path) -> None:
    from tallyboard_accelerate import TallyboardTracker

    with pytest.raises(TypeError, match="run_name"):
        TallyboardTracker("", tmp_path)
    with pytest.raises(ValueError, match="run_name"):
        TallyboardTracker("../escape", tmp_path)
    with pytest.raises(TypeError, match="logging_dir"):
        TallyboardTracker("run", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no-such-sink"):
        TallyboardTracker("run", tmp_path, sinks=["no-such-sink"])
    tracker = TallyboardTracker("run", tmp_path)
    tracker.start()
    tracker.log({"loss": 1.0}, step=0)
    with pytest.raises(TypeError, match=r"values\['bad'\]"):
        tracker.log({"acc": 0.5, "bad": [1, 2]}, step=1)
    tracker.finish()
    acc = load_run(tmp_path / "run")
    assert [e.step for e in acc.Scalars("loss")] == [0]
    assert "acc" not in acc.Tags()["scalars"]  # nothing of the refused call was written
    assert not (tmp_path.parent / "escape").exists()
