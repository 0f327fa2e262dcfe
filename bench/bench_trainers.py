"""Trainer and sweep integrations beside the loggers they replace, in one process, end to end.

Each case runs the calls its library makes, from opening to closing (every record on disk),
``--repeats`` times for each side after one untimed warm-up run; the table gives the mean,
median and slowest per-call time of the repeats, and the ratio of the medians (reference /
tallyboard).

- Hugging Face: ``on_log`` with a typical logs dict (loss, grad_norm, learning_rate, epoch) and
  ``on_train_end``; TallyboardCallback vs the built-in TensorBoardCallback (torch's writer,
  flushed after every ``on_log``).
- Lightning: ``log_hyperparams``, then per step ``log_metrics`` with three metrics and ``save``
  (Lightning calls it after every logging step), then ``finalize``; TallyboardLogger vs
  TensorBoardLogger.
- Ray Tune: ``log_trial_start``, ``log_trial_result`` per report (a Tune result dict), then
  ``log_trial_end``; TallyboardLoggerCallback vs TBXLoggerCallback (tensorboardX, flushed after
  every result).
- Accelerate: ``start``, ``store_init_configuration``, ``log`` per step (three values),
  ``finish``; TallyboardTracker vs TensorBoardTracker (flushed after every ``log``).
- Optuna: the study callback per finished trial (a run each); optuna-integration's
  TensorBoardCallback needs TensorFlow, so there is no reference here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import warnings
from collections.abc import Callable
from typing import Any

from common import fresh_dir, timed_per_call

Row = tuple[str, list[float], list[float] | None]


def _repeat(repeats: int, once: Callable[[], float]) -> list[float]:
    """``repeats`` timings of ``once`` after one untimed run (imports, first-use set-up)."""
    once()
    return [once() for _ in range(repeats)]


def _hf(n: int, repeats: int) -> Row:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tallyboard_transformers import TallyboardCallback
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations import TensorBoardCallback

    args = TrainingArguments(output_dir=fresh_dir("hf-out"), report_to=[])
    control = TrainerControl()

    def run(make: Callable[[], Any]) -> float:
        def body() -> None:
            callback = make()
            state = TrainerState()
            for step in range(1, n + 1):
                state.global_step = step
                logs = {"loss": 1.0 / step, "grad_norm": 0.5, "learning_rate": 1e-4, "epoch": 0.1}
                callback.on_log(args, state, control, logs=logs)
            callback.on_train_end(args, state, control)

        return timed_per_call(n, body)

    ours = _repeat(repeats, lambda: run(lambda: TallyboardCallback(fresh_dir("hf-tb"))))
    ref = _repeat(
        repeats,
        lambda: run(lambda: TensorBoardCallback(tb_writer=TorchWriter(fresh_dir("hf-torch")))),
    )
    return (f"HF on_log, 4 values, x{n}", ours, ref)


def _lightning(n: int, repeats: int) -> Row:
    from lightning.pytorch.loggers import TensorBoardLogger
    from tallyboard_lightning import TallyboardLogger

    def run(make: Callable[[], Any]) -> float:
        def body() -> None:
            logger = make()
            logger.log_hyperparams({"lr": 0.1, "layers": 4, "opt": {"name": "sgd"}})
            for step in range(n):
                logger.log_metrics({"train_loss": 1.0 / (step + 1), "lr": 0.1, "epoch": 0}, step)
                logger.save()
            logger.finalize("success")

        return timed_per_call(n, body)

    ours = _repeat(repeats, lambda: run(lambda: TallyboardLogger(fresh_dir("pl-tb"))))
    ref = _repeat(repeats, lambda: run(lambda: TensorBoardLogger(fresh_dir("pl-torch"))))
    return (f"Lightning log_metrics + save, 3 values, x{n}", ours, ref)


class _Trial:
    """What Tune's logger callbacks read of a trial: its directory and config."""

    def __init__(self, path: str) -> None:
        self.local_path = path
        self.config = {"lr": 0.01, "layers": 4, "opt": {"name": "sgd"}}
        self.evaluated_params = {"lr": 0.01}

    def init_local_path(self) -> None:
        os.makedirs(self.local_path, exist_ok=True)


