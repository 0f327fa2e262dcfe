"""One MLflow run fed from a writer, with a deadline no network failure can stretch.

The caller only queues: every call to MLflow (finding the experiment, creating the run, sending
values, ending the run) runs on the sink's sender thread. ``flush()`` and ``close()`` wait for
that thread at most :func:`deadline` seconds, whatever MLflow's own HTTP retries do. Values
MLflow could not take for a network reason stay queued and are sent again when it answers;
whatever is still unsent at ``close()`` is said in one warning with its count (the writer's
local files keep every value: ``tallyboard sync`` sends them later).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

from tallyboard import Deferred, SinkOptions
from tallyboard.values import env_seconds
from tallyboard.warn import SinkWarning

from . import record

SINK = "mlflow"
STORE_DIR = "mlflow"
#: Environment variable holding the deadline in seconds of ``flush()``/``close()``.
DEADLINE_ENV = "TALLYBOARD_MLFLOW_DEADLINE"
#: Default deadline in seconds.
DEFAULT_DEADLINE = 30.0
#: Most items a sink keeps waiting for the sender; beyond it new ones are not queued (counted).
MAX_PENDING = 100_000
#: Items waiting that wake the sender before ``flush_secs`` is up.
SEND_AT = 1000
#: Longest time a queued value waits before it is sent, in seconds (or ``flush_secs`` if less).
MAX_SEND_SECS = 10.0
#: Pause in seconds between two tries while MLflow does not answer.
RETRY_SECS = 5.0
#: What ``close()`` waits, in seconds, when MLflow is known not to answer (one more try).
DOWN_GRACE_SECS = 2.0
_METRICS_PER_BATCH = 1000  # MLflow's most entities in one log_batch
_PARAMS_PER_BATCH = 100
#: MLflow error codes that say the request itself is wrong: sending it again cannot help.
_REFUSED = {
    "INVALID_PARAMETER_VALUE",
    "RESOURCE_ALREADY_EXISTS",
    "RESOURCE_DOES_NOT_EXIST",
    "INVALID_STATE",
    "BAD_REQUEST",
    "MALFORMED_REQUEST",
    "PERMISSION_DENIED",
    "UNAUTHENTICATED",
    "ENDPOINT_NOT_FOUND",
}

log = logging.getLogger("tallyboard.mlflow")
#: Run statuses a run ends with.
_ENDED = ("FINISHED", "FAILED", "KILLED")


class Refused(Exception):
    """MLflow refused a value (or it could not be encoded): sending it again cannot help."""


def deadline() -> float:
    """Seconds ``flush()`` and ``close()`` wait for MLflow at most (``TALLYBOARD_MLFLOW_DEADLINE``)."""
    return env_seconds(DEADLINE_ENV, DEFAULT_DEADLINE)


def is_refusal(exc: BaseException) -> bool:
    """True when MLflow answered and refused (sending again cannot help); False for a network
    failure, a timeout or a server error, which are tried again."""
    return isinstance(exc, Refused) or getattr(exc, "error_code", None) in _REFUSED


# -- the process ending with an exception: runs end FAILED, as mlflow.start_run's do ------------

_failing = False
_hook_lock = threading.Lock()
_hooked = False


def _install_excepthook() -> None:
    """Chain ``sys.excepthook`` once, so a run closed at exit after an uncaught exception ends
    FAILED."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return
        previous = sys.excepthook

        def hook(kind: Any, value: Any, tb: Any) -> None:
            global _failing
            _failing = True
            previous(kind, value, tb)

        sys.excepthook = hook
        _hooked = True


def process_failing() -> bool:
    """True after an uncaught exception, or inside an ``except``/``with`` exit handling one."""
    return _failing or sys.exc_info()[0] is not None


# -- runs --------------------------------------------------------------------------------------

_open_lock = threading.Lock()
#: Open sinks by their writer's log dir, so a sub-run's sink finds its parent's run.
_open: dict[str, MlflowSink] = {}
#: Run ids by (tracking URI, run key): a re-opened writer continues its run.
_runs: dict[tuple[str, str], str] = {}


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


