"""The ``mlflow`` sink: scalars as MLflow metrics, hparams as params, text/images/audio as artifacts.

``SummaryWriter("runs/exp1", sinks=["tfevents", "mlflow"])`` keeps an MLflow tracking store
inside the log dir (``runs/exp1/mlflow/mlflow.db``, artifacts in ``runs/exp1/mlflow/artifacts``),
so nothing is written elsewhere; ``sinks=["tfevents", "mlflow+http://127.0.0.1:5000"]`` (any
MLflow tracking URI after ``mlflow+``) logs to that tracking server or store instead (a
``sqlite:///`` store keeps new experiments' artifacts in ``artifacts/`` beside it). The
experiment is named after the log dir's parent directory (``runs``) unless
``MLFLOW_EXPERIMENT_NAME`` names one, the run after the log dir (``exp1``); a writer that re-opens after ``close()`` continues its run. Sub-runs of the writer
(``add_scalars`` keys, ``add_hparams`` trials) become nested runs named by their relative path.

Logging never waits for MLflow: values are queued and a background thread sends them in
``log_batch`` calls every ``flush_secs`` (10 s at most) or as soon as 1000 are waiting;
``flush()`` returns once everything queued is stored. An error while sending is raised as an
``OSError`` by the next ``write``, ``flush`` or ``close``. A run whose last values could not be
sent ends as ``FAILED``. Kinds other than scalar, hparams (given as values, not as ready
``HParamsPluginData``), text, image (figures are images) and audio get the writer's once-only
"cannot encode" warning.
Needs ``pip install tallyboard[mlflow]``; mlflow is imported when a writer opens this sink.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from tallyboard import Deferred, SinkOptions, SinkSpec, hookimpl

SINK = "mlflow"
STORE_DIR = "mlflow"
#: Most items a sink keeps waiting for the sender; ``write`` then waits for room (bounded).
MAX_PENDING = 100_000
#: Items waiting that wake the sender before ``flush_secs`` is up.
SEND_AT = 1000
#: Longest time a queued value waits before it is sent, in seconds (or ``flush_secs`` if less).
MAX_SEND_SECS = 10.0
#: Longest ``flush``/``close``/a full queue waits for the sender, in seconds.
WAIT_SECS = 120.0
_METRICS_PER_BATCH = 1000  # MLflow's most entities in one log_batch
_PARAMS_PER_BATCH = 100

_BAD_KEY = re.compile(r"[^\w\-. /:]")


def metric_key(tag: str) -> str:
    """``tag`` as an MLflow metric/param key: characters MLflow refuses become ``_``."""
    return _BAD_KEY.sub("_", tag) or "_"


def artifact_path(folder: str, tag: str, step: int | None, wall_time: float, suffix: str) -> str:
    """``<folder>/<tag>/step_<step><suffix>`` with the tag made safe (no ``..``, no odd chars)."""
    parts = [metric_key(p).replace(":", "_") for p in tag.split("/") if p not in ("", ".", "..")]
    name = f"step_{step:08d}" if step is not None else f"time_{int(wall_time * 1000)}"
    return "/".join([folder, *parts, name + suffix])


# -- encoders: each returns one queued item, ``(what, *fields)`` -------------------------------


def encode_scalar(tag: str, step: int | None, wall_time: float, value: Any) -> tuple[Any, ...]:
    if type(value) is not float:
        value = float(getattr(value, "value", value))
    return ("metric", metric_key(tag), value, int(wall_time * 1000), step or 0)


def encode_hparams(tag: str, step: int | None, wall_time: float, summary: Any) -> tuple[Any, ...]:
    if summary.part != "session_start_info":  # metric values arrive as scalars of their own
        return ("none",)
    return ("params", {metric_key(k): str(v) for k, v in summary.hparams.items()})


def encode_text(tag: str, step: int | None, wall_time: float, text: str) -> tuple[Any, ...]:
    return ("file", artifact_path("text", tag, step, wall_time, ".txt"), text.encode())


def encode_image(tag: str, step: int | None, wall_time: float, payload: Any) -> tuple[Any, ...]:
    from tallyboard_image.codec import encode

    img = encode(payload)
    suffix = ".gif" if img.content_type == "image/gif" else ".png"
    return ("file", artifact_path("images", tag, step, wall_time, suffix), img.data)


def encode_audio(tag: str, step: int | None, wall_time: float, payload: Any) -> tuple[Any, ...]:
    from tallyboard_audio.codec import encode_wav

    return ("file", artifact_path("audio", tag, step, wall_time, ".wav"), encode_wav(payload))


ENCODERS = {
    "scalar": encode_scalar,
    "hparams": encode_hparams,
    "text": encode_text,
    "image": encode_image,
    "audio": encode_audio,
}


# -- runs --------------------------------------------------------------------------------------

_open_lock = threading.Lock()
#: Open sinks by their writer's log dir, so a sub-run's sink finds its parent's run.
_open: dict[str, MlflowSink] = {}
#: Run ids by (tracking URI, experiment id, run name): a re-opened writer continues its run.
_runs: dict[tuple[str, str, str], str] = {}


def _local_store(log_dir: str) -> tuple[str, str]:
    """The tracking URI and artifact location of the store kept inside ``log_dir``."""
    from tallyboard import paths

    if paths.is_url(log_dir):
        raise ValueError(
            f"the mlflow sink keeps its own store only under a local log_dir, not {log_dir!r}; "
            "name a tracking server or store instead: sinks=['mlflow+http://host:5000']"
        )
    root = os.path.join(os.path.abspath(log_dir), STORE_DIR)
    os.makedirs(root, exist_ok=True)
    artifacts = os.path.join(root, "artifacts")
    return "sqlite:///" + os.path.join(root, "mlflow.db"), _file_uri(artifacts)


def _file_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()


def _names(writer_log_dir: str) -> tuple[str, str]:
    """(experiment, run) names: the log dir's parent directory and its own name."""
    trimmed = writer_log_dir.rstrip("/\\")
    head, run = os.path.split(trimmed.split("://", 1)[-1])
    experiment = os.path.basename(head.rstrip("/\\"))
    return experiment or "Default", run or "run"


