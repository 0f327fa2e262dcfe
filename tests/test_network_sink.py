"""``tallyboard.plugin.network.NetworkSink``, through the example ``webhook`` sink and a real
HTTP server on 127.0.0.1: batches, retries with backoff, refusals, the deadline of ``flush()``
and ``close()`` against a dead and a silent server, what is said about undelivered values and
when, the bounded queue, and sync's ``confirm``. Deadlines are settings, kept short here."""

from __future__ import annotations

import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tallyboard import SinkOptions, SummaryWriter
from tallyboard.plugin.network import NetworkSettings, NetworkSink, Refused
from tallyboard.plugin.sinks import Deferred
from tallyboard.reading.sync import STATE_FILE, SyncError, sync
from tallyboard.warn import SinkWarning
from tb_server import free_port

pytest_plugins = ["tallyboard.testing"]

if TYPE_CHECKING:  # imported by pytest_plugins, not before it (assertion rewriting)
    from tallyboard.testing import IngestServer
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tallyboard-webhook"


@pytest.fixture
def webhook(register_plugin: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The example webhook plugin, registered for this test."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import tallyboard_webhook

    register_plugin(tallyboard_webhook, "webhook")
    return tallyboard_webhook


@pytest.fixture
def server(ingest_server: IngestServer) -> IngestServer:
    return ingest_server


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A socket that accepts connections and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}/ingest"


def _sink_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]


def test_values_go_in_batches_with_the_token_and_the_run_names(
    webhook: Any, server: IngestServer, tmp_path: Path
) -> None:
    entry = (f"webhook+{server.url}", {"token": "s3cret", "batch_size": 2})
    with SummaryWriter(tmp_path, sinks=["tfevents", entry]) as w:
        for step in range(5):
            w.add_scalar("loss", step / 4, step)
        w.add_confusion("cm", [[3, 1], [0, 4]], 5)
        w.add_scalars("acc", {"train": 0.5}, 5)
        w.flush()
        assert w._sinks[1][1].unsent == 0  # flush returned: all delivered
    records = server.records()  # in write order within a run (sub-runs are sinks of their own)
    assert [(r["tag"], r["step"], r["value"]) for run, r in records if run == "."] == [
        ("loss", 0, 0.0),
        ("loss", 1, 0.25),
        ("loss", 2, 0.5),
        ("loss", 3, 0.75),
        ("loss", 4, 1.0),
        ("cm", 5, [[3, 1], [0, 4]]),
    ]
    assert [(r["tag"], r["value"]) for run, r in records if run == "acc_train"] == [("acc", 0.5)]
    assert all(len(body["records"]) <= 2 for body in server.received)
    assert {h["Authorization"] for h in server.headers} == {"Bearer s3cret"}


def test_a_failing_server_is_tried_again_with_growing_pauses_and_nothing_is_lost(
    webhook: Any, server: IngestServer, tmp_path: Path
) -> None:
    server.statuses = [500, 503, 502, 200]
    settings = {"retry_secs": 0.1, "retry_max_secs": 0.4}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SummaryWriter(tmp_path, sinks=[(f"webhook+{server.url}", settings)]) as w:
            w.add_scalar("loss", 1.0, 0)
            w.add_scalar("loss", 2.0, 1)
            w.flush()  # the first try fails: flush returns, saying the values wait
            server.wait_for(lambda: bool(server.received))
    assert [r["value"] for _, r in server.records()] == [1.0, 2.0]  # once each, in order
    assert [s for _, s in server.attempts] == [500, 503, 502, 200]
    times = [t for t, _ in server.attempts]
    pauses = [b - a for a, b in zip(times, times[1:])]
    # each pause at least the one before it doubled (a loaded machine only makes them longer)
    assert pauses[0] >= 0.1 and pauses[1] >= 0.2 and pauses[2] >= 0.4, pauses
    [said] = _sink_warnings(caught)
    assert said.startswith("webhook sink: 2 values are not sent to") and "HTTPError" in said