_tags: dict[str, str] | None = None


def _run_tags() -> dict[str, str]:
    """The tags ``mlflow.start_run`` sets (user, source name and type, git commit ...), resolved
    once per process (about 8 ms each time)."""
    global _tags
    if _tags is None:
        from mlflow.tracking.context.registry import resolve_tags

        _tags = {str(k): str(v) for k, v in resolve_tags({}).items()}
    return dict(_tags)


class MlflowSink:
    """One MLflow run fed from a writer: records queue in ``write``; a thread sends batches.

    ``options.extra["confirm"]`` (set by ``tallyboard sync``) makes ``flush()`` raise
    ``OSError`` when values are not stored within the deadline, and makes the sink skip params
    the run already holds.
    """

    tracking_uri: str
    client: Any
    experiment_id: str | None
    run_id: str | None

    def __init__(self, options: SinkOptions) -> None:
        from mlflow.tracking import MlflowClient

        self.deadline = deadline()
        self.chosen = chosen = str(options.extra.get("sink", SINK))
        self.confirm = bool(options.extra.get("confirm", False))
        writer_dir = str(options.extra.get("writer_log_dir", options.log_dir))
        self.writer_dir = writer_dir if "://" in writer_dir else os.path.abspath(writer_dir)
        self.key = _key(writer_dir)
        self.parent: MlflowSink | None = None
        self.experiment_id = None
        self.run_id = None
        artifacts: str | None = None
        with _open_lock:
            if self.key in _open:
                raise ValueError(
                    f"another writer already logs {writer_dir!r} to MLflow; "
                    "close it first (two writers must not share a run)"
                )
            parent = _parent_of(self.key, chosen)
            if parent is not None:
                self.parent, run_name = parent
                self.tracking_uri = self.parent.tracking_uri
                self.client = self.parent.client
                experiment = ""
            else:
                if "://" in chosen:  # "mlflow+<tracking URI>": the URI itself, not a sub-path
                    head = chosen.split("://", 1)[0]
                    self.tracking_uri = chosen.split("+", 1)[1] if "+" in head else options.log_dir
                    artifacts = _sqlite_artifacts(self.tracking_uri)
                else:
                    self.tracking_uri, artifacts = _local_store(options.log_dir)
                self.client = MlflowClient(self.tracking_uri)
                experiment, run_name = _names(writer_dir)
                experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or experiment
            _open[self.key] = self
        try:
            self._tags = _run_tags()  # in the caller: sys.argv, user and git as start_run sees
        except BaseException:
            with _open_lock:
                del _open[self.key]
            raise
        _install_excepthook()
        self.run_name = run_name
        self._experiment_name = experiment
        self._artifacts = artifacts
        self._record = record.load(self.writer_dir, self.tracking_uri)
        self.send_secs = min(float(options.flush_secs), MAX_SEND_SECS)
        self._run_lock = threading.Lock()
        self._cond = threading.Condition()
        self._items: list[Any] = []
        self._queued = 0  # items ever queued
        self._settled = 0  # items stored, refused or left out
        self._stored = 0  # items stored
        self._left_out = 0  # items not queued: the queue was full
        self._error: BaseException | None = None  # a refusal, raised by the next call
        self._refused = False
        self._offline: BaseException | None = None  # the last network failure, until a success
        self._stalled = False  # a flush ran past the deadline; cleared by the next success
        self._told = False  # the outage was logged; cleared by the next success
        self._closing = False
        self._give_up = False
        self._final_status: str | None = "FINISHED"
        self._ended = False
        self._wake = True  # find or create the run at once
        self._params: dict[str, str] = {}
        self._history: dict[str, set[tuple[int, int]]] = {}
        self._thread = threading.Thread(
            target=self._loop, name=f"tallyboard-mlflow-{run_name}", daemon=True
        )
        self._thread.start()

    # -- the run (sender thread) ---------------------------------------------------------------

    def _ensure_run(self) -> str:
        """The run's id: found or created on first use (idempotent, network calls)."""
        with self._run_lock:
            if self.run_id is not None:
                return self.run_id
            parent_run = None
            if self.parent is not None:
                parent_run = self.parent._ensure_run()
                self.experiment_id = self.parent.experiment_id
            cache = (self.tracking_uri, self.key)
            run_id = _runs.get(cache) or self._recorded_run()
            if run_id is not None:
                if not self.confirm:
                    self.client.update_run(run_id, status="RUNNING")
            else:
                if self.experiment_id is None:
                    self.experiment_id = self._experiment()
                tags = dict(self._tags)
                if parent_run is not None:
                    tags["mlflow.parentRunId"] = parent_run
                run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.run_name)
                run_id = str(run.info.run_id)
            if self.confirm:
                run = self.client.get_run(run_id)
                self._params = {str(k): str(v) for k, v in run.data.params.items()}
            _runs[cache] = run_id
            self.run_id = run_id
            fields: dict[str, Any] = {"run_id": run_id}
            if self.experiment_id is not None:
                fields["experiment_id"] = self.experiment_id
            if not self.confirm:
                fields.update(status="RUNNING", live=True)
            record.update(self.writer_dir, self.tracking_uri, **fields)
            return run_id

    def _recorded_run(self) -> str | None:
        """The run named in the log dir's record, if MLflow still holds it (not deleted)."""
        run_id = self._record.get("run_id")
        if not isinstance(run_id, str):
            return None
        try:
            run = self.client.get_run(run_id)
        except Exception as exc:
            if is_refusal(exc):  # gone (a new store, or deleted for good): start a new run
                return None
            raise
        if run.info.lifecycle_stage == "deleted":
            return None
        self.experiment_id = str(run.info.experiment_id)
        return run_id

    def _experiment(self) -> str:
        name = self._experiment_name
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self.client.create_experiment(name, artifact_location=self._artifacts))
        except Exception:  # another process created it meanwhile
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return str(found.experiment_id)

    # -- the sink ------------------------------------------------------------------------------

    def write(self, data: Any) -> None:
        """Queue one encoded record (a heavy kind's encode runs on the sender thread).

        When :data:`MAX_PENDING` records wait (MLflow down or slower than the caller), the
        caller waits for room only while MLflow answers and at most the deadline; a record
        that finds no room is left out of MLflow (counted, in the close warning; the local
        files keep it)."""
        with self._cond:
            self._raise_error()
            if self._closing:
                raise ValueError("write() on a closed mlflow sink")
            self._queued += 1
            if len(self._items) >= MAX_PENDING:
                self._cond.notify_all()
                if self._offline is None and not self._stalled:
                    self._cond.wait_for(
                        lambda: len(self._items) < MAX_PENDING or self._offline is not None,
                        self.deadline,
                    )
                if len(self._items) >= MAX_PENDING:
                    self._left_out += 1
                    self._settled += 1
                    return
            self._items.append(data)
            if len(self._items) == SEND_AT:
                self._cond.notify_all()

    def flush(self) -> None:
        """Return once everything queued so far is stored in MLflow, or after the deadline.

        While MLflow does not answer, values stay queued (sent when it answers again) and
        ``flush`` returns at once; with ``confirm`` it raises ``OSError`` instead. A value
        MLflow refused is raised as ``OSError``."""
        with self._cond:
            self._raise_error()
            target = self._queued
            self._wake = True
            self._cond.notify_all()
            done = self._cond.wait_for(
                lambda: (
                    self._settled >= target
                    or self._error is not None
                    or (not self.confirm and self._down())
                ),
                self.deadline,
            )
            self._raise_error()
            if done and self._settled >= target:
                return
            missing = target - self._settled
            if not done:
                self._stalled = True
            why = self._why()
            if self.confirm:
                raise OSError(
                    f"mlflow sink: {missing} values not stored at {self.tracking_uri} "
                    f"within {self.deadline:g} s ({why})"
                )
            if not self._told:
                self._told = True
                log.warning(
                    "mlflow sink: %d values wait for %s (%s); they are sent when it answers",
                    missing,
                    self.tracking_uri,
                    why,
                )

    def close(self) -> None:
        """Send what is queued and end the run, within the deadline; idempotent.

        The run ends ``FAILED`` when the process is ending with an exception (or a value was
        refused), else ``FINISHED``. What could not be sent in time is said in one
        ``SinkWarning`` with its count (with ``confirm``: an ``OSError``)."""
        failing = process_failing()
        end_by = time.monotonic() + self.deadline
        with self._cond:
            if self._closing:
                return
            self._closing = True
            self._final_status = self._status_at_close(failing)
            self._wake = True
            self._cond.notify_all()
        if self._down():  # known down (this run or its parent's): one more short try
            end_by = min(end_by, time.monotonic() + DOWN_GRACE_SECS)
        self._thread.join(max(0.0, end_by - time.monotonic()))
        if self._thread.is_alive():  # the same server: its other runs need not wait for it
            self._stalled = True
            if self.parent is not None:
                self.parent._stalled = True
        with self._cond:
            self._give_up = True
            self._cond.notify_all()
            unsent = self._queued - self._stored
            ended, why, status = self._ended, self._why(), self._final_status
            error, self._error = self._error, None
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]
        fields: dict[str, Any] = {"unsent": unsent, "ended": ended}
        if status is not None:
            fields["status"] = status
        record.update(self.writer_dir, self.tracking_uri, **fields)
        if error is not None:
            raise OSError(f"mlflow sink failed to log to {self.tracking_uri}: {error}") from error
        if unsent or (not ended and status is not None):
            message = (
                f"mlflow sink: {unsent} values could not be sent to {self.tracking_uri} within "
                f"{self.deadline:g} s ({why}); the run's local files keep them: "
                f"`tallyboard sync {self.writer_dir} --to {self.chosen}` sends them"
                if unsent
                else f"mlflow sink: run {self.run_id} at {self.tracking_uri} could not be "
                f"marked {status} within {self.deadline:g} s ({why}); "
                f"`tallyboard sync {self.writer_dir} --to {self.chosen}` ends it"
            )
            if self.confirm:
                raise OSError(message)
            import warnings

            warnings.warn(message, SinkWarning, stacklevel=2)

    def _status_at_close(self, failing: bool) -> str | None:
        """FAILED or FINISHED; for ``tallyboard sync`` (``confirm``): the status the run's record
        holds, FINISHED without one, None (leave it) while its writer may still be running."""
        if self.confirm and not failing and not self._refused:
            recorded = self._record.get("status")
            if recorded == "RUNNING":
                return None
            return recorded if recorded in _ENDED else "FINISHED"
        return "FAILED" if failing or self._refused else "FINISHED"

    def abandon(self) -> None:
        """In a forked child: forget what is queued (the parent sends it)."""
        with self._cond:
            self._items.clear()
            self._closing = self._give_up = True
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]

    def _down(self) -> bool:
        """MLflow is known not to answer (for this run or its parent's)."""
        if self._offline is not None or self._stalled:
            return True
        return self.parent is not None and self.parent._down()

    @property
    def unsent(self) -> int:
        """Values accepted and not (yet) stored in MLflow."""
        with self._cond:
            return self._queued - self._stored

    def _why(self) -> str:
        if self._offline is not None:
            return f"{type(self._offline).__name__}: {str(self._offline)[:300]}"
        return "no answer yet"

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise OSError(f"mlflow sink failed to log to {self.tracking_uri}: {error}") from error

    # -- the sender thread ---------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                pause = self.send_secs
                if self._offline is not None:
                    pause = 0.5 if self._closing else RETRY_SECS
                self._cond.wait_for(
                    lambda: (
                        self._give_up or self._closing or self._wake or len(self._items) >= SEND_AT
                    ),
                    pause,
                )
                if self._give_up:
                    return
                items, self._items, self._wake = self._items, [], False
                closing = self._closing
            try:
                self._ensure_run()
                if items:
                    self._send(items)
                if closing and self._final_status is not None:
                    self.client.set_terminated(self.run_id, self._final_status)
            except Exception as exc:
                if is_refusal(exc):  # this batch cannot be stored: raised by the next call
                    with self._cond:
                        self._error = self._error or (
                            exc.args[0] if isinstance(exc, Refused) else exc
                        )
                        self._refused = True
                        self._stored += len(items)  # the refusal is raised, not counted
                        self._settled += len(items)
                        if self._final_status is not None:
                            self._final_status = "FAILED"
                        self._cond.notify_all()
                    if closing:
                        self._end_after_refusal()
                        return
                    continue
                with self._cond:
                    self._items[:0] = items  # a network failure: keep them, try again
                    if self._offline is None:
                        log.warning(
                            "mlflow sink: %s does not answer (%s: %s); values stay queued",
                            self.tracking_uri,
                            type(exc).__name__,
                            str(exc)[:300],
                        )
                    self._offline = exc
                    self._cond.notify_all()
                continue
            with self._cond:
                self._stored += len(items)
                self._settled += len(items)
                self._offline = None
                self._stalled = self._told = False
                self._cond.notify_all()
                if closing and not self._items:
                    self._ended = True
                    return

    def _end_after_refusal(self) -> None:
        """Closing after a refused batch: end the run FAILED (once; a failure is left as is)."""
        if self.run_id is None or self._final_status is None:
            return
        try:
            self.client.set_terminated(self.run_id, self._final_status)
        except Exception:
            return
        with self._cond:
            self._ended = True

    def _send(self, items: list[Any]) -> None:
        """Send metrics, params and files in separate calls: one failing loses no other kind.
        A network failure is raised at once (the whole batch is sent again; MLflow keeps one
        copy of a metric sent twice); a refusal after everything else was sent."""
        from mlflow.entities import Metric

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
                params.update(item[1])
            elif what == "file":
                files.append((item[1], item[2]))
        assert self.run_id is not None
        if self.confirm and self._record.get("live"):
            metrics = [m for m in metrics if (m.step, m.timestamp) not in self._logged(m.key)]
        for start in range(0, len(metrics), _METRICS_PER_BATCH):
            chunk = metrics[start : start + _METRICS_PER_BATCH]
            self._call(errors, self.client.log_batch, self.run_id, metrics=chunk)
        if params:
            self._log_params(errors, params)
        if files:
            self._call(errors, self._upload, files)
        if errors:
            raise Refused(errors[0])

    def _logged(self, key: str) -> set[tuple[int, int]]:
        """(step, timestamp) of every value of metric ``key`` the run holds (fetched once).

        ``tallyboard sync`` skips those: the live sink sent the value as given (float64), the
        event file holds it as float32, and MLflow would keep both."""
        seen = self._history.get(key)
        if seen is None:
            history = self.client.get_metric_history(self.run_id, key)
            seen = self._history[key] = {(int(m.step), int(m.timestamp)) for m in history}
        return seen

    def _log_params(self, errors: list[Exception], params: dict[str, str]) -> None:
        from mlflow.entities import Param

        if self.confirm:  # as given live (the record), not as read back; the run's stay
            recorded = self._record.get("params")
            if isinstance(recorded, dict):
                params = {k: str(recorded.get(k, v)) for k, v in params.items()}
            params = {k: v for k, v in params.items() if k not in self._params}
        else:
            record.update(self.writer_dir, self.tracking_uri, params=params)
        todo = [Param(k, v) for k, v in params.items() if self._params.get(k) != v]
        for start in range(0, len(todo), _PARAMS_PER_BATCH):
            chunk = todo[start : start + _PARAMS_PER_BATCH]
            if self._call(errors, self.client.log_batch, self.run_id, params=chunk):
                self._params.update((p.key, p.value) for p in chunk)

    @staticmethod
    def _call(errors: list[Exception], fn: Any, *args: Any, **kwargs: Any) -> bool:
        """``fn(...)``: True when it worked; a refusal is collected, a network failure raised."""
        try:
            fn(*args, **kwargs)
        except Exception as exc:
            if not is_refusal(exc):
                raise
            errors.append(exc)
            return False
        return True

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
