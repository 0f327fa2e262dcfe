"""Trainer integrations, side by side in one process, end to end (every record on disk).

- Hugging Face: ``on_log`` with a typical logs dict (loss, grad_norm, learning_rate, epoch),
  TallyboardCallback vs the built-in TensorBoardCallback over torch's SummaryWriter (which
  flushes after every ``on_log``), including ``on_train_end``.
- Lightning: ``log_metrics`` with three metrics, TallyboardLogger vs TensorBoardLogger (torch's
  writer), including ``finalize``.
"""

from __future__ import annotations

import argparse
import os
import warnings

from common import fresh_dir, median_of, print_table, timed_per_call


def _hf(n: int, repeats: int) -> list[tuple[str, float, float | None]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tallyboard_transformers import TallyboardCallback
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations import TensorBoardCallback

    args = TrainingArguments(output_dir=fresh_dir("hf-out"), report_to=[])
    control = TrainerControl()

    def run(make: object) -> float:
        def body() -> None:
            callback = make()  # type: ignore[operator]
            state = TrainerState()
            for step in range(1, n + 1):
                state.global_step = step
                logs = {"loss": 1.0 / step, "grad_norm": 0.5, "learning_rate": 1e-4, "epoch": 0.1}
                callback.on_log(args, state, control, logs=logs)
            callback.on_train_end(args, state, control)

        return timed_per_call(n, body)

    ours = median_of(repeats, lambda: run(lambda: TallyboardCallback(fresh_dir("hf-pb"))))
    ref = median_of(
        repeats,
        lambda: run(lambda: TensorBoardCallback(tb_writer=TorchWriter(fresh_dir("hf-torch")))),
    )
    return [(f"HF on_log, 4 values, x{n} (torch writer flushes each call)", ours, ref)]


def _lightning(n: int, repeats: int) -> list[tuple[str, float, float | None]]:
    from lightning.pytorch.loggers import TensorBoardLogger
    from tallyboard_lightning import TallyboardLogger

    def run(make: object) -> float:
        def body() -> None:
            logger = make()  # type: ignore[operator]
            for step in range(n):
                logger.log_metrics({"train_loss": 1.0 / (step + 1), "lr": 0.1, "epoch": 0}, step)
            logger.finalize("success")

        return timed_per_call(n, body)

    ours = median_of(repeats, lambda: run(lambda: TallyboardLogger(fresh_dir("pl-pb"))))
    ref = median_of(repeats, lambda: run(lambda: TensorBoardLogger(fresh_dir("pl-torch"))))
    return [(f"Lightning log_metrics, 3 values, x{n}", ours, ref)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = _hf(opts.n, opts.repeats) + _lightning(opts.n, opts.repeats)
    print_table("trainer integrations, per call", rows)


if __name__ == "__main__":
    main()
