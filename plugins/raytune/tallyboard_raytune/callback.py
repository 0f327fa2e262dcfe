"""``TallyboardLoggerCallback``: Ray Tune's ``TBXLoggerCallback``, written through tallyboard."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.tune.logger import TBXLoggerCallback
from tallyboard import SummaryWriter, paths
from tallyboard.plugin.registry import get_registry
from tallyboard.plugin.sinks import parse_sinks
from tallyboard_hparams.session import end_session, flat_hparams, start_session

log = logging.getLogger(__name__)

#: Result keys that are bookkeeping, not metrics (``TBXLoggerCallback`` leaves them out too).
_NOT_LOGGED = frozenset({"config", "pid", "timestamp", "time_total_s", "training_iteration"})


def _flat(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


class TallyboardLoggerCallback(TBXLoggerCallback):
    """Each trial's config and reported results as a tallyboard run (drop-in for
    ``ray.tune.logger.TBXLoggerCallback``: a subclass, so Tune does not add its own
    TensorBoard logger beside it, which would write a second event file into every trial's
    directory; it needs no tensorboardX).

    The run is the trial's directory, or ``<log_dir>/<trial directory name>`` when ``log_dir``
    is given; ``sinks`` chooses tallyboard's sinks and other keyword arguments go to
    :class:`tallyboard.SummaryWriter`. As ``TBXLoggerCallback``: scalars are tagged
    ``ray/tune/<metric>`` (nested results flattened with ``/``) at ``timesteps_total``, else
    ``training_iteration``; arrays of 3 and 4 dimensions are images, other lists and arrays
    histograms. Better: the trial's config (nested keys flattened; values that are no bool,
    number or str as text) is written as its hyper-parameters when the trial starts, so a
    running or killed trial shows in the HPARAMS tab, and its session ends as a success or a
    failure; results are not flushed after every report (the writer writes them in batches,
    and at the trial's end); a NaN is logged, not dropped.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        *,
        sinks: Sequence[str] | None = None,
        **writer_kwargs: Any,
    ) -> None:
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(
                f"log_dir must be a str, os.PathLike or None, got {type(log_dir).__name__}"
            )
        if sinks is not None and (isinstance(sinks, str) or not isinstance(sinks, Sequence)):
            raise TypeError(f"sinks must be a list of sink names, got {type(sinks).__name__}")
        parse_sinks(get_registry(), sinks)  # a bad sink fails here, not in the first trial
        # TBXLoggerCallback.__init__ is not called: it only imports tensorboardX
        self.log_dir = None if log_dir is None else os.fspath(log_dir)
        self.sinks = None if sinks is None else list(sinks)
        self.writer_kwargs = writer_kwargs
        self._writers: dict[Any, SummaryWriter] = {}

    def _run_dir(self, trial: Any) -> str:
        trial.init_local_path()
        if self.log_dir is None:
            return str(trial.local_path)
        name = os.path.basename(os.path.normpath(str(trial.local_path)))
        return paths.join(self.log_dir, paths.safe_relpath(name, "trial directory"))

    def log_trial_start(self, trial: Any) -> None:
        """Open the trial's run and write its config as the session's hyper-parameters."""
        old = self._writers.pop(trial, None)
        if old is not None:  # a trial restarted (after a failure, from a checkpoint)
            old.close()
        writer = SummaryWriter(self._run_dir(trial), sinks=self.sinks, **self.writer_kwargs)
        self._writers[trial] = writer
        start_session(writer, flat_hparams(trial.config or {}))
        writer.flush()  # on disk now: a trial killed later still has its hparams

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        """Every number of ``result`` as a scalar, arrays as images or histograms."""
        writer = self._writers.get(trial)
        if writer is None:
            self.log_trial_start(trial)
            writer = self._writers[trial]
        step = result.get("timesteps_total") or result["training_iteration"]
        for key, value in _flat({k: v for k, v in result.items() if k not in _NOT_LOGGED}).items():
            tag = f"ray/tune/{key}"
            if isinstance(value, (int, float, np.number)):  # bools too (``done``), as TBX
                writer.add_scalar(tag, float(value), step)
            elif value is None or isinstance(value, str):
                continue  # no curve for these, as TBXLoggerCallback
            elif isinstance(value, (list, np.ndarray)) and np.size(value) > 0:
                self._log_array(writer, tag, value, step)

    def _log_array(self, writer: SummaryWriter, tag: str, value: Any, step: int) -> None:
        try:
            array = np.asarray(value)
            if array.ndim == 3:
                writer.add_image(tag, array, step)
            elif array.ndim == 4:
                writer.add_images(tag, array, step)
            elif array.ndim < 3:
                writer.add_histogram(tag, array, step)
            else:
                log.warning(
                    "TallyboardLoggerCallback: %r has %d dimensions; not logged", tag, array.ndim
                )
        except (TypeError, ValueError) as exc:
            log.warning("TallyboardLoggerCallback: %r could not be logged: %s", tag, exc)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        """End the trial's session (a success, or a failure) and close its run."""
        writer = self._writers.pop(trial, None)
        if writer is None:
            return
        try:
            end_session(writer, "failure" if failed else "success")
        finally:
            writer.close()

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        """Close the runs of trials that never ended (the experiment was stopped)."""
        writers, self._writers = list(self._writers.values()), {}
        for writer in writers:
            writer.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_writers"] = {}  # writers hold open files and threads: never pickled
        return state


__all__ = ["TallyboardLoggerCallback"]
