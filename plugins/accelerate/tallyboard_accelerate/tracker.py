"""``TallyboardTracker``: Accelerate's ``TensorBoardTracker``, written through tallyboard."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from accelerate.tracking import GeneralTracker, on_main_process
from tallyboard import SummaryWriter, paths
from tallyboard.plugin.registry import get_registry
from tallyboard.plugin.sinks import parse_sinks
from tallyboard_hparams.session import end_session, flat_hparams, start_session


class TallyboardTracker(GeneralTracker):
    """An Accelerate tracker that logs to ``<logging_dir>/<run_name>`` through tallyboard.

    ``Accelerator(log_with=TallyboardTracker("run", "logs"))``, then
    ``accelerator.init_trackers("run", config=...)``, ``accelerator.log(values, step)`` and
    ``accelerator.end_training()``, as with ``TensorBoardTracker``: numbers are scalars, str
    values text, dicts of numbers ``add_scalars``; ``log_images`` takes batches of images.
    ``sinks`` chooses tallyboard's sinks; other keyword arguments go to
    :class:`tallyboard.SummaryWriter`. Only the main process writes.

    Better than ``TensorBoardTracker``: the config is this run's hyper-parameters in the HPARAMS
    tab (nested keys flattened, values kept as text where they are no bool, number or str),
    not a separate run without metrics; ``hparams.yml`` is written in the run's own directory,
    not in a new sub-directory named after the time; ``log`` does not flush after every call
    (the writer writes in batches; ``end_training`` writes everything and ends the session).
    """

    name = "tallyboard"
    requires_logging_directory = True

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike[str],
        *,
        sinks: Sequence[str] | None = None,
        **writer_kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(run_name, str) or not run_name:
            raise TypeError(f"run_name must be a non-empty str, got {run_name!r}")
        paths.safe_relpath(run_name, "run_name")
        if not isinstance(logging_dir, (str, os.PathLike)):
            raise TypeError(
                f"logging_dir must be a str or os.PathLike, got {type(logging_dir).__name__}"
            )
        if sinks is not None and (isinstance(sinks, str) or not isinstance(sinks, Sequence)):
            raise TypeError(f"sinks must be a list of sink names, got {type(sinks).__name__}")
        parse_sinks(get_registry(), sinks)  # a bad sink fails here, not at the first log
        self.run_name = run_name
        self.logging_dir = paths.join(os.fspath(logging_dir), run_name)
        self.sinks = None if sinks is None else list(sinks)
        self.writer_kwargs = writer_kwargs
        self.writer: SummaryWriter | None = None

    @on_main_process
    def start(self) -> None:
        """Open the run's writer (Accelerate calls this from ``init_trackers``)."""
        if self.writer is None:
            self.writer = SummaryWriter(self.logging_dir, sinks=self.sinks, **self.writer_kwargs)

    @property
    def tracker(self) -> SummaryWriter:
        """The run's :class:`tallyboard.SummaryWriter` (any ``add_*``)."""
        self.start()
        assert self.writer is not None
        return self.writer

    @on_main_process
    def store_init_configuration(self, values: Mapping[str, Any]) -> None:
        """``values`` as this run's hyper-parameters, written now, and as ``hparams.yml``."""
        if not isinstance(values, Mapping):
            raise TypeError(f"values must be a dict, got {type(values).__name__}")
        writer = self.tracker
        start_session(writer, flat_hparams(values))
        writer.flush()  # on disk now: a run killed later still has its hparams
        import fsspec

        with fsspec.open(paths.join(self.logging_dir, "hparams.yml"), "w") as out:
            yaml.safe_dump(dict(values), out)

    @on_main_process
    def log(self, values: Mapping[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Numbers as scalars, str as text, dicts of numbers as ``add_scalars``, at ``step``."""
        if not isinstance(values, Mapping):
            raise TypeError(f"values must be a dict, got {type(values).__name__}")
        calls: list[tuple[str, str, Any]] = []
        for key, value in values.items():  # all checked before any is written
            item = getattr(value, "item", None)
            if callable(item) and getattr(value, "ndim", None) == 0:
                value = item()  # a 0-d tensor or NumPy scalar, as accelerate's listify does
            if isinstance(value, (int, float)):
                calls.append(("add_scalar", key, value))
            elif isinstance(value, str):
                calls.append(("add_text", key, value))
            elif isinstance(value, Mapping):
                calls.append(("add_scalars", key, dict(value)))
            else:
                raise TypeError(
                    f"values[{key!r}] must be a number, a str or a dict of numbers, "
                    f"got {type(value).__name__}"
                )
        writer = self.tracker
        for method, key, value in calls:
            getattr(writer, method)(key, value, step, **kwargs)

    @on_main_process
    def log_images(self, values: Mapping[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Each value a batch of images (``add_images``), at ``step``."""
        writer = self.tracker
        for key, images in values.items():
            writer.add_images(key, images, step, **kwargs)

    @on_main_process
    def finish(self) -> None:
        """End the run's session as a success and close its writer."""
        writer, self.writer = self.writer, None
        if writer is None:
            return
        try:
            end_session(writer, "success")
        finally:
            writer.close()
