"""Trainer and sweep integrations beside the loggers they replace, in one process, end to end.

The whole cost first: each case runs the calls its library makes, from opening to closing (every
record on disk), and is timed per step end to end = (opening + ``n`` steps + the close/finalize
call) / ``n``; the table gives the mean, median and slowest of that over ``--repeats`` runs per
side (after one untimed warm-up run each; the two sides take turns, so machine noise hits them
alike) and the ratio of the medians (reference / tallyboard), so ratios are of end-to-end times.
Then, for each side, the run of median end-to-end time (:func:`common.median_cost`): end to end,
then the caller's own time per step (the step's logging calls only; opening and close are not in
it): mean, median, p99, p99.9 (:func:`common.timed_loop`, whose ``close()`` is the integration's
close/finalize call; the opening is added to its end-to-end time). With ``n`` = 500, p99.9 is
the slowest step.

- Hugging Face: ``on_log`` with a typical logs dict (loss, grad_norm, learning_rate, epoch) and
  ``on_train_end``; TallyboardCallback vs the built-in TensorBoardCallback (torch's writer,
  flushed after every ``on_log``). ``on_train_begin`` is not called, so TallyboardCallback opens
  its writer (and writes the hparams session) in the first ``on_log``: that step's caller time.
- Lightning: ``log_hyperparams``, then per step ``log_metrics`` with three metrics and ``save``
  (Lightning calls it after every logging step), then ``finalize``; TallyboardLogger vs
  TensorBoardLogger.
- Ray Tune: ``log_trial_start``, ``log_trial_result`` per report (a Tune result dict), then
  ``log_trial_end``; TallyboardLoggerCallback vs TBXLoggerCallback (tensorboardX, flushed after
  every result).
- Accelerate: ``start``, ``store_init_configuration``, ``log`` per step (three values),
  ``finish``; TallyboardTracker vs TensorBoardTracker (flushed after every ``log``).
- Optuna: the study callback per finished trial (a run each, opened and closed in the call, so
  there is nothing to close after the last); optuna-integration's TensorBoardCallback needs
  TensorFlow, so there is no reference here.

Run: ``python bench/bench_trainers.py [--n 500] [--trials 50] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from common import COST_HEADER, Cost, fresh_dir, median_cost, timed_loop


class _Run:
    """An integration once opened (constructed, its one-time set-up calls made): ``step(i)`` makes
    the logging calls of step ``i``, ``close()`` its close/finalize call."""

    __slots__ = ("step", "close")

    def __init__(self, step: Callable[[int], None], close: Callable[[], None]) -> None:
        self.step = step
        self.close = close


Make = Callable[[], _Run]
#: (label, (tallyboard's name, opener), (reference's name, opener) or None, steps per run)
Case = tuple[str, tuple[str, Make], tuple[str, Make] | None, int]
Row = tuple[str, tuple[str, list[Cost]], tuple[str, list[Cost]] | None]


def _cost(make: Make, n: int) -> Cost:
    """The whole cost of one run of ``n`` steps: :func:`common.timed_loop` (each step's caller
    time; end to end up to the end of ``close()``) with the opening, ``make()``, added to the
    end-to-end time, as a training loop pays it."""
    t0 = time.perf_counter()
    run = make()
    opened = time.perf_counter() - t0
    cost = timed_loop(lambda: run, lambda r, i: r.step(i), n)
    cost.end_to_end += opened / cost.n
    return cost


def _hf(n: int) -> Case:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tallyboard_transformers import TallyboardCallback
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations import TensorBoardCallback

    args = TrainingArguments(output_dir=fresh_dir("hf-out"), report_to=[])
    control = TrainerControl()

    def opened(callback: Any) -> _Run:
        state = TrainerState()

        def step(i: int) -> None:
            state.global_step = i + 1
            logs = {"loss": 1.0 / (i + 1), "grad_norm": 0.5, "learning_rate": 1e-4, "epoch": 0.1}
            callback.on_log(args, state, control, logs=logs)

        return _Run(step, lambda: callback.on_train_end(args, state, control))

    return (
        f"HF on_log, 4 values, x{n}",
        ("TallyboardCallback", lambda: opened(TallyboardCallback(fresh_dir("hf-tb")))),
        (
            "TensorBoardCallback",
            lambda: opened(TensorBoardCallback(tb_writer=TorchWriter(fresh_dir("hf-torch")))),
        ),
        n,
    )


def _lightning(n: int) -> Case:
    from lightning.pytorch.loggers import TensorBoardLogger
    from tallyboard_lightning import TallyboardLogger

    def opened(logger: Any) -> _Run:
        logger.log_hyperparams({"lr": 0.1, "layers": 4, "opt": {"name": "sgd"}})

        def step(i: int) -> None:
            logger.log_metrics({"train_loss": 1.0 / (i + 1), "lr": 0.1, "epoch": 0}, i)
            logger.save()

        return _Run(step, lambda: logger.finalize("success"))

    return (
        f"Lightning log_metrics + save, 3 values, x{n}",
        ("TallyboardLogger", lambda: opened(TallyboardLogger(fresh_dir("pl-tb")))),
        ("TensorBoardLogger", lambda: opened(TensorBoardLogger(fresh_dir("pl-torch")))),
        n,
    )


class _Trial:
    """What Tune's logger callbacks read of a trial: its directory and config."""

    def __init__(self, path: str) -> None:
        self.local_path = path
        self.config = {"lr": 0.01, "layers": 4, "opt": {"name": "sgd"}}
        self.evaluated_params = {"lr": 0.01}

    def init_local_path(self) -> None:
        os.makedirs(self.local_path, exist_ok=True)


