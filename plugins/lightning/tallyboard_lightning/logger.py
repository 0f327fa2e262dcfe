"""``TallyboardLogger``: a Lightning logger that writes through tallyboard's SummaryWriter and sinks."""

from __future__ import annotations

import os
import time
from argparse import Namespace
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any

try:  # the unified ``lightning`` package first, then the standalone ``pytorch_lightning``
    from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
    from lightning.pytorch.utilities.rank_zero import rank_zero_only, rank_zero_warn
except ImportError:  # pragma: no cover - exercised only where lightning is absent
    from pytorch_lightning.loggers.logger import (  # type: ignore[no-redef,assignment]
        Logger,
        rank_zero_experiment,
    )
    from pytorch_lightning.utilities.rank_zero import (  # type: ignore[no-redef,assignment]
        rank_zero_only,
        rank_zero_warn,
    )

from tallyboard import SummaryWriter, paths
from tallyboard_hparams.session import end_session, start_session


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts, Namespaces, dataclasses and lists of dicts as one level, as
    ``TensorBoardLogger`` flattens them: ``{"opt": {"lr": 1}}`` -> ``{"opt/lr": 1}``,
    ``{"dl": [{"a": 1}]}`` -> ``{"dl/0/a": 1}``."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if is_dataclass(value) and not isinstance(value, type):
            value = asdict(value)
        elif isinstance(value, Namespace):
            value = vars(value)
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}/"))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                out.update(_flatten(item, f"{name}/{i}/"))
        else:
            out[name] = value
    return out


