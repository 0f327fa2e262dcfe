"""The MLflow calls the sink makes, each under a timeout the sink gives, none retried by MLflow.

``MlflowClient`` sends each request to a tracking server through MLflow's HTTP layer, which
retries a failed request itself (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, 7 by default, with a
backoff that doubles from ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR``, 2 s: minutes in all) and
waits ``MLFLOW_HTTP_REQUEST_TIMEOUT`` (120 s) for each answer. A sink's call could so outlive
the sink's deadline by minutes and deliver values after ``close()`` said they were not sent.
The sink retries by itself (:class:`tallyboard.plugin.network.NetworkSink`), so for a tracking
server (``http://``, ``https://``) it talks through :class:`BoundedClient` instead: MLflow's own
REST store and request function (``mlflow.utils.rest_utils.http_request``), each request sent
once (``max_retries=0``) with the timeout the sink gives for that call
(:meth:`~tallyboard.plugin.network.NetworkSink.call_timeout`). Nothing process-wide changes: a
user's own MLflow calls keep MLflow's settings.

Other tracking URIs (``sqlite:///``, a file store, a store plugin) go through ``MlflowClient``
as they are: no HTTP retries there.

MLflow internals this relies on (``tests/test_mlflow_deadline.py`` checks each still exists):
``RestStore._call_endpoint`` (every request of the REST store passes there) and
``RestStore._METHOD_TO_INFO`` (the endpoint and method of each request).
"""

from __future__ import annotations

import json
import mimetypes
import os
import posixpath
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlparse

from tallyboard.plugin.network import Refused

#: Tracking URI schemes that reach a tracking server over HTTP.
HTTP_SCHEMES = ("http", "https")
_HISTORY_PAGE = 25_000  # metric values per get-history page, as MlflowClient asks


def client_for(tracking_uri: str, timeout: Callable[[], float]) -> Any:
    """The client the sink calls: :class:`BoundedClient` for a tracking server, else
    ``MlflowClient``.

    Args:
        tracking_uri: Where the runs go.
        timeout: Called before each request; its result is the request's timeout in seconds.
    """
    if urlparse(tracking_uri).scheme in HTTP_SCHEMES:
        return BoundedClient(tracking_uri, timeout)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri)


def _once(timeout: Callable[[], float]) -> dict[str, Any]:
    """``http_request`` arguments: no retry, the timeout the sink gives now."""
    return {"max_retries": 0, "backoff_factor": 0, "timeout": timeout()}


def _store_class() -> type:
    from mlflow.store.tracking.rest_store import RestStore
    from mlflow.utils.proto_json_utils import parse_dict
    from mlflow.utils.rest_utils import http_request, verify_rest_response

    class OnceRestStore(RestStore):  # type: ignore[misc]
        """MLflow's REST store, each request sent once under the sink's timeout."""

        def __init__(self, get_host_creds: Any, timeout: Callable[[], float]) -> None:
            super().__init__(get_host_creds)
            self._timeout = timeout

        def _call_endpoint(
            self,
            api: Any,
            json_body: str | None = None,
            endpoint: str | None = None,
            retry_timeout_seconds: Any = None,
            response_proto: Any = None,
        ) -> Any:
            path, method = self._METHOD_TO_INFO[api]
            endpoint = endpoint or path
            body = json.loads(json_body) if json_body is not None else None
            where = {"params": body} if method == "GET" else {"json": body}
            response = http_request(
                self.get_host_creds(), endpoint, method, **_once(self._timeout), **where
            )
            response = verify_rest_response(response, endpoint)
            proto = response_proto if response_proto is not None else api.Response()
            if response.status_code != 204:
                parse_dict(js_dict=json.loads(response.text), message=proto)
            return proto

    return OnceRestStore


_store_type: type | None = None