def test_a_refusal_is_not_tried_again_and_is_raised_by_the_next_call(
    webhook: Any, server: IngestServer, tmp_path: Path
) -> None:
    server.statuses = [401]
    w = SummaryWriter(tmp_path, sinks=[f"webhook+{server.url}"])
    w.add_scalar("loss", 1.0, 0)
    with pytest.raises(OSError, match=r"webhook sink failed to send to .*ingest: HTTP Error 401"):
        w.flush()
    w.add_scalar("loss", 2.0, 1)  # later values still go
    w.close()
    assert [s for _, s in server.attempts] == [401, 200]
    assert [r["value"] for _, r in server.records()] == [2.0]


def test_flush_says_at_once_that_values_wait_and_close_counts_what_was_not_sent(
    webhook: Any, tmp_path: Path
) -> None:
    """A dead server (nothing listens): flush returns at once, saying so once per outage; close
    waits one short grace and counts everything not sent, in one warning."""
    url = f"http://127.0.0.1:{free_port()}/ingest"
    settings = {"deadline": 5, "grace_secs": 0.3, "retry_secs": 0.05}
    w = SummaryWriter(tmp_path, sinks=["tfevents", (f"webhook+{url}", settings)])
    for step in range(3):
        w.add_scalar("loss", float(step), step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        w.flush()
        w.add_scalar("loss", 3.0, 3)
        w.flush()  # the same outage: said once
        flushed = time.monotonic() - started
        started = time.monotonic()
        w.close()
        closed = time.monotonic() - started
    said = _sink_warnings(caught)
    assert said[0].startswith(f"webhook sink: 3 values are not sent to {url} yet (URLError")
    assert said[1].startswith(f"webhook sink: 4 values could not be sent to {url} within 5 s")
    assert len(said) == 2, said
    assert caught[0].filename == __file__  # pointed at the caller's line
    assert flushed < 2 and closed < 0.3 + 2, (flushed, closed)
    from conftest import load_run

    assert len(load_run(tmp_path).Scalars("loss")) == 4  # the local files keep everything


def test_a_silent_server_cannot_hold_flush_or_close_past_the_deadline(
    webhook: Any, silent_url: str, tmp_path: Path
) -> None:
    settings = {"deadline": 0.5, "grace_secs": 0.2}
    w = SummaryWriter(tmp_path, sinks=[(f"webhook+{silent_url}", settings)])
    w.add_scalar("loss", 1.0, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        w.flush()  # no answer within the deadline: it returns, saying so
        flushed = time.monotonic() - started
        started = time.monotonic()
        w.close()  # known silent now: the grace, not the deadline
        closed = time.monotonic() - started
    assert 0.5 <= flushed < 0.5 + 2 and closed < 0.2 + 2, (flushed, closed)
    said = _sink_warnings(caught)
    assert len(said) == 2 and "1 values are not sent" in said[0] and "1 values could not" in said[1]


def test_under_sync_flush_raises_unless_delivered_and_nothing_unconfirmed_is_remembered(
    webhook: Any, server: IngestServer, tmp_path: Path
) -> None:
    logdir = tmp_path / "runs"
    with SummaryWriter(logdir / "exp") as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_scalars("acc", {"train": 0.25}, 1)
    dead = f"webhook+http://127.0.0.1:{free_port()}/ingest"
    started = time.monotonic()
    with pytest.raises(SyncError, match=r"1 values not delivered to .* within 0.3 s"):
        sync(logdir, (dead, {"deadline": 0.3, "retry_secs": 0.05}))
    assert time.monotonic() - started < 0.3 * 4 + 2  # a flush and a close at most, then out
    sent = (logdir / STATE_FILE).read_text()
    assert '"scalar"' not in sent  # nothing remembered as sent
    summary = sync(logdir, (f"webhook+{server.url}", {"token": "t"}))
    assert summary.total == 2 and summary.runs == ["exp", "exp/acc_train"]
    assert sorted((run, r["tag"]) for run, r in server.records()) == [
        ("exp", "loss"),
        ("exp/acc_train", "acc"),
    ]


def test_a_full_queue_leaves_values_out_and_counts_them(webhook: Any, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/ingest"
    settings = {"max_pending": 3, "deadline": 2, "grace_secs": 0.1, "retry_secs": 0.05}
    w = SummaryWriter(tmp_path, sinks=[(f"webhook+{url}", settings)])
    sink = w._sinks[0][1]
    w.add_scalar("loss", -1.0, 0)
    with pytest.warns(SinkWarning, match="1 values are not sent"):
        w.flush()  # the server is found down
    started = time.monotonic()
    for step in range(10):
        w.add_scalar("loss", float(step), step)  # down: no waiting for room in a full queue
    assert time.monotonic() - started < 1
    assert sink._left_out == 8 and len(sink._items) == 3
    with pytest.warns(SinkWarning, match=f"11 values could not be sent to {url}"):
        w.close()


class Counting(NetworkSink):
    """A NetworkSink that keeps what it is sent and which thread called start/send/finish."""

    def __init__(self, options: SinkOptions, fail: int = 0) -> None:
        self.sent: list[Any] = []
        self.calls: list[tuple[str, int]] = []
        self.fail = fail
        super().__init__(options, where=f"test://counting/{id(self)}")

    def start(self) -> None:
        self.calls.append(("start", threading.get_ident()))

    def send(self, items: list[Any]) -> None:
        self.calls.append(("send", threading.get_ident()))
        if self.fail:
            self.fail -= 1
            raise ConnectionError("not yet")
        if items == ["refuse"]:
            raise Refused("no such tag")
        self.sent.extend(items)

    def finish(self) -> None:
        self.calls.append(("finish", threading.get_ident()))


def _options(**settings: Any) -> SinkOptions:
    return SinkOptions(log_dir="unused", settings=NetworkSettings(**settings))


def test_start_and_finish_run_once_on_the_sender_thread_around_the_batches() -> None:
    sink = Counting(_options(retry_secs=0.01, grace_secs=30), fail=2)
    sink.write("a")
    sink.write(Deferred(lambda x: x * 2, ("b",)))  # a heavy kind's encode runs there too
    sink.close()  # two failures, then the batch goes
    sink.close()  # idempotent
    assert sink.sent == ["a", "bb"]
    names = [name for name, _ in sink.calls]
    assert names == ["start", "send", "send", "send", "finish"]
    assert {ident for _, ident in sink.calls} == {sink._thread.ident}
    assert threading.get_ident() != sink._thread.ident and not sink._thread.is_alive()


def test_a_failing_encode_and_a_refused_batch_are_raised_once_and_not_sent_again() -> None:
    def broken(value: Any) -> Any:
        raise ValueError(f"cannot encode {value!r}")

    sink = Counting(_options())
    sink.write(Deferred(broken, ("x",)))
    with pytest.raises(OSError, match=r"failed to send to test://counting/\d+: cannot encode 'x'"):
        sink.flush()
    sink.flush()  # raised once
    sink.write("refuse")
    with pytest.raises(OSError, match="no such tag"):
        sink.flush()
    sink.write("kept")
    sink.close()
    assert sink.sent == ["kept"] and sink.unsent == 0
    with pytest.raises(ValueError, match="write\\(\\) on a closed Counting sink"):
        sink.write("late")


def test_settings_are_checked_and_the_default_deadline_is_the_sink_s() -> None:
    for bad in ({"deadline": 0}, {"retry_secs": float("inf")}, {"batch_size": 0}):
        with pytest.raises(ValueError, match="setting '"):
            NetworkSettings(**bad)
    sink = Counting(SinkOptions(log_dir="unused", flush_secs=120))
    try:
        assert (sink.deadline, sink.send_secs) == (30.0, 10.0)  # defaults: 30 s, flush_secs <= 10
    finally:
        sink.close()


def test_the_example_sink_refuses_an_entry_without_a_url(webhook: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="give the webhook a URL: webhook\\+http://host/path"):
        SummaryWriter(tmp_path, sinks=["webhook"])
    assert sys.modules["tallyboard_webhook"] is webhook


def test_sinks_to_one_place_share_that_it_is_down_so_closes_do_not_each_wait_the_deadline(
    webhook: Any, tmp_path: Path
) -> None:
    """Sub-runs opened after the server was found down (add_scalars here, trials of
    add_hparams alike) know it at once: each close waits the grace, not the deadline."""
    url = f"http://127.0.0.1:{free_port()}/ingest"
    settings = {"deadline": 5, "grace_secs": 0.2, "retry_secs": 0.05}
    w = SummaryWriter(tmp_path, sinks=[(f"webhook+{url}", settings)])
    w.add_scalar("loss", 1.0, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w.flush()  # found down
        w.add_scalars("acc", {"train": 0.5, "val": 0.25, "test": 0.75}, 0)  # three new sinks
        started = time.monotonic()
        w.close()
        closed = time.monotonic() - started
    assert closed < 5, closed  # four closes, none waiting the 5 s deadline
    counts = [m for m in _sink_warnings(caught) if "could not be sent" in m]
    assert len(counts) == 4 and all("1 values could not be sent" in m for m in counts)


def test_a_request_timeout_bounds_close_against_a_server_that_never_answers(
    webhook: Any, silent_url: str, tmp_path: Path
) -> None:
    """The issue's case: deadline 30 s, request timeout 0.5 s, a server that accepts and never
    answers, close() at once (before the first request has failed): close() takes the timeout
    plus the grace from that failure, not the deadline (it took 30.0 s)."""
    settings = {"deadline": 30, "timeout": 0.5, "grace_secs": 1.0, "retry_secs": 0.1}
    w = SummaryWriter(tmp_path, sinks=[(f"webhook+{silent_url}", settings)])
    w.add_scalar("loss", 1.0, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        w.close()
        closed = time.monotonic() - started
    assert 0.5 <= closed < 0.5 + 1.0 + 1.5, closed  # timeout + grace (+ the call on the wire)
    [said] = _sink_warnings(caught)
    assert "1 values could not be sent" in said and "sent and never answered" in said, said


def test_the_request_timeout_is_each_call_s_and_is_checked() -> None:
    sink = Counting(_options(timeout=0.25))
    try:
        assert sink.call_timeout() == 0.25  # not the 30 s deadline
    finally:
        sink.close()
    for bad in (0, -1, float("nan"), "soon"):
        with pytest.raises(ValueError, match="setting 'timeout' must be a positive number"):
            NetworkSettings(timeout=bad)  # type: ignore[arg-type]


def test_the_url_setting_or_the_entry_s_url_and_never_two() -> None:
    def options(location: str | None, **settings: Any) -> SinkOptions:
        return SinkOptions(
            log_dir="unused", location=location, settings=NetworkSettings(**settings)
        )

    assert NetworkSink.url_of(options(None, url="http://a/in")) == "http://a/in"
    assert NetworkSink.url_of(options("http://b/in")) == "http://b/in"
    assert NetworkSink.url_of(options("http://b/in", url="http://b/in")) == "http://b/in"
    assert NetworkSink.url_of(options(None)) == ""
    with pytest.raises(ValueError, match="names 'http://b/in' and its 'url' setting 'http://a/in'"):
        NetworkSink.url_of(options("http://b/in", url="http://a/in"))
    with pytest.raises(TypeError, match="setting 'url' must be a str"):
        NetworkSettings(url=5)  # type: ignore[arg-type]


def test_the_ingest_server_answers_every_body_and_keeps_it_raw(server: IngestServer) -> None:
    """A line-protocol body (not JSON) is answered and kept; a JSON one is also parsed; a
    failure status is answered and not kept; every answer is an attempt."""
    import json
    import urllib.error
    import urllib.request

    def post(body: bytes, path: str = "/ingest") -> int:
        url = server.url.replace("/ingest", path)
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=5) as answer:
            return int(answer.status)

    assert post(b"loss,run=a value=0.5 1000\nloss,run=a value=0.25 2000\n", "/w?b=x") == 200
    assert post(json.dumps({"run": "a", "records": [1]}).encode()) == 200
    server.statuses = [500]
    with pytest.raises(urllib.error.HTTPError, match="500"):
        post(b"\xff not utf-8")
    assert server.bodies == [
        b"loss,run=a value=0.5 1000\nloss,run=a value=0.25 2000\n",
        b'{"run": "a", "records": [1]}',
    ]
    assert server.paths == ["/w?b=x", "/ingest"]
    assert server.received == [{"run": "a", "records": [1]}]
    assert server.records() == [("a", 1)]
    assert server.lines()[:2] == ["loss,run=a value=0.5 1000", "loss,run=a value=0.25 2000"]
    assert [status for _, status in server.attempts] == [200, 200, 500]
