"""log_dir on S3: a real S3 API (moto's server on 127.0.0.1) behind a byte-counting TCP proxy.

The proxy counts every byte s3fs sends, so the bytes uploaded are measured on the wire.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from tallyboard import SummaryWriter
from tallyboard.faces.summary_writer import SinkWarning
from tallyboard.records.remote import read_parts
from tcp_proxy import Forwarder, s3fs_through

BUCKET = "tallyboard-test"


class CountingProxy(Forwarder):
    """Counts the bytes clients send upstream."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.sent = 0
        self._lock = threading.Lock()
        super().__init__(upstream)

    def seen(self, data: bytes, outgoing: bool) -> None:
        if outgoing:
            with self._lock:
                self.sent += len(data)


@pytest.fixture(scope="module")
def s3(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[tuple[Any, CountingProxy]]:
    """moto's S3 server and the proxy, started for this module; s3fs configured to use them."""
    with s3fs_through(CountingProxy, monkeypatch_module, BUCKET) as found:
        yield found


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def log_scalars(url: str, n: int, flush_every: int, **kwargs: Any) -> None:
    with SummaryWriter(url, max_queue=100, **kwargs) as w:
        for i in range(n):
            w.add_scalar("loss", i * 0.001, i, walltime=1.7e9 + i)
            if (i + 1) % flush_every == 0:
                w.flush()


def download(fs: Any, url: str, dest: Path) -> Path:
    fs.invalidate_cache()
    dest.mkdir(parents=True)
    for path in fs.find(url):
        (dest / path.rsplit("/", 1)[1]).write_bytes(fs.cat_file(path))
    return dest


def test_bytes_uploaded_grow_linearly(s3: tuple[Any, CountingProxy], tmp_path: Path) -> None:
    fs, proxy = s3
    sent = {}
    for n in (10_000, 20_000):
        before = proxy.sent
        log_scalars(f"s3://{BUCKET}/linear-{n}", n, flush_every=500)
        sent[n] = proxy.sent - before
    data_10k = sum(fs.size(p) for p in fs.find(f"{BUCKET}/linear-10000"))
    print(
        f"\nbytes sent: 10k scalars {sent[10_000]}, 20k {sent[20_000]}, file bytes (10k) {data_10k}"
    )
    assert 1.8 < sent[20_000] / sent[10_000] < 2.2  # linear: twice the data, twice the bytes
    assert sent[10_000] < 2.0 * data_10k  # each byte once, plus HTTP overhead per part

    # What torch does (re-upload the whole object on every flush) measured the same way: quadratic.
    naive = {}
    for n in (10_000, 20_000):
        rec = b"x" * (data_10k // 10_000)
        before = proxy.sent
        whole = b""
        for _ in range(n // 500):
            whole += rec * 500
            fs.pipe_file(f"{BUCKET}/naive-{n}", whole)
        naive[n] = proxy.sent - before
    print(f"naive re-upload: 10k {naive[10_000]}, 20k {naive[20_000]}")
    assert (
        naive[20_000] / naive[10_000] > 3.5
    )  # the measurement sees quadratic growth when it is there
    assert naive[10_000] > 5 * sent[10_000]

    acc = load_run(download(fs, f"{BUCKET}/linear-10000", tmp_path / "run"))
    events = acc.Scalars("loss")
    assert [e.step for e in events] == list(range(10_000))
    assert events[-1].value == pytest.approx(9.999) and events[-1].wall_time == 1.7e9 + 9999


def test_part_objects_sort_after_the_first(s3: tuple[Any, CountingProxy], tmp_path: Path) -> None:
    fs, _ = s3
    with SummaryWriter(f"s3://{BUCKET}/parts") as w:
        for i in range(3):
            w.add_scalar("a", float(i), i)
            w.flush()
        w.flush()  # nothing new: no new part
    fs.invalidate_cache()
    names = [p.rsplit("/", 1)[1] for p in fs.find(f"{BUCKET}/parts")]
    assert len(names) == 3 and names == sorted(
        names
    )  # one part per flush with new data, in name order
    assert all("tfevents" in n for n in names)
    assert names[1] == names[0] + ".part00000001"
    assert [
        e.value for e in load_run(download(fs, f"{BUCKET}/parts", tmp_path / "p")).Scalars("a")
    ] == [0.0, 1.0, 2.0]


def test_csv_and_jsonl_on_s3(s3: tuple[Any, CountingProxy]) -> None:
    url = f"s3://{BUCKET}/readable"
    with SummaryWriter(url, sinks=["csv", "jsonl"]) as w:
        for i in range(25):
            w.add_scalar("loss", i / 10, i)
            if i % 10 == 9:
                w.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SinkWarning)  # csv has no text: said once, expected
            w.add_text("note", "remote", 3)
    rows = list(csv.DictReader(io.StringIO(read_parts(f"{url}/scalars.csv").decode())))
    assert [(int(r["step"]), float(r["value"])) for r in rows] == [(i, i / 10) for i in range(25)]
    lines = [json.loads(x) for x in read_parts(f"{url}/records.jsonl").decode().splitlines()]
    assert len(lines) == 26 and lines[-1]["value"] == "remote"


def test_remote_failure_warns_and_local_sinks_go_on(
    s3: tuple[Any, CountingProxy], tmp_path: Path
) -> None:
    from tallyboard.faces.summary_writer import SinkWarning

    fs, _ = s3
    fs.mkdir("doomed")
    w = SummaryWriter(tmp_path / "local", sinks=["tfevents", "csv+s3://doomed/run"])
    for i in range(5):
        w.add_scalar("a", float(i), i)
    w.flush()
    fs.rm("doomed", recursive=True)  # the bucket disappears under the running job
    fs.invalidate_cache()
    assert not fs.exists("doomed")
    w.add_scalar("a", 5.0, 5)
    with pytest.warns(SinkWarning, match=r"sink 'csv' failed in flush \(.*Error"):
        w.flush()
    for i in range(6, 10):
        w.add_scalar("a", float(i), i)
    w.close()
    assert [e.step for e in load_run(tmp_path / "local").Scalars("a")] == list(range(10))


def test_remote_failure_reaches_a_single_sink_caller_and_retries(
    s3: tuple[Any, CountingProxy], tmp_path: Path
) -> None:
    fs, _ = s3
    fs.mkdir("retry")
    w = SummaryWriter("s3://retry/run")
    w.add_scalar("a", 0.0, 0)
    w.flush()
    fs.rm("retry", recursive=True)
    fs.invalidate_cache()
    w.add_scalar("a", 1.0, 1)
    with pytest.raises(OSError):
        w.flush()
    fs.mkdir("retry")
    w.add_scalar("a", 2.0, 2)
    w.close()  # the bytes of the failed upload were kept and go up now
    assert [e.step for e in load_run(download(fs, "retry/run", tmp_path / "r")).Scalars("a")] == [
        1,
        2,
    ]
