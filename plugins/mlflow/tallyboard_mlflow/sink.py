"""One MLflow run fed from a writer, with a deadline no network failure can stretch.

The sink is a :class:`tallyboard.plugin.network.NetworkSink`: the caller only queues, and every
call to MLflow (finding the experiment, creating the run, sending values, ending the run) runs
on the sink's sender thread. ``flush()`` and ``close()`` wait for that thread at most the
deadline (the ``deadline`` setting, ``sinks=[("mlflow+http://host:5000", {"deadline": 60})]``;
else ``TALLYBOARD_MLFLOW_DEADLINE``, else 30 s): each request to a tracking server is sent once
with a timeout within it (:mod:`tallyboard_mlflow.calls`), MLflow's own HTTP retries unused, so
no call outlives ``close()``. Values MLflow could not take for a network reason stay queued and
are sent again when it answers; whatever is still unsent at ``close()`` is said in one warning
with its count, those sent and not confirmed apart (the writer's local files keep every value:
``tallyboard sync`` sends them later).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from tallyboard import SinkOptions
from tallyboard.plugin.network import NetworkSettings, NetworkSink, Outcome, Refused
from tallyboard.values import env_seconds

from . import record
from .calls import client_for

SINK = "mlflow"
STORE_DIR = "mlflow"
#: Environment variable holding the default deadline in seconds of ``flush()``/``close()``.
DEADLINE_ENV = "TALLYBOARD_MLFLOW_DEADLINE"
#: Default deadline in seconds.
DEFAULT_DEADLINE = 30.0
#: What ``close()`` waits by default, in seconds, when MLflow is known not to answer.
DOWN_GRACE_SECS = NetworkSettings.grace_secs
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


def deadline() -> float:
    """Seconds ``flush()`` and ``close()`` wait for MLflow at most when the ``deadline`` setting
    is not given (``TALLYBOARD_MLFLOW_DEADLINE``, else 30)."""
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


class MlflowSink(NetworkSink):
    """One MLflow run fed from a writer: records queue in ``write``; a thread sends batches.

    Under ``tallyboard sync`` (``options.confirm``) ``flush()`` raises ``OSError`` when values
    are not stored within the deadline, and the sink skips params the run already holds.
    """

    tracking_uri: str
    client: Any
    experiment_id: str | None
    run_id: str | None

    def __init__(self, options: SinkOptions) -> None:
        settings = options.settings
        if not (isinstance(settings, NetworkSettings) and settings.deadline is not None):
            deadline()  # a bad TALLYBOARD_MLFLOW_DEADLINE fails here, before anything is held
        self.chosen = chosen = str(options.extra.get("sink", SINK))
        confirm = bool(options.confirm or options.extra.get("confirm", False))
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
                experiment = ""
            else:
                if "://" in chosen:  # "mlflow+<tracking URI>": the URI itself, not a sub-path
                    head = chosen.split("://", 1)[0]
                    self.tracking_uri = chosen.split("+", 1)[1] if "+" in head else options.log_dir
                    artifacts = _sqlite_artifacts(self.tracking_uri)
                else:
                    self.tracking_uri, artifacts = _local_store(options.log_dir)
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
        # every call to a tracking server is sent once, under this sink's call_timeout()
        self.client = client_for(self.tracking_uri, self.call_timeout)
        self.run_name = run_name
        self._experiment_name = experiment
        self._artifacts = artifacts
        self._record = record.load(self.writer_dir, self.tracking_uri)
        self._run_lock = threading.Lock()
        self._was_refused = False
        self._final_status: str | None = "FINISHED"
        self._ended = False  # the run was marked with its final status
        self._params: dict[str, str] = {}
        self._history: dict[str, set[tuple[int, int]]] = {}
        self.confirm = confirm
        super().__init__(options, where=self.tracking_uri)  # the sender thread starts here

    def default_deadline(self) -> float:
        """``TALLYBOARD_MLFLOW_DEADLINE`` seconds, else 30."""
        return deadline()

    def is_refusal(self, exc: BaseException) -> bool:
        """MLflow answered and refused: see :func:`is_refusal`."""
        return is_refusal(exc)

    # -- the sender thread's work (NetworkSink) ------------------------------------------------

    def start(self) -> None:
        """Find or create the run before the first batch."""
        self._ensure_run()

    def finish(self) -> None:
        """Mark the run with its final status (none under sync while its writer may run)."""
        if self._final_status is not None:
            assert self.run_id is not None
            self.client.set_terminated(self.run_id, self._final_status)
            self._ended = True

    def refused(self, error: BaseException) -> None:
        """A value MLflow refused: the run ends FAILED."""
        self._was_refused = True
        if self._final_status is not None:
            self._final_status = "FAILED"

    def hint(self, outcome: Outcome) -> str:
        """What ``tallyboard sync`` does about it."""
        command = f"`tallyboard sync {self.writer_dir} --to {self.chosen}`"
        if outcome.unsent:
            return f"the run's local files keep them: {command} sends them"
        return f"run {self.run_id} is not marked {self._final_status}: {command} ends it"

    # -- the sink ------------------------------------------------------------------------------

    def close(self) -> None:
        """Send what is queued and end the run, within the deadline; idempotent.

        The run ends ``FAILED`` when the process is ending with an exception (or a value was
        refused), else ``FINISHED``. What could not be sent in time is said in one
        ``SinkWarning`` with its count (under ``confirm``: an ``OSError``)."""
        if self.closed:
            return
        self._final_status = self._status_at_close(process_failing())
        outcome = self.stop()
        if outcome is None:
            return
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]
        fields: dict[str, Any] = {"unsent": outcome.unsent, "ended": self._ended}
        if self._final_status is not None:
            fields["status"] = self._final_status
        record.update(self.writer_dir, self.tracking_uri, **fields)
        self.report(outcome)

    def _status_at_close(self, failing: bool) -> str | None:
        """FAILED or FINISHED; for ``tallyboard sync`` (``confirm``): the status the run's record
        holds, FINISHED without one, None (leave it) while its writer may still be running."""
        if self.confirm and not failing and not self._was_refused:
            recorded = self._record.get("status")
            if recorded == "RUNNING":
                return None
            return recorded if recorded in _ENDED else "FINISHED"
        return "FAILED" if failing or self._was_refused else "FINISHED"

    def abandon(self) -> None:
        """In a forked child: forget what is queued (the parent sends it)."""
        super().abandon()
        with _open_lock:
            if _open.get(self.key) is self:
                del _open[self.key]

    def _ensure_run(self, client: Any = None) -> str:
        """The run's id: found or created on first use (idempotent, network calls), through
        ``client`` (a sub-run's sink passes its own: its calls are under its deadline)."""
        client = self.client if client is None else client
        with self._run_lock:
            if self.run_id is not None:
                return self.run_id
            parent_run = None
            if self.parent is not None:
                parent_run = self.parent._ensure_run(client)
                self.experiment_id = self.parent.experiment_id
            cache = (self.tracking_uri, self.key)
            run_id = _runs.get(cache) or self._recorded_run(client)
            if run_id is not None:
                if not self.confirm:
                    client.update_run(run_id, status="RUNNING")
            else:
                if self.experiment_id is None:
                    self.experiment_id = self._experiment(client)
                tags = dict(self._tags)
                if parent_run is not None:
                    tags["mlflow.parentRunId"] = parent_run
                run = client.create_run(self.experiment_id, tags=tags, run_name=self.run_name)
                run_id = str(run.info.run_id)
            if self.confirm:
                run = client.get_run(run_id)
                self._params = {str(k): str(v) for k, v in run.data.params.items()}
            _runs[cache] = run_id
            self.run_id = run_id
            fields: dict[str, Any] = {"run_id": run_id}
            if self.experiment_id is not None:
                fields["experiment_id"] = self.experiment_id
            if not self.confirm:
                fields["live"] = True
                if not self.gave_up:  # else close() recorded how the run ended already
                    fields["status"] = "RUNNING"
            record.update(self.writer_dir, self.tracking_uri, **fields)
            return run_id

    def _recorded_run(self, client: Any) -> str | None:
        """The run named in the log dir's record, if MLflow still holds it (not deleted)."""
        run_id = self._record.get("run_id")
        if not isinstance(run_id, str):
            return None
        try:
            run = client.get_run(run_id)
        except Exception as exc:
            if is_refusal(exc):  # gone (a new store, or deleted for good): start a new run
                return None
            raise
        if run.info.lifecycle_stage == "deleted":
            return None
        self.experiment_id = str(run.info.experiment_id)
        return run_id

    def _experiment(self, client: Any) -> str:
        name = self._experiment_name
        found = client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(client.create_experiment(name, artifact_location=self._artifacts))
        except Exception:  # another process created it meanwhile
            found = client.get_experiment_by_name(name)
            if found is None:
                raise
            return str(found.experiment_id)

    # -- the sink ------------------------------------------------------------------------------
    def send(self, items: list[Any]) -> None:
        """Send metrics, params and files in separate calls: one failing loses no other kind.
        A network failure is raised at once (the whole batch is sent again; MLflow keeps one
        copy of a metric sent twice); a refusal after everything else was sent."""
        from mlflow.entities import Metric

        errors: list[Exception] = []
        metrics: list[Any] = []
        params: dict[str, str] = {}
        files: list[tuple[str, bytes]] = []
        for item in items:
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