def _raytune(n: int, repeats: int) -> Row:
    from ray.tune.logger import TBXLoggerCallback
    from tallyboard_raytune import TallyboardLoggerCallback

    def run(make: Callable[[], Any], prefix: str) -> float:
        def body() -> None:
            callback, trial = make(), _Trial(fresh_dir(prefix))
            callback.log_trial_start(trial)
            for i in range(1, n + 1):
                result = {
                    "loss": 1.0 / i,
                    "acc": 0.5,
                    "training_iteration": i,
                    "time_this_iter_s": 0.01,
                    "done": False,
                    "timestamp": 0,
                    "pid": 1,
                    "config": trial.config,
                }
                callback.log_trial_result(i, trial, result)
            callback.log_trial_end(trial)

        return timed_per_call(n, body)

    ours = _repeat(repeats, lambda: run(TallyboardLoggerCallback, "ray-tb"))
    ref = _repeat(repeats, lambda: run(TBXLoggerCallback, "ray-tbx"))
    return (f"Ray Tune log_trial_result, 4 metrics, x{n}", ours, ref)


def _accelerate(n: int, repeats: int) -> Row:
    from accelerate.tracking import TensorBoardTracker
    from tallyboard_accelerate import TallyboardTracker

    def run(cls: Any, prefix: str) -> float:
        def body() -> None:
            tracker = cls("run", fresh_dir(prefix))
            tracker.start()
            tracker.store_init_configuration({"lr": 0.1, "epochs": 3})
            for step in range(n):
                tracker.log({"loss": 1.0 / (step + 1), "lr": 0.1, "tokens": step * 512}, step)
            tracker.finish()

        return timed_per_call(n, body)

    ours = _repeat(repeats, lambda: run(TallyboardTracker, "acc-tb"))
    ref = _repeat(repeats, lambda: run(TensorBoardTracker, "acc-torch"))
    return (f"Accelerate log, 3 values, x{n}", ours, ref)


def _optuna(trials: int, repeats: int) -> Row:
    import optuna
    from tallyboard_optuna import TallyboardCallback

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study()
    study.optimize(lambda t: t.suggest_float("x", -1, 1) ** 2, n_trials=trials)
    done = study.trials

    def run() -> float:
        callback = TallyboardCallback(fresh_dir("optuna-tb"), "loss")

        def body() -> None:
            for trial in done:
                callback(study, trial)

        return timed_per_call(len(done), body)

    return (f"Optuna callback, a run per trial, x{trials}", _repeat(repeats, run), None)


def _stats(times: list[float]) -> str:
    return f"{statistics.mean(times):9.1f} {statistics.median(times):9.1f} {max(times):9.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500, help="calls per run")
    parser.add_argument("--trials", type=int, default=50, help="Optuna trials")
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [
            _hf(opts.n, opts.repeats),
            _lightning(opts.n, opts.repeats),
            _raytune(opts.n, opts.repeats),
            _accelerate(opts.n, opts.repeats),
            _optuna(opts.trials, opts.repeats),
        ]
    print("\n## trainer and sweep integrations, us per call (end to end, close included)")
    head = f"{'mean':>9s} {'median':>9s} {'slowest':>9s}"
    print(f"{'case':46s} {'tallyboard':>29s}  {'reference':>29s}  {'ratio':>7s}")
    print(f"{'':46s} {head}  {head}")
    for label, ours, ref in rows:
        ref_s = _stats(ref) if ref else f"{'-':>29s}"
        ratio = f"{statistics.median(ref) / statistics.median(ours):6.1f}x" if ref else "      -"
        print(f"{label:46s} {_stats(ours)}  {ref_s}  {ratio}")


if __name__ == "__main__":
    main()