class BoundedClient:
    """The part of ``MlflowClient`` the sink uses, for a tracking server, every request sent
    once with the timeout ``timeout()`` gives.

    Args:
        tracking_uri: The server (``http://`` or ``https://``).
        timeout: Called before each request: its timeout in seconds (it may raise to forbid
            the request).
    """

    def __init__(self, tracking_uri: str, timeout: Callable[[], float]) -> None:
        global _store_type
        from mlflow.utils.credentials import get_default_host_creds

        if _store_type is None:
            _store_type = _store_class()
        self.tracking_uri = tracking_uri
        self._timeout = timeout
        self._store = _store_type(partial(get_default_host_creds, tracking_uri), timeout)
        self._artifact_uris: dict[str, str] = {}

    def get_experiment_by_name(self, name: str) -> Any:
        """The experiment named ``name``, or None."""
        return self._store.get_experiment_by_name(name)

    def create_experiment(self, name: str, artifact_location: str | None = None) -> str:
        """A new experiment's id."""
        return str(self._store.create_experiment(name, artifact_location, []))

    def create_run(self, experiment_id: str, tags: dict[str, str], run_name: str) -> Any:
        """A new run, as ``MlflowClient.create_run`` makes it (user from ``mlflow.user``)."""
        from mlflow.entities import RunTag

        return self._store.create_run(
            experiment_id=experiment_id,
            user_id=tags.get("mlflow.user", "unknown"),
            start_time=_now_ms(),
            tags=[RunTag(k, v) for k, v in tags.items()],
            run_name=run_name,
        )

    def get_run(self, run_id: str) -> Any:
        """The run (info and data)."""
        run = self._store.get_run(run_id)
        self._artifact_uris[run_id] = str(run.info.artifact_uri)
        return run

    def update_run(self, run_id: str, status: str) -> None:
        """Set the run's status, keeping its end time (as ``MlflowClient.update_run``)."""
        from mlflow.entities import RunStatus

        run = self.get_run(run_id)
        self._store.update_run_info(run_id, RunStatus.from_string(status), run.info.end_time, None)

    def set_terminated(self, run_id: str, status: str) -> None:
        """End the run with ``status``, now."""
        from mlflow.entities import RunStatus

        self._store.update_run_info(run_id, RunStatus.from_string(status), _now_ms(), None)

    def log_batch(
        self, run_id: str, metrics: Sequence[Any] = (), params: Sequence[Any] = ()
    ) -> None:
        """Metrics and params in one request (the sink keeps batches within MLflow's limits)."""
        self._store.log_batch(run_id, list(metrics), list(params), [])

    def get_metric_history(self, run_id: str, key: str) -> list[Any]:
        """Every value of metric ``key``, page by page."""
        history: list[Any] = []
        token = None
        while True:
            page = self._store.get_metric_history(run_id, key, _HISTORY_PAGE, token)
            history.extend(page)
            token = page.token
            if not token:
                return history

    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        """Upload one file under ``artifact_path`` of the run's artifacts: one PUT to the
        server when it serves them (``mlflow-artifacts:`` or ``http(s)://`` artifact URIs);
        else through MLflow's artifact repository for that URI (its client's own timeouts)."""
        uri = self._artifact_uris.get(run_id) or str(self.get_run(run_id).info.artifact_uri)
        scheme = urlparse(uri).scheme
        if scheme == "mlflow-artifacts":
            from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository

            base = MlflowArtifactsRepository.resolve_uri(uri, self.tracking_uri)
        elif scheme in HTTP_SCHEMES:
            base = uri
        else:
            from mlflow.tracking import MlflowClient

            MlflowClient(self.tracking_uri).log_artifact(run_id, local_path, artifact_path)
            return
        from mlflow.utils.credentials import get_default_host_creds
        from mlflow.utils.rest_utils import http_request

        name = os.path.basename(local_path)
        endpoint = posixpath.join("/", *([artifact_path] if artifact_path else []), name)
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        with open(local_path, "rb") as f:
            response = http_request(
                get_default_host_creds(base),
                endpoint,
                "PUT",
                data=f,
                extra_headers={"Content-Type": kind},
                **_once(self._timeout),
            )
        if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
            raise Refused(
                OSError(f"artifact {endpoint} refused: HTTP {response.status_code} {response.text}")
            )
        response.raise_for_status()


def _now_ms() -> int:
    return int(time.time() * 1000)