def _raytune(n: int) -> Case:
    from ray.tune.logger import TBXLoggerCallback
    from tallyboard_raytune import TallyboardLoggerCallback

    def opened(cls: Any, prefix: str) -> _Run:
        callback, trial = cls(), _Trial(fresh_dir(prefix))
        callback.log_trial_start(trial)

        def step(i: int) -> None:
            result = {
                "loss": 1.0 / (i + 1),
                "acc": 0.5,
                "training_iteration": i + 1,
                "time_this_iter_s": 0.01,
                "done": False,
                "timestamp": 0,
                "pid": 1,
                "config": trial.config,
            }
            callback.log_trial_result(i + 1, trial, result)

        return _Run(step, lambda: callback.log_trial_end(trial))

    return (
        f"Ray Tune log_trial_result, 4 metrics, x{n}",
        ("TallyboardLoggerCallback", lambda: opened(TallyboardLoggerCallback, "ray-tb")),
        ("TBXLoggerCallback", lambda: opened(TBXLoggerCallback, "ray-tbx")),
        n,
    )


def _accelerate(n: int) -> Case:
    from accelerate.tracking import TensorBoardTracker
    from tallyboard_accelerate import TallyboardTracker

    def opened(cls: Any, prefix: str) -> _Run:
        tracker = cls("run", fresh_dir(prefix))
        tracker.start()
        tracker.store_init_configuration({"lr": 0.1, "epochs": 3})

        def step(i: int) -> None:
            tracker.log({"loss": 1.0 / (i + 1), "lr": 0.1, "tokens": i * 512}, i)

        return _Run(step, tracker.finish)

    return (
        f"Accelerate log, 3 values, x{n}",
        ("TallyboardTracker", lambda: opened(TallyboardTracker, "acc-tb")),
        ("TensorBoardTracker", lambda: opened(TensorBoardTracker, "acc-torch")),
        n,
    )


def _optuna(trials: int) -> Case:
    import optuna
    from tallyboard_optuna import TallyboardCallback

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study()
    study.optimize(lambda t: t.suggest_float("x", -1, 1) ** 2, n_trials=trials)
    done = study.trials

    def opened() -> _Run:
        callback = TallyboardCallback(fresh_dir("optuna-tb"), "loss")
        return _Run(lambda i: callback(study, done[i]), lambda: None)

    return (
        f"Optuna callback, a run per trial, x{len(done)}",
        ("TallyboardCallback", opened),
        None,
        len(done),
    )


def _measure(case: Case, repeats: int) -> Row:
    """``repeats`` costs of each side, taking turns, after one untimed run of each (imports,
    first-use set-up)."""
    label, (name, ours), ref, n = case
    sides = [ours] if ref is None else [ours, ref[1]]
    for make in sides:
        _cost(make, n)
    costs: list[list[Cost]] = [[] for _ in sides]
    for _ in range(repeats):
        for make, out in zip(sides, costs):
            out.append(_cost(make, n))
    return (label, (name, costs[0]), None if ref is None else (ref[0], costs[1]))


def _stats(costs: list[Cost]) -> str:
    times = [c.end_to_end * 1e6 for c in costs]
    return f"{statistics.mean(times):9.1f} {statistics.median(times):9.1f} {max(times):9.1f}"


def _median(costs: list[Cost]) -> float:
    return statistics.median(c.end_to_end for c in costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500, help="calls per run")
    parser.add_argument("--trials", type=int, default=50, help="Optuna trials")
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = [
            _measure(_hf(opts.n), opts.repeats),
            _measure(_lightning(opts.n), opts.repeats),
            _measure(_raytune(opts.n), opts.repeats),
            _measure(_accelerate(opts.n), opts.repeats),
            _measure(_optuna(opts.trials), opts.repeats),
        ]
    print(
        "\n## trainer and sweep integrations, us per call (end to end, opening and close included)"
    )
    head = f"{'mean':>9s} {'median':>9s} {'slowest':>9s}"
    print(f"{'case':46s} {'tallyboard':>29s}  {'reference':>29s}  {'ratio':>7s}")
    print(f"{'':46s} {head}  {head}")
    for label, (_, ours), ref in rows:
        ref_s = _stats(ref[1]) if ref else f"{'-':>29s}"
        ratio = f"{_median(ref[1]) / _median(ours):6.1f}x" if ref else "      -"
        print(f"{label:46s} {_stats(ours)}  {ref_s}  {ratio}")
    print(
        f"\n## whole cost per call, then the caller's: the run of median end-to-end time"
        f" of {opts.repeats}"
    )
    print(f"{'':26s} {COST_HEADER}")
    for label, ours_side, ref in rows:
        print(label)
        for name, costs in [ours_side] + ([ref] if ref else []):
            print(f"  {name:24s} {median_cost(costs).line()}")


if __name__ == "__main__":
    main()
