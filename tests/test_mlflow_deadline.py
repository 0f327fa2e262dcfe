"""Every network call a network sink makes is bounded by a timeout the sink gives, and none is
retried by the client library: so ``close()`` returns within its deadline with the call on the
wire ended, and no value arrives after ``close()`` said it was not sent. Checked with a real
MLflow server on 127.0.0.1 (killed, then started again on the same port and store), a socket
that accepts connections and never answers, and a small ``NetworkSink`` of the test's own for
:meth:`~tallyboard.plugin.network.NetworkSink.call_timeout`. Deadlines are settings, kept short.
"""

from __future__ import annotations

import inspect
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow_support import MlflowServer
from tallyboard import SinkOptions, SummaryWriter
from tallyboard.plugin.network import NetworkSettings, NetworkSink
from tallyboard.warn import SinkWarning
from tb_server import free_port

#: The REST calls the sink makes through tallyboard_mlflow.calls.BoundedClient.
_SINK_APIS = (
    "GetExperimentByName",
    "CreateExperiment",
    "CreateRun",
    "GetRun",
    "UpdateRun",
    "LogBatch",
    "GetMetricHistory",
)


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A socket that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


def _sink_threads(name: str) -> list[threading.Thread]:
    """The sender threads of sinks named ``name`` still running a moment after ``close()``
    returned (a thread that gave up ends at once; one inside a call ends with the call, its
    timeout within the deadline: 0.5 s was once too short on a loaded machine, and a call
    MLflow's own client would make waits 120 s)."""
    threads = [t for t in threading.enumerate() if t.name.startswith(f"tallyboard-{name}-")]
    for thread in threads:
        thread.join(3.0)
    return [t for t in threads if t.is_alive()]


def _sink_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]


def test_the_mlflow_internals_the_bounded_client_relies_on_still_exist() -> None:
    """``tallyboard_mlflow.calls`` overrides ``RestStore._call_endpoint`` and reads each
    request's endpoint and method from ``RestStore._METHOD_TO_INFO``; it sends them with
    ``http_request``'s ``max_retries``, ``backoff_factor`` and ``timeout``."""
    from mlflow.protos import service_pb2
    from mlflow.store.tracking.rest_store import RestStore
    from mlflow.utils.rest_utils import http_request

    params = list(inspect.signature(RestStore._call_endpoint).parameters)
    assert params == [
        "self",
        "api",
        "json_body",
        "endpoint",
        "retry_timeout_seconds",
        "response_proto",
    ]
    for name in _SINK_APIS:
        path, method = RestStore._METHOD_TO_INFO[getattr(service_pb2, name)]
        assert path.startswith("/api/") and method in ("GET", "POST"), (name, path, method)
    assert {"max_retries", "backoff_factor", "timeout"} <= set(
        inspect.signature(http_request).parameters
    )