def _hparam(value: Any) -> Any:
    """A value the HPARAMS tab can show: bool, number or str (a 0-d tensor as its number);
    anything else, None included, as its ``str`` (``"None"``), as ``TensorBoardLogger`` does."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return str(value)  # beyond float64's exact integers: shown exactly, as text
    if isinstance(value, (bool, int, float, str)):
        return value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        return item()
    return str(value)


class TallyboardLogger(Logger):
    """Lightning's ``TensorBoardLogger``, written through tallyboard (any of its sinks).

    Logs go to ``<save_dir>/<name>/<version>`` (``version_N``, the next free N, unless given;
    a str version is used as the directory name). ``sinks`` chooses tallyboard's sinks
    (``["tfevents", "csv"]``, URLs too); other keyword arguments go to
    :class:`tallyboard.SummaryWriter` (``max_queue``, ``flush_secs``, ``filename_suffix``, ...).

    As ``TensorBoardLogger``: ``log_hyperparams`` writes the hyper-parameters at once (the
    session start of the HPARAMS tab, and ``hparams.yaml`` in the version folder), so a run
    killed mid-way still has them; nested dicts are flattened with ``/`` and values that are
    no bool, number or str (None too) are shown as their ``str``; with ``default_hp_metric``
    and no metrics given, ``hp_metric = -1`` is logged.

    Better than ``TensorBoardLogger``: when the run ends (``finalize``) the session is ended
    with its status (a fit that raised shows as failed), and no experiment summary is written,
    so the HPARAMS tab's metrics are the runs' own curves (every scalar they logged), not a
    placeholder, and runs with other hyper-parameters in the same log dir keep their columns.
    ``save()``, which Lightning calls after every logging step, writes what is pending at most
    every ``save_secs`` seconds instead of after every step (the writer also writes on its own
    every ``flush_secs``; ``finalize`` writes everything). TensorBoard shows the values of the
    first ``log_hyperparams`` call (``hparams.yaml`` has them all). Ranks above zero write
    nothing and get a no-op ``experiment``. Both ``lightning.pytorch.Trainer`` and the
    standalone ``pytorch_lightning.Trainer`` take it.
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        save_dir: str | os.PathLike[str],
        name: str | None = "lightning_logs",
        version: int | str | None = None,
        log_graph: bool = False,
        default_hp_metric: bool = True,
        prefix: str = "",
        sub_dir: str | os.PathLike[str] | None = None,
        *,
        sinks: Sequence[str] | None = None,
        save_secs: float = 5.0,
        **writer_kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(save_dir, (str, os.PathLike)):
            raise TypeError(f"save_dir must be a str or os.PathLike, got {type(save_dir).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, (int, str))
        ):
            raise TypeError(f"version must be an int, a str or None, got {type(version).__name__}")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self._save_dir = os.fspath(save_dir)
        self._name = name or ""
        self._version = version
        self._sub_dir = None if sub_dir is None else os.fspath(sub_dir)
        for arg, value in (("name", self._name), ("version", version), ("sub_dir", self._sub_dir)):
            if isinstance(value, str) and value:
                paths.safe_relpath(value, arg)
        self._log_graph = bool(log_graph)
        self._default_hp_metric = bool(default_hp_metric)
        self._prefix = prefix
        if isinstance(save_secs, bool) or not isinstance(save_secs, (int, float)):
            raise TypeError(f"save_secs must be a number, got {type(save_secs).__name__}")
        if not 0 <= save_secs < float("inf"):
            raise ValueError(f"save_secs must be a finite number >= 0, got {save_secs!r}")
        self._save_secs = float(save_secs)
        self._last_save = time.monotonic()
        self._sinks = list(sinks) if sinks is not None else None
        self._writer_kwargs = writer_kwargs
        self._experiment: SummaryWriter | None = None
        self.hparams: dict[str, Any] = {}  #: as given to ``log_hyperparams``: ``hparams.yaml``
        self._hparams: dict[str, Any] | None = None  # flattened, for the session's end

    # -- where ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The experiment name (a directory under ``save_dir``; empty: none)."""
        return self._name

    @property
    def version(self) -> int | str:
        """The run's version: as given, else the next free ``version_N`` number."""
        if self._version is None:
            self._version = self._next_version()
        return self._version

    @property
    def save_dir(self) -> str:
        """The directory (or URL) every experiment of this logger goes under."""
        return self._save_dir

    @property
    def root_dir(self) -> str:
        """``save_dir/name``: where the versions of this experiment are."""
        return paths.join(self._save_dir, self._name) if self._name else self._save_dir

    @property
    def log_dir(self) -> str:
        """``save_dir/name/version[/sub_dir]``: this run's directory."""
        version = self.version if isinstance(self.version, str) else f"version_{self.version}"
        log_dir = paths.join(self.root_dir, version)
        return paths.join(log_dir, self._sub_dir) if self._sub_dir else log_dir

    @property
    def sub_dir(self) -> str | None:
        return self._sub_dir

    def _next_version(self) -> int:
        import fsspec

        fs, root = fsspec.core.url_to_fs(self.root_dir)
        try:
            entries = fs.ls(root, detail=True)
        except (FileNotFoundError, OSError):
            return 0
        found = [
            int(base[len("version_") :])
            for entry in entries
            if entry.get("type") == "directory"
            for base in [os.path.basename(str(entry["name"]).rstrip("/"))]
            if base.startswith("version_") and base[len("version_") :].isdigit()
        ]
        return max(found) + 1 if found else 0

    # -- the writer -----------------------------------------------------------------------------

    @property
    @rank_zero_experiment
    def experiment(self) -> SummaryWriter:
        """tallyboard's SummaryWriter for this run (use any ``add_*``); a no-op on ranks > 0."""
        if self._experiment is None:
            self._experiment = SummaryWriter(self.log_dir, sinks=self._sinks, **self._writer_kwargs)
        return self._experiment

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """One scalar per metric (a dict of numbers: ``add_scalars``), at ``step``."""
        for key, value in metrics.items():
            tag = f"{self._prefix}{self.LOGGER_JOIN_CHAR}{key}" if self._prefix else key
            if isinstance(value, Mapping):
                self.experiment.add_scalars(tag, dict(value), step)
                continue
            self.experiment.add_scalar(tag, value, step)

    @rank_zero_only
    def log_hyperparams(
        self,
        params: Mapping[str, Any] | Namespace,
        metrics: Mapping[str, Any] | float | None = None,
        step: int | None = None,
    ) -> None:
        """Write ``params`` now (session start and ``hparams.yaml``); log ``metrics`` now."""
        if isinstance(params, Namespace):
            params = vars(params)
        if not isinstance(params, Mapping):
            raise TypeError(
                f"params must be a dict or argparse.Namespace, got {type(params).__name__}"
            )
        flat = {str(k): _hparam(v) for k, v in _flatten(params).items()}
        self.hparams.update(params)
        self._hparams = {**(self._hparams or {}), **flat}
        if metrics is None:
            metrics = {"hp_metric": -1} if self._default_hp_metric else {}
        elif not isinstance(metrics, Mapping):
            metrics = {"hp_metric": metrics}
        if metrics:
            self.log_metrics(metrics, step)
        start_session(self.experiment, self._hparams, step)
        self.experiment.flush()  # on disk now: a run killed later still has its hparams
        self._save_hparams_file()

    def _save_hparams_file(self) -> None:
        """``hparams.yaml`` in the version folder, as ``TensorBoardLogger`` writes it."""
        try:
            from lightning.pytorch.core.saving import save_hparams_to_yaml
        except ImportError:  # pragma: no cover - the standalone package only
            from pytorch_lightning.core.saving import (  # type: ignore[no-redef]
                save_hparams_to_yaml,
            )

        save_hparams_to_yaml(paths.join(self.log_dir, "hparams.yaml"), self.hparams)

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """With ``log_graph=True``: the model's graph, traced on ``input_array`` or its
        ``example_input_array``."""
        if not self._log_graph:
            return
        if input_array is None:
            input_array = getattr(model, "example_input_array", None)
        if input_array is None:
            rank_zero_warn(
                "TallyboardLogger(log_graph=True): no graph logged, the model has no "
                "example_input_array and no input_array was given"
            )
            return
        transfer = getattr(model, "_apply_batch_transfer_handler", None)
        before = getattr(model, "_on_before_batch_transfer", None)
        if callable(before) and callable(transfer):  # a LightningModule: move it as a batch
            input_array = transfer(before(input_array))
        self.experiment.add_graph(model, input_array)

    @rank_zero_only
    def save(self) -> None:
        """Write what is pending if ``save_secs`` have passed since the last time (Lightning
        calls this after every logging step; ``finalize`` writes everything)."""
        if self._experiment is None:
            return
        now = time.monotonic()
        if now - self._last_save >= self._save_secs:
            self._last_save = now
            self._experiment.flush()

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """End the hparams session with ``status`` ("success", "failed"), close the writer."""
        if self._hparams is not None:
            end_session(self.experiment, status if status in ("success", "failed") else "unknown")
            self._hparams = None
        if self._experiment is not None:
            self._experiment.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_experiment"] = None  # a writer holds open files: never pickled
        return state
