"""``TallyboardCallback``: the Hugging Face Trainer's TensorBoard callback, written through tallyboard."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from tallyboard import SummaryWriter, paths
from tallyboard.faces.summary_writer import default_log_dir
from tallyboard.plugin.registry import get_registry
from tallyboard.plugin.sinks import parse_sinks
from tallyboard_hparams.session import end_session, start_session
from transformers import TrainerCallback

log = logging.getLogger(__name__)


def _rewrite_logs(logs: dict[str, Any]) -> dict[str, Any]:
    """The Trainer's keys as TensorBoard tags: ``eval_x`` -> ``eval/x``, ``test_x`` -> ``test/x``,
    anything else ``train/x`` (the built-in callback's tags)."""
    out: dict[str, Any] = {}
    for key, value in logs.items():
        for prefix in ("eval", "test"):
            if key.startswith(f"{prefix}_"):
                out[f"{prefix}/{key[len(prefix) + 1 :]}"] = value
                break
        else:
            out[f"train/{key}"] = value
    return out


class TallyboardCallback(TrainerCallback):
    """What transformers' ``TensorBoardCallback`` writes, through tallyboard's writer and sinks.

    Same tags: ``train/loss``, ``train/learning_rate``, ``eval/...``, the training arguments as
    text ``args`` and the model config as text ``model_config``. ``log_dir`` defaults to
    ``$TENSORBOARD_LOGGING_DIR``, else ``<output_dir>/runs/<time>_<host>`` (a hyper-parameter
    search trial gets a sub-directory named after it); ``sinks`` chooses tallyboard's sinks; other
    keyword arguments go to :class:`tallyboard.SummaryWriter`.

    Better than the built-in one: records are not flushed after every log (the writer stores
    them in batches, and everything is stored after each evaluation, each checkpoint and at
    the end); the training arguments are this run's hyper-parameters in TensorBoard's HPARAMS
    tab (written when training begins, the session ended as a success when it ends; no
    experiment summary, so the tab's metrics are this run's own curves and runs of other
    trainers in the same log dir keep their columns); only the world's process zero writes.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        sinks: Sequence[str] | None = None,
        **writer_kwargs: Any,
    ) -> None:
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(
                f"log_dir must be a str, os.PathLike or None, got {type(log_dir).__name__}"
            )
        parse_sinks(get_registry(), sinks)  # a bad sinks= fails here, not in the training loop
        self.log_dir: str | None = None if log_dir is None else os.fspath(log_dir)
        self.sinks = None if sinks is None else list(sinks)
        self.writer_kwargs = writer_kwargs
        self.writer: SummaryWriter | None = None

    def _open(self, args: Any, state: Any) -> SummaryWriter:
        if self.writer is None:
            log_dir = self.log_dir or os.environ.get("TENSORBOARD_LOGGING_DIR")
            if log_dir:
                log_dir = os.path.expanduser(log_dir)
            else:
                log_dir = os.path.join(args.output_dir, default_log_dir())
            if getattr(state, "is_hyper_param_search", False) and state.trial_name:
                log_dir = paths.join(
                    log_dir, paths.safe_relpath(str(state.trial_name), "trial_name")
                )
            self.writer = SummaryWriter(log_dir, sinks=self.sinks, **self.writer_kwargs)
            start_session(self.writer, args.to_sanitized_dict())
            self.writer.flush()  # on disk now: a run killed later still has its hparams
        return self.writer

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        writer = self._open(args, state)
        writer.add_text("args", args.to_json_string())
        config = getattr(kwargs.get("model"), "config", None)
        if config is not None:
            writer.add_text("model_config", config.to_json_string())

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        writer = self._open(args, state)
        for tag, value in _rewrite_logs(logs).items():
            if isinstance(value, (int, float)):
                writer.add_scalar(tag, value, state.global_step)
            elif isinstance(value, str):
                writer.add_text(tag, value, state.global_step)
            else:
                log.warning(
                    "TallyboardCallback: %r is a %s, neither a number nor a str; not logged",
                    tag,
                    type(value).__name__,
                )

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.writer is not None:
            self.writer.flush()

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.writer is not None:
            self.writer.flush()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.writer is None:  # not process zero, or nothing logged
            return
        end_session(self.writer, "success")
        self.writer.close()
        self.writer = None
