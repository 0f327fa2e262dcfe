"""``TallyboardCallback``: optuna-integration's ``TensorBoardCallback`` without TensorFlow."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import optuna
from tallyboard import SummaryWriter, paths
from tallyboard.plugin.registry import get_registry
from tallyboard.plugin.sinks import parse_sinks
from tallyboard_hparams.session import end_session, flat_hparams, start_session

#: How a trial ended, as the HPARAMS session status (a pruned trial neither failed nor
#: succeeded: "unknown").
_STATUS = {
    optuna.trial.TrialState.COMPLETE: "success",
    optuna.trial.TrialState.FAIL: "failure",
    optuna.trial.TrialState.PRUNED: "unknown",
}

#: The tag of the values a trial reported with ``trial.report(value, step)``.
INTERMEDIATE_TAG = "intermediate_value"


class TallyboardCallback:
    """Write each finished trial of a study as a tallyboard run.

    As optuna-integration's ``TensorBoardCallback`` (which needs TensorFlow): the run is
    ``<dirname>/trial-<number>``, the trial's value is the scalar ``metric_name`` at step
    ``trial.number`` and its params are the hyper-parameters. ``metric_name`` may be a list,
    one name per objective of a multi-objective study. Better: failed and pruned trials are
    written too (their session status says how they ended: failure, or unknown when pruned),
    the values a trial reported (``trial.report``) are the curve ``intermediate_value`` at
    their steps, and any of tallyboard's sinks can be used (``sinks``; other keyword arguments
    go to :class:`tallyboard.SummaryWriter`).
    """

    def __init__(
        self,
        dirname: str | os.PathLike[str],
        metric_name: str | Sequence[str] = "value",
        *,
        sinks: Sequence[str] | None = None,
        **writer_kwargs: Any,
    ) -> None:
        if not isinstance(dirname, (str, os.PathLike)):
            raise TypeError(f"dirname must be a str or os.PathLike, got {type(dirname).__name__}")
        names = [metric_name] if isinstance(metric_name, str) else metric_name
        if (
            not isinstance(names, Sequence)
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise TypeError(
                f"metric_name must be a non-empty str or a list of them, got {metric_name!r}"
            )
        if sinks is not None and (isinstance(sinks, str) or not isinstance(sinks, Sequence)):
            raise TypeError(f"sinks must be a list of sink names, got {type(sinks).__name__}")
        parse_sinks(get_registry(), sinks)  # a bad sink fails here, not after the first trial
        self.dirname = os.fspath(dirname)
        self.metric_names = list(names)
        self.sinks = None if sinks is None else list(sinks)
        self.writer_kwargs = writer_kwargs

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        status = _STATUS.get(trial.state)
        if status is None:  # still running or waiting: nothing to write yet
            return
        values = list(trial.values or [])
        if values and len(values) != len(self.metric_names):
            raise ValueError(
                f"the study has {len(values)} objectives but metric_name names "
                f"{len(self.metric_names)}: {self.metric_names}"
            )
        run = paths.join(self.dirname, f"trial-{trial.number}")
        with SummaryWriter(run, sinks=self.sinks, **self.writer_kwargs) as writer:
            start_session(writer, flat_hparams(trial.params))
            for step, value in sorted(trial.intermediate_values.items()):
                writer.add_scalar(INTERMEDIATE_TAG, value, step)
            for name, value in zip(self.metric_names, values):
                writer.add_scalar(name, value, trial.number)
            end_session(writer, status)
