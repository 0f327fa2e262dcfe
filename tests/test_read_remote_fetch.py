"""Reading from stores: a sweep on S3 (moto's server on 127.0.0.1) read like the local one, run
globs applied before any request, and the fetcher's retries, errors and byte bound measured on a
real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from tallyboard import SummaryWriter, read
from tallyboard.reading import fetch as fetch_mod
from tcp_proxy import Forwarder, s3fs_through

BUCKET = "tallyboard-sweep"


def _write(path: Path, steps: int, tags: tuple[str, ...]) -> None:
    with SummaryWriter(str(path)) as w:
        for s in range(steps):
            for k, tag in enumerate(tags):
                w.add_scalar(tag, 1.0 / (s + 1) + k, s)


class RequestLog(Forwarder):
    """Records the request line of every HTTP request."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.requests: list[bytes] = []
        super().__init__(upstream)

    def seen(self, data: bytes, outgoing: bool) -> None:
        if outgoing:
            self.requests += re.findall(rb"(?:GET|HEAD|PUT|POST) (\S+) HTTP/1", data)


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[Any, RequestLog]]:
    with pytest.MonkeyPatch.context() as mp, s3fs_through(RequestLog, mp, BUCKET) as found:
        yield found


def test_a_sweep_on_s3_reads_like_event_accumulator_and_skips_unwanted_runs(
    s3: tuple[Any, RequestLog], tmp_path: Path
) -> None:
    fs, proxy = s3
    runs = {
        f"lr{i}/seed{j}": ("loss", "acc")[: 1 + (i + j) % 2] for i in range(3) for j in range(4)
    }
    for run, tags in runs.items():
        _write(tmp_path / run, 150, tags)
    fs.put(str(tmp_path), f"{BUCKET}/sweep", recursive=True)
    fs.invalidate_cache()
    df = read(f"s3://{BUCKET}/sweep")
    assert sorted(df["run"].unique()) == sorted(runs)
    for run, tags in runs.items():
        acc = load_run(tmp_path / run)
        for tag in tags:
            got = df[(df.run == run) & (df.tag == tag)]
            want = acc.Scalars(tag)
            assert got["step"].tolist() == [e.step for e in want]
            assert got["wall_time"].tolist() == [e.wall_time for e in want]
            assert got["value"].tolist() == pytest.approx([e.value for e in want], rel=0)

    del proxy.requests[:]
    fs.invalidate_cache()
    only = read(f"s3://{BUCKET}/sweep", runs="lr1/*", tags="loss")
    assert sorted(only["run"].unique()) == [f"lr1/seed{j}" for j in range(4)]
    fetched = [r.decode() for r in proxy.requests if b"tfevents" in r]
    assert fetched and all("/lr1/" in r for r in fetched), fetched  # no other run's file


def test_reading_an_s3_sweep_again_fetches_only_what_is_new(
    s3: tuple[Any, RequestLog], tmp_path: Path
) -> None:
    from tallyboard.reading.runs import RunReader

    fs, proxy = s3
    for run in ("a", "b"):
        _write(tmp_path / run, 50, ("loss",))
    fs.put(str(tmp_path), f"{BUCKET}/again", recursive=True)
    fs.invalidate_cache()
    reader = RunReader(f"s3://{BUCKET}/again")
    assert sum(len(b.scalars()[0]) for _, b in reader.read()) == 100
    del proxy.requests[:]
    fs.invalidate_cache()
    assert sum(len(b.scalars()[0]) for _, b in reader.read()) == 0  # nothing new, no error
    assert not [r for r in proxy.requests if b"tfevents" in r]  # and no file fetched
    _write(tmp_path / "new", 7, ("loss",))
    (added,) = (tmp_path / "new").iterdir()
    fs.put_file(str(added), f"{BUCKET}/again/b/{added.name}")  # a second file of run b
    fs.invalidate_cache()
    new = [(run, b.scalars()[1].tolist()) for run, b in reader.read() if len(b.scalars()[0])]
    assert new == [("b", list(range(7)))]


def test_a_missing_object_raises_naming_its_url(s3: tuple[Any, RequestLog]) -> None:
    fs, _ = s3
    with pytest.raises(FileNotFoundError, match=f"s3://{BUCKET}/nope/events.out.tfevents.1"):
        fetch_mod.fetch(fs, f"{BUCKET}/nope/events.out.tfevents.1")


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Serves ``/f<i>`` (``size`` bytes of ``i``); the first GET of a path in ``flaky`` gets a
    503, every GET of ``/down`` too; each GET takes ``delay`` seconds and is counted."""

    size, delay = 1000, 0.05
    lock = threading.Lock()
    in_flight = peak = 0
    seen: set[str] = set()
    flaky: set[str] = set()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.peak = max(cls.peak, cls.in_flight)
            first = self.path not in cls.seen
            cls.seen.add(self.path)
        try:
            time.sleep(cls.delay)
            if self.path == "/down" or (first and self.path in cls.flaky):
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = bytes([int(self.path[2:]) % 256]) * cls.size
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        finally:
            with cls.lock:
                cls.in_flight -= 1

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(type(self).size))
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_store() -> Iterator[tuple[Any, str]]:
    import fsspec

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Flaky.in_flight = _Flaky.peak = 0
    _Flaky.seen, _Flaky.flaky = set(), set()
    try:
        yield (
            fsspec.filesystem("http", skip_instance_cache=True),
            f"http://127.0.0.1:{server.server_port}",
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_fetches_retry_with_backoff_and_keep_order(
    http_store: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, base = http_store
    monkeypatch.setattr(fetch_mod, "BACKOFF", 0.01)
    _Flaky.flaky = {"/f3", "/f7"}
    jobs = [(f"{base}/f{i}", 0, 1000) for i in range(12)]
    got = list(fetch_mod.fetch_ahead(fs, jobs, threads=8))
    assert [i for i, _ in got] == list(range(12))
    assert all(data == bytes([i]) * 1000 for i, data in got)
    assert _Flaky.peak > 2  # many requests at once


def test_the_byte_bound_limits_requests_in_flight(http_store: tuple[Any, str]) -> None:
    fs, base = http_store
    jobs = [(f"{base}/f{i}", 0, 1000) for i in range(10)]
    got = list(fetch_mod.fetch_ahead(fs, jobs, threads=8, max_bytes=2500))
    assert [i for i, _ in got] == list(range(10))
    assert 1 <= _Flaky.peak <= 2  # two files of 1,000 bytes fit under 2,500


def test_a_store_that_keeps_failing_raises_naming_the_url(
    http_store: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, base = http_store
    monkeypatch.setattr(fetch_mod, "BACKOFF", 0.01)
    with pytest.raises(OSError, match=rf"{re.escape(base)}/down: fetch failed 4 times"):
        list(fetch_mod.fetch_ahead(fs, [(f"{base}/f1", 0, 1000), (f"{base}/down", 0, 1000)]))