def test_a_server_that_never_answers_is_cut_off_at_the_sinks_timeout(
    tmp_path: Path, silent_url: str
) -> None:
    """MLflow's own client waits 120 s for each answer and retries 7 times; the sink's calls
    end within its deadline, so close() returns in time and its thread with it."""
    settings = {"deadline": 1.0, "grace_secs": 0.3, "retry_secs": 0.05}
    w = SummaryWriter(
        tmp_path / "exp" / "run", sinks=["tfevents", (f"mlflow+{silent_url}", settings)]
    )
    for step in range(20):
        w.add_scalar("loss", float(step), step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        w.close()
        closed = time.monotonic() - started
    assert closed < 1.0 + 1.0, closed
    assert not _sink_threads("mlflow"), "a call outlived close()"
    [said] = _sink_warnings(caught)
    assert "20 values could not be sent" in said and "within 1 s" in said, said


def test_close_against_a_killed_server_returns_in_time_and_nothing_arrives_after_it(
    tmp_path: Path,
) -> None:
    """The defect: MLflow's client retried a batch for minutes after close() gave up on it,
    and delivered it once the server was back. Now close() ends the sink's last call within
    the deadline; the server started again holds only what was delivered before."""
    from mlflow.tracking import MlflowClient

    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server")
    url = server.start()
    try:
        settings = {"deadline": 2.0, "grace_secs": 0.5, "retry_secs": 0.05}
        w = SummaryWriter(tmp_path / "exp" / "run", sinks=["tfevents", (f"mlflow+{url}", settings)])
        for step in range(10):
            w.add_scalar("loss", float(step), step)
        w.flush()
        server.kill()
        for step in range(10, 30):
            w.add_scalar("loss", float(step), step)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            started = time.monotonic()
            w.close()
            closed = time.monotonic() - started
        assert closed < 2.0 + 1.0, closed
        assert not _sink_threads("mlflow"), "a call outlived close()"
        [said] = _sink_warnings(caught)
        # refused, or, for a batch sent on the connection kept alive from before the kill,
        # reset: then counted as sent and never answered (the server may have read it before it
        # died). Either way nothing arrives: the server started again below holds none of it.
        assert "20 values could not be sent" in said, said

        server.start()
        client = MlflowClient(url)
        [run] = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
        steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss"))
        assert steps == list(range(10))
    finally:
        server.stop()


class _Probe(NetworkSink):
    """A network sink whose one "call" waits for ``answer`` at most ``call_timeout()``, as a
    client given that timeout does: set, the values are delivered; not set, the call times out
    after the request left (a silent server)."""

    def __init__(self, options: SinkOptions, where: str) -> None:
        self.timeouts: list[float] = []
        self.answer = threading.Event()
        super().__init__(options, where=where)

    def send(self, items: list[Any]) -> None:
        timeout = self.call_timeout()
        self.timeouts.append(timeout)
        if not self.answer.wait(timeout):
            raise TimeoutError("timed out")


def _probe(tmp_path: Path, where: str, **settings: Any) -> _Probe:
    chosen = {"send_secs": 60.0, "retry_secs": 0.05, **settings}
    options = SinkOptions(log_dir=str(tmp_path), settings=NetworkSettings(**chosen))
    return _Probe(options, f"probe://{where}")


class _Refused(NetworkSink):
    """A network sink whose every call connects to a port nothing listens on, as a client of a
    dead server does (the refusal raised from the client's own error)."""

    def send(self, items: list[Any]) -> None:
        try:
            socket.create_connection(("127.0.0.1", free_port()), self.call_timeout()).close()
        except ConnectionRefusedError as exc:
            raise RuntimeError("API request failed") from exc
        raise AssertionError("something listens on a free port")


def test_values_whose_every_call_was_refused_are_not_said_to_have_maybe_arrived(
    tmp_path: Path,
) -> None:
    settings = NetworkSettings(deadline=1.0, send_secs=60.0, retry_secs=0.05)
    sink = _Refused(SinkOptions(log_dir=str(tmp_path), settings=settings), where="probe://refused")
    sink.write(1.0)
    sink.write(2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sink.close()
    [said] = _sink_warnings(caught)
    assert "2 values could not be sent" in said and "never answered" not in said, said


def test_call_timeout_is_the_deadline_and_raises_once_close_gave_up(tmp_path: Path) -> None:
    sink = _probe(tmp_path, "answers", deadline=4.0)
    assert sink.call_timeout() == 4.0
    sink.answer.set()
    sink.write(1.0)
    sink.close()
    assert sink.unsent == 0
    with pytest.raises(TimeoutError, match="close"):
        sink.call_timeout()  # no call after close(): it would deliver what close() counted


def test_a_call_made_during_close_ends_before_close_stops_waiting(tmp_path: Path) -> None:
    """The value is first sent by close(): its call gets at most what close() has left, so
    close() waits for it to end; it was sent and never answered, which the warning says."""
    sink = _probe(tmp_path, "silent", deadline=1.0)
    sink.write(1.0)
    sink.write(2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        sink.close()
        closed = time.monotonic() - started
    assert sink.timeouts and 0 < sink.timeouts[0] <= 0.9 * 1.0, sink.timeouts
    assert closed < 1.0 + 0.5, closed
    assert not _sink_threads("_Probe"), "the call outlived close()"
    [said] = _sink_warnings(caught)
    assert "2 values could not be sent" in said and "2 of them were sent and never answered" in said
    with pytest.raises(TimeoutError):
        sink.call_timeout()
