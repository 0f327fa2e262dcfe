"""Remote storage with a deadline: a store that stops answering (moto's S3 behind a proxy that
holds every byte while paused) cannot hold flush() past it, and nothing is lost or reordered."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tallyboard.records.remote import RemoteAppendFile, read_parts
from tcp_proxy import Forwarder, moto_s3_behind


class PausableProxy(Forwarder):
    """While paused it holds what it receives (a stalled network)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.running = threading.Event()
        self.running.set()
        super().__init__(upstream)

    def seen(self, data: bytes, outgoing: bool) -> None:
        self.running.wait()

    def close(self) -> None:
        self.running.set()
        super().close()


@pytest.fixture
def stalling_s3(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[dict[str, Any], PausableProxy]]:
    import s3fs

    with moto_s3_behind(PausableProxy, monkeypatch) as (proxy, endpoint):
        options = {
            "endpoint_url": endpoint,
            "key": "testing",
            "secret": "testing",
            "skip_instance_cache": True,
        }
        s3fs.S3FileSystem(**options).makedirs("deadline-test", exist_ok=True)
        yield options, proxy


def test_a_stalled_store_cannot_hold_flush_past_the_deadline_and_loses_nothing(
    stalling_s3: tuple[dict[str, Any], PausableProxy],
) -> None:
    options, proxy = stalling_s3
    url = "s3://deadline-test/events.bin"
    f = RemoteAppendFile(url, deadline=2, **options)
    f.write(b"a" * 100)
    f.flush()
    proxy.running.clear()  # the network stalls: s3fs would wait 60 s a try, and retry
    f.write(b"b" * 100)
    started = time.monotonic()
    with pytest.raises(OSError, match="did not finish within 2 s"):
        f.flush()
    assert time.monotonic() - started < 3.5
    f.write(b"c" * 100)
    started = time.monotonic()
    with pytest.raises(OSError, match="did not finish within 2 s"):
        f.flush()  # the first upload may still land: nothing is sent past it
    assert time.monotonic() - started < 3.5
    with pytest.raises(OSError, match="below its"):
        f.truncate(150)  # bytes in flight cannot be cut back
    proxy.running.set()
    f.flush()
    f.close()
    assert f.parts == 3
    assert read_parts(url, **options) == b"a" * 100 + b"b" * 100 + b"c" * 100


def test_a_stalled_store_cannot_hold_opening_a_file_past_the_deadline(
    stalling_s3: tuple[dict[str, Any], PausableProxy],
) -> None:
    options, proxy = stalling_s3
    proxy.running.clear()
    started = time.monotonic()
    with pytest.raises(OSError, match="checking whether .* exists did not finish within 1 s"):
        RemoteAppendFile("s3://deadline-test/other.bin", deadline=1, **options)
    assert time.monotonic() - started < 2.5


def test_a_bad_deadline_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in (0, -1, float("inf"), "5"):
        with pytest.raises(ValueError, match="deadline must be a positive number"):
            RemoteAppendFile("memory://deadline-test/x.bin", deadline=bad)  # type: ignore[arg-type]
    monkeypatch.setenv("TALLYBOARD_REMOTE_DEADLINE", "never")
    with pytest.raises(ValueError, match="TALLYBOARD_REMOTE_DEADLINE='never' must be a positive"):
        RemoteAppendFile("memory://deadline-test/y.bin")
