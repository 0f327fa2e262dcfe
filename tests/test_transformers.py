"""Hugging Face transformers: TallyboardCallback, and the built-in TensorBoardCallback on tallyboard's writer."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is fetched from the hub; no progress bars."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)


class _Tokens:
    """Made-up token sequences: the model learns to predict them."""

    def __init__(self, n: int, seq: int = 8, vocab: int = 64) -> None:
        import torch

        self.ids = torch.randint(0, vocab, (n, seq), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _train(tmp_path: Path, callbacks: list[Any], steps: int = 4) -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=steps,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        learning_rate=1e-3,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=GPT2LMHeadModel(config),
        args=args,
        train_dataset=_Tokens(16),
        eval_dataset=_Tokens(4),
        callbacks=callbacks,
    )
    with warnings.catch_warnings():
        # a csv sink keeps scalars only: text and hparams stay in the event files
        warnings.filterwarnings("ignore", message="sink 'csv' cannot encode kind")
        trainer.train()
    return trainer


def _hparams_plugin_data(acc: Any) -> dict[str, Any]:
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = acc.PluginTagToContent("hparams")
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(c) for tag, c in content.items()}


def _text(acc: Any, tag: str) -> str:
    [event] = acc.Tensors(tag)
    return event.tensor_proto.string_val[0].decode()


def test_trainer_logs_through_tallyboard_callback(tmp_path: Path) -> None:
    from tallyboard_transformers import TallyboardCallback

    run = tmp_path / "run"
    _train(tmp_path, [TallyboardCallback(run)])
    acc = load_run(run)
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2, 3, 4]
    assert len(acc.Scalars("train/learning_rate")) == 4
    assert [e.step for e in acc.Scalars("eval/loss")] == [2, 4]
    assert json.loads(_text(acc, "args/text_summary"))["max_steps"] == 4
    assert json.loads(_text(acc, "model_config/text_summary"))["n_layer"] == 2
    data = _hparams_plugin_data(acc)
    start = data["_hparams_/session_start_info"].session_start_info.hparams
    assert start["learning_rate"].number_value == 1e-3
    assert "_hparams_/experiment" not in data  # TensorBoard infers it from every session
    assert data["_hparams_/session_end_info"].session_end_info.status == 1  # STATUS_SUCCESS


def test_default_log_dir_sinks_and_no_write_off_process_zero(tmp_path: Path) -> None:
    import csv

    from tallyboard_transformers import TallyboardCallback

    _train(tmp_path, [TallyboardCallback(sinks=["tfevents", "csv"])], steps=2)
    [run] = (tmp_path / "out" / "runs").iterdir()  # <output_dir>/runs/<time>_<host>, as HF
    with open(run / "scalars.csv", newline="") as f:
        tags = {row["tag"] for row in csv.DictReader(f)}
    assert {"train/loss", "eval/loss"} <= tags
    assert len(load_run(run).Scalars("train/loss")) == 2

    from transformers import TrainerControl, TrainerState, TrainingArguments

    callback = TallyboardCallback(tmp_path / "rank1")
    state = TrainerState(is_world_process_zero=False, global_step=1)
    args = TrainingArguments(output_dir=str(tmp_path / "out1"), report_to=[])
    callback.on_train_begin(args, state, TrainerControl())
    callback.on_log(args, state, TrainerControl(), logs={"loss": 1.0})
    callback.on_train_end(args, state, TrainerControl())
    assert not (tmp_path / "rank1").exists()


def test_logs_are_not_flushed_after_every_log(tmp_path: Path) -> None:
    from tallyboard_transformers import TallyboardCallback
    from transformers import TrainerControl, TrainerState, TrainingArguments

    callback = TallyboardCallback(tmp_path / "run", max_queue=1000)
    state = TrainerState(global_step=0)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    control = TrainerControl()
    for step in range(1, 4):
        state.global_step = step
        callback.on_log(args, state, control, logs={"loss": 1.0 / step})
    assert not load_run(tmp_path / "run").Tags()["scalars"]  # still batched in memory
    callback.on_evaluate(args, state, control, metrics={})
    assert len(load_run(tmp_path / "run").Scalars("train/loss")) == 3
    callback.on_train_end(args, state, control)


def test_bad_arguments_raise_clearly(tmp_path: Path) -> None:
    from tallyboard_transformers import TallyboardCallback

    with pytest.raises(TypeError, match="log_dir must be a str"):
        TallyboardCallback(log_dir=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nowhere"):
        TallyboardCallback(tmp_path, sinks=["nowhere"])
    with pytest.raises(TypeError, match="sinks must be a list"):
        TallyboardCallback(tmp_path, sinks="csv")


def test_builtin_tensorboard_callback_takes_tallyboard_writer(tmp_path: Path) -> None:
    from tallyboard import SummaryWriter
    from transformers.integrations import TensorBoardCallback

    run = tmp_path / "builtin"
    _train(tmp_path, [TensorBoardCallback(tb_writer=SummaryWriter(run))])
    acc = load_run(run)
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2, 3, 4]
    assert [e.step for e in acc.Scalars("eval/loss")] == [2, 4]
    assert json.loads(_text(acc, "model_config/text_summary"))["n_embd"] == 32
    assert os.listdir(run)  # one event file, closed by the callback at train end


def test_each_hyperparameter_search_trial_gets_its_own_run(tmp_path: Path) -> None:
    from tallyboard_transformers import TallyboardCallback
    from transformers import TrainerControl, TrainerState, TrainingArguments

    callback = TallyboardCallback(tmp_path / "search")
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    for trial in ("t0", "t1"):
        state = TrainerState(global_step=1, is_hyper_param_search=True, trial_name=trial)
        callback.on_train_begin(args, state, TrainerControl())
        callback.on_log(args, state, TrainerControl(), logs={"loss": 0.5})
        callback.on_train_end(args, state, TrainerControl())
        acc = load_run(tmp_path / "search" / trial)
        assert [e.value for e in acc.Scalars("train/loss")] == [0.5]
        assert "_hparams_/session_start_info" in acc.PluginTagToContent("hparams")
    state = TrainerState(is_hyper_param_search=True, trial_name="../escape")
    with pytest.raises(ValueError, match="trial_name"):
        callback.on_train_begin(args, state, TrainerControl())
    assert not (tmp_path / "escape").exists()