def _sqlite_artifacts(tracking_uri: str) -> str | None:
    """For a ``sqlite:///`` store: ``artifacts/`` beside the database file (MLflow's own
    default would be ``./mlartifacts`` in the working directory)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    database = tracking_uri[len("sqlite:///") :]
    return _file_uri(os.path.join(os.path.dirname(os.path.abspath(database)), "artifacts"))


def _key(writer_log_dir: str) -> str:
    """The run's identity: the writer's log dir, absolute, with ``/`` separators."""
    if "://" not in writer_log_dir:
        writer_log_dir = os.path.abspath(writer_log_dir)
    return writer_log_dir.replace(os.sep, "/").rstrip("/")


def _parent_of(key: str, chosen: str) -> tuple[MlflowSink, str] | None:
    """The open sink (same ``sinks=`` entry) of a directory above ``key``, and the relative
    path (lock held): a sub-run of its writer."""
    best: tuple[MlflowSink, str] | None = None
    for other, sink in _open.items():
        deeper = best is None or len(other) > len(best[0].key)
        if deeper and sink.chosen == chosen and key.startswith(other + "/"):
            best = (sink, key[len(other) + 1 :])
    return best


class MlflowSink:
    """One MLflow run fed from a writer: records queue in ``write``; a thread sends batches."""

    tracking_uri: str
    client: Any
    experiment_id: str
    run_id: str

    def __init__(self, options: SinkOptions) -> None:
        from mlflow.tracking import MlflowClient

        self.chosen = chosen = str(options.extra.get("sink", SINK))
        writer_dir = str(options.extra.get("writer_log_dir", options.log_dir))
        self.key = _key(writer_dir)
        with _open_lock:
            if self.key in _open:
                raise ValueError(
                    f"another writer already logs {writer_dir!r} to MLflow; "
                    "close it first (two writers must not share a run)"
                )
            parent = _parent_of(self.key, chosen)
            if parent is not None:
                parent_sink, rel = parent
                self.tracking_uri = parent_sink.tracking_uri
                self.client = parent_sink.client
                self.experiment_id = parent_sink.experiment_id
                run_name, parent_run = rel, parent_sink.run_id
            else:
                if "://" in chosen:  # "mlflow+<tracking URI>"
                    self.tracking_uri = options.log_dir
                    artifacts = _sqlite_artifacts(self.tracking_uri)
                else:
                    self.tracking_uri, artifacts = _local_store(options.log_dir)
                self.client = MlflowClient(self.tracking_uri)
                experiment, run_name = _names(writer_dir)
                experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or experiment
                self.experiment_id = self._experiment(experiment, artifacts)
                parent_run = None
            self.run_id = self._run(run_name, parent_run)
            _open[self.key] = self
        self.run_name = run_name
        self.send_secs = min(float(options.flush_secs), MAX_SEND_SECS)
        self._cond = threading.Condition()
        self._items: list[Any] = []
        self._queued = 0  # items ever queued
        self._done = 0  # items ever sent (or failed)
        self._error: BaseException | None = None
        self._closing = False
        self._wake = False
        self._params: dict[str, str] = {}
        self._thread = threading.Thread(
            target=self._loop, name=f"tallyboard-mlflow-{run_name}", daemon=True
        )
        self._thread.start()

    def _experiment(self, name: str, artifacts: str | None) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self.client.create_experiment(name, artifact_location=artifacts))
        except Exception:  # another process created it meanwhile
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return str(found.experiment_id)

    def _run(self, name: str, parent_run: str | None) -> str:
        key = (
            self.tracking_uri,
            self.experiment_id,
            name if parent_run is None else parent_run + "/" + name,
        )
        run_id = _runs.get(key)
        if run_id is not None:
            self.client.update_run(run_id, status="RUNNING")
            return run_id
        tags = {"mlflow.source.name": "tallyboard"}
        if parent_run is not None:
            tags["mlflow.parentRunId"] = parent_run
        run_id = str(
            self.client.create_run(self.experiment_id, tags=tags, run_name=name).info.run_id
        )
        _runs[key] = run_id
        return run_id

    # -- the sink ------------------------------------------------------------------------------

    def write(self, data: Any) -> None:
        """Queue one encoded record (a heavy kind's encode runs on the sender thread)."""
        with self._cond:
            self._raise_error()
            if self._closing:
                raise ValueError("write() on a closed mlflow sink")
            if len(self._items) >= MAX_PENDING:
                self._cond.notify_all()
                if not self._cond.wait_for(
                    lambda: len(self._items) < MAX_PENDING or self._error is not None, WAIT_SECS
                ):
                    raise OSError(
                        f"mlflow sink: {MAX_PENDING} records waited {WAIT_SECS:.0f} s for "
                        f"{self.tracking_uri}; the tracking store is not keeping up"
                    )
                self._raise_error()
            self._items.append(data)
            self._queued += 1
            if len(self._items) == SEND_AT:
                self._cond.notify_all()

    def flush(self) -> None:
        """Return once everything queued so far is stored in MLflow."""
        with self._cond:
            target = self._queued
            self._wake = True
            self._cond.notify_all()
            if not self._cond.wait_for(
                lambda: self._done >= target or self._error is not None, WAIT_SECS
            ):
                raise OSError(
                    f"mlflow sink: {target - self._done} records not stored in "
                    f"{WAIT_SECS:.0f} s at {self.tracking_uri}"
                )
            self._raise_error()

    def close(self) -> None:
        """Send what is queued, mark the run finished and stop the thread; idempotent."""
        with self._cond:
            if self._closing:
                return
        error: Exception | None = None
        try:
            self.flush()
        except Exception as exc:  # still stop the thread and end the run, then raise it
            error = exc
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(WAIT_SECS)
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]
        try:
            self.client.set_terminated(self.run_id, "FINISHED" if error is None else "FAILED")
        except Exception as exc:
            error = error or OSError(f"mlflow sink could not end run {self.run_id}: {exc}")
        if error is not None:
            raise error

    def abandon(self) -> None:
        """In a forked child: forget what is queued (the parent sends it)."""
        with self._cond:
            self._items.clear()
            self._closing = True
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise OSError(f"mlflow sink failed to log to {self.tracking_uri}: {error}") from error

    # -- the sender thread ---------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._closing or self._wake or len(self._items) >= SEND_AT,
                    self.send_secs,
                )
                items, self._items, self._wake = self._items, [], False
                if not items and self._closing:
                    return
            try:
                if items:
                    self._send(items)
            except Exception as exc:  # surfaced to the caller by the next write/flush/close
                with self._cond:
                    self._error = exc
            with self._cond:
                self._done += len(items)
                self._cond.notify_all()

    def _send(self, items: list[Any]) -> None:
        """Send metrics, params and files in separate calls: one failing loses no other kind.
        The first error is raised after everything else was sent."""
        from mlflow.entities import Metric, Param

        errors: list[Exception] = []
        metrics: list[Any] = []
        params: dict[str, str] = {}
        files: list[tuple[str, bytes]] = []
        for item in items:
            if type(item) is Deferred:
                try:
                    item = item()
                except Exception as exc:
                    errors.append(exc)
                    continue
            what = item[0]
            if what == "metric":
                metrics.append(Metric(item[1], item[2], item[3], item[4]))
            elif what == "params":
                params.update((k, v) for k, v in item[1].items() if self._params.get(k) != v)
            elif what == "file":
                files.append((item[1], item[2]))
        for start in range(0, len(metrics), _METRICS_PER_BATCH):
            try:
                self.client.log_batch(
                    self.run_id, metrics=metrics[start : start + _METRICS_PER_BATCH]
                )
            except Exception as exc:
                errors.append(exc)
        param_list = [Param(k, v) for k, v in params.items()]
        for start in range(0, len(param_list), _PARAMS_PER_BATCH):
            chunk = param_list[start : start + _PARAMS_PER_BATCH]
            try:
                self.client.log_batch(self.run_id, params=chunk)
                self._params.update((p.key, p.value) for p in chunk)
            except Exception as exc:
                errors.append(exc)
        if files:
            try:
                self._upload(files)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _upload(self, files: list[tuple[str, bytes]]) -> None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="tallyboard-mlflow-") as tmp:
            for path, data in files:
                folder, name = path.rsplit("/", 1)
                local = os.path.join(tmp, name)
                with open(local, "wb") as f:
                    f.write(data)
                self.client.log_artifact(self.run_id, local, artifact_path=folder)
                os.remove(local)

    def __repr__(self) -> str:
        return f"<MlflowSink run={self.run_name!r} {self.tracking_uri!r}>"


@hookimpl
def register_sinks(register: Any) -> None:
    register(
        SinkSpec(
            name=SINK,
            open=MlflowSink,
            description="MLflow runs: metrics, params, artifacts (local store or tracking URI)",
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    for kind, encode in ENCODERS.items():
        register(kind, SINK, encode)
