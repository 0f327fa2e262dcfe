"""The provider live: what is new shows at the next pass and only it is read; memory bounded by
the samples kept; faults (a stalled or refusing store, a corrupt file, a deleted run).

Each test runs a provider in this process (``tallyboard.board.serve``) with a long reload
interval and asks for passes itself (``wait_loaded``), so nothing waits on a clock.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import grpc
import numpy as np
import pytest
from board_support import wait_until
from fsspec.implementations.memory import MemoryFileSystem
from tallyboard import SummaryWriter
from tallyboard.board import loader as loader_module
from tallyboard.board import serve
from tcp_proxy import Forwarder, s3fs_through
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc

HOUR = 3600.0


@pytest.fixture
def provider() -> Iterator[Any]:
    """``provider(logdir, **options)``: a running server and a stub on it; all stopped after."""
    opened: list[Any] = []

    def start(logdir: str, **options: Any) -> tuple[Any, Any]:
        options.setdefault("reload", HOUR)
        options.setdefault("follow", False)  # passes only when asked (wait_loaded)
        server = serve(logdir, **options)
        channel = grpc.insecure_channel(server.address)
        opened.append((server, channel))
        return server, pb_grpc.TensorBoardDataProviderStub(channel)

    yield start
    for server, channel in opened:
        channel.close()
        server.stop()


def scalars(
    stub: Any, n: int = 10_000, timeout: float | None = None
) -> dict[tuple[str, str], list[int]]:
    req = pb.ReadScalarsRequest(downsample=pb.Downsample(num_points=n))
    req.plugin_filter.plugin_name = "scalars"
    res = stub.ReadScalars(req, timeout=timeout)
    return {(r.run_name, t.tag_name): list(t.data.step) for r in res.runs for t in r.tags}


def runs(stub: Any) -> list[str]:
    return sorted(r.name for r in stub.ListRuns(pb.ListRunsRequest()).runs)


def _csv_lines(path: Path, steps: range, tag: str = "loss") -> None:
    with open(path, "a") as f:
        f.writelines(f"{1.7e9 + s!r},{s},{tag},{s * 0.5!r}\n" for s in steps)


def test_new_values_and_runs_show_at_the_next_pass_and_only_they_are_read(
    tmp_path: Path, provider: Any
) -> None:
    with SummaryWriter(tmp_path / "a", sinks=["csv"]) as w:
        for step in range(10):
            w.add_scalar("loss", step * 0.5, step)
    server, stub = provider(str(tmp_path))
    assert server.wait_loaded(30)
    assert scalars(stub) == {("a", "loss"): list(range(10))}
    (csv,) = (tmp_path / "a").glob("*.csv")
    _csv_lines(csv, range(10, 15))
    with SummaryWriter(tmp_path / "b") as w:
        w.add_scalar("acc", 1.0, 0)
    assert server.wait_loaded(30)
    assert server.loader.last_points == 5 + 1  # the new lines and the new run, nothing again
    assert scalars(stub) == {("a", "loss"): list(range(15)), ("b", "acc"): [0]}
    assert server.wait_loaded(30) and server.loader.last_points == 0


def test_a_change_on_a_local_disk_is_read_at_once_not_at_the_next_reload(
    tmp_path: Path, provider: Any
) -> None:
    (tmp_path / "a").mkdir()
    csv = tmp_path / "a" / "scalars.csv"
    csv.write_text("wall_time,step,tag,value\n")
    _csv_lines(csv, range(3))
    server, stub = provider(str(tmp_path), follow=True)  # reload: an hour
    assert server.wait_loaded(30)
    follow = server.loader._follow
    assert follow is not None and follow.watching.wait(30)
    passes = server.loader.passes
    _csv_lines(csv, range(3, 5))  # a file grows
    wait_until(lambda: scalars(stub).get(("a", "loss")) == list(range(5)), 30, "growth")
    assert server.loader.passes == passes + 1
    with SummaryWriter(tmp_path / "b" / "deep") as w:  # a new run in a new folder
        w.add_scalar("acc", 1.0, 0)
    time.sleep(0.5)  # ten looks at the kernel's events
    # at most one pass for changes per reload interval (an hour): this one waits
    assert server.loader.passes == passes + 1 and "b/deep" not in runs(stub)
    assert server.wait_loaded(30)  # asked: read at once
    assert scalars(stub)[("b/deep", "acc")] == [0]


def test_follow_watches_the_folders_made_after_it_started(tmp_path: Path) -> None:
    from tallyboard.board.follow import Follow

    seen = threading.Semaphore(0)
    follow = Follow(str(tmp_path), seen.release)
    try:
        assert follow.watching.wait(30)
        (tmp_path / "b" / "deep").mkdir(parents=True)
        assert seen.acquire(timeout=30)
        while seen.acquire(timeout=0.3):  # the looks that found the new folders
            pass
        (tmp_path / "b" / "deep" / "scalars.csv").write_text("wall_time,step,tag,value\n")
        assert seen.acquire(timeout=30)  # a file in a folder made after the start
    finally:
        follow.stop()


def test_without_follow_a_change_waits_for_the_next_reload(tmp_path: Path, provider: Any) -> None:
    (tmp_path / "a").mkdir()
    csv = tmp_path / "a" / "scalars.csv"
    csv.write_text("wall_time,step,tag,value\n")
    _csv_lines(csv, range(3))
    server, stub = provider(str(tmp_path), follow=False)
    assert server.wait_loaded(30)
    _csv_lines(csv, range(3, 5))
    time.sleep(0.5)  # ten looks at the kernel's events, were it followed
    assert server.loader._follow is None and scalars(stub)[("a", "loss")] == [0, 1, 2]


def test_a_torn_last_line_waits_for_its_end(tmp_path: Path, provider: Any) -> None:
    (tmp_path / "a").mkdir()
    csv = tmp_path / "a" / "scalars.csv"
    csv.write_text("wall_time,step,tag,value\n1.0,0,loss,0.5\n2.0,1,lo")
    server, stub = provider(str(tmp_path))
    assert server.wait_loaded(30)
    assert scalars(stub) == {("a", "loss"): [0]}
    with open(csv, "a") as f:
        f.write("ss,0.25\n")
    assert server.wait_loaded(30)
    assert scalars(stub) == {("a", "loss"): [0, 1]}


def test_a_run_deleted_while_served_disappears_with_its_blobs(
    tmp_path: Path, provider: Any
) -> None:
    for run in ["keep", "drop"]:
        with SummaryWriter(tmp_path / run) as w:
            w.add_scalar("loss", 1.0, 0)
            w.add_image("img", np.zeros((3, 2, 2), np.float32), 0)
    server, stub = provider(str(tmp_path))
    assert server.wait_loaded(30) and runs(stub) == ["drop", "keep"]
    req = pb.ReadBlobSequencesRequest(downsample=pb.Downsample(num_points=1))
    req.plugin_filter.plugin_name = "images"
    keys = {
        r.run_name: t.data.values[0].blob_refs[2].blob_key
        for r in stub.ReadBlobSequences(req).runs
        for t in r.tags
    }
    shutil.rmtree(tmp_path / "drop")
    assert server.wait_loaded(30)
    assert runs(stub) == ["keep"]
    assert list(scalars(stub)) == [("keep", "loss")]
    with pytest.raises(grpc.RpcError) as err:
        list(stub.ReadBlob(pb.ReadBlobRequest(blob_key=keys["drop"])))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert b"".join(r.data for r in stub.ReadBlob(pb.ReadBlobRequest(blob_key=keys["keep"])))


def test_blob_keys_survive_reloads(tmp_path: Path, provider: Any) -> None:
    with SummaryWriter(tmp_path / "run") as w:
        for step in range(3):
            w.add_image("img", np.full((3, 2, 2), step / 3, np.float32), step)
    server, stub = provider(str(tmp_path), samples={"images": 3})
    assert server.wait_loaded(30)
    req = pb.ReadBlobSequencesRequest(downsample=pb.Downsample(num_points=3))
    req.plugin_filter.plugin_name = "images"

    def keyed() -> dict[int, tuple[str, bytes]]:
        (tag,) = stub.ReadBlobSequences(req).runs[0].tags
        out = {}
        for step, seq in zip(tag.data.step, tag.data.values):
            key = seq.blob_refs[2].blob_key
            out[step] = (
                key,
                b"".join(r.data for r in stub.ReadBlob(pb.ReadBlobRequest(blob_key=key))),
            )
        return out

    before = keyed()
    with SummaryWriter(tmp_path / "run") as w:
        w.add_image("img", np.ones((3, 2, 2), np.float32), 3)
    assert server.wait_loaded(30)
    after = keyed()
    assert sorted(after) != sorted(before) and 3 in after  # the last point is always kept
    for step in set(before) & set(after):
        assert after[step] == before[step]


def test_memory_holds_the_samples_kept_not_the_file(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 150_000
    with SummaryWriter(tmp_path / "big", max_queue=10_000) as w:
        for step in range(n):
            w.add_scalar("loss", step * 1e-3, step)
    size = sum(p.stat().st_size for p in (tmp_path / "big").iterdir())
    monkeypatch.setattr(loader_module, "WINDOW", 128 << 10)
    (tmp_path / "warm").mkdir()
    warm, _ = provider(str(tmp_path / "warm"), reload=0)  # modules imported before tracing
    assert warm.wait_loaded(30)
    tracemalloc.start()
    try:
        server, stub = provider(str(tmp_path / "big"), samples={"scalars": 500}, reload=0)
        assert server.wait_loaded(60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert server.store.points() == 500
    (steps,) = scalars(stub).values()
    assert len(steps) == 500 and steps[-1] == n - 1
    assert size > 4 << 20 and peak < size / 4, (size, peak)  # a whole read would hold ~n x 28 B


def test_a_corrupt_record_shows_what_is_readable_and_warns_once(
    tmp_path: Path, provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with SummaryWriter(tmp_path / "run") as w:
        for step in range(40):
            w.add_scalar("loss", float(step), step)
    (events,) = (tmp_path / "run").iterdir()
    data = bytearray(events.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one record's payload: its CRC no longer matches
    events.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, logger="tallyboard.board")
    server, stub = provider(str(tmp_path))
    assert server.wait_loaded(30) and server.wait_loaded(30)
    (steps,) = scalars(stub).values()
    assert 30 < len(steps) < 40 and steps[-1] == 39  # the damaged record alone is missing
    warned = [r.getMessage() for r in caplog.records if "offset" in r.getMessage()]
    assert len(warned) == 1 and str(events) in warned[0], warned


class _CountingGets(Forwarder):
    """Counts the object GETs of S3 requests going through (listings excluded)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.gets: list[str] = []
        super().__init__(upstream)

    def seen(self, data: bytes, outgoing: bool) -> None:
        if outgoing:
            for m in re.finditer(rb"GET (/[^/ ?]+/[^ ?]+)(\?\S*)? HTTP", data):
                self.gets.append(m.group(1).decode())  # a key: bucket listings have none


def test_on_s3_only_new_objects_are_fetched(
    monkeypatch: pytest.MonkeyPatch, provider: Any, tmp_path: Path
) -> None:
    import boto3

    # moto keeps buckets per process: a name no other test uses
    with s3fs_through(_CountingGets, monkeypatch, "board-live") as (fs, proxy):
        for run in ["r0", "r1", "r2"]:
            with SummaryWriter(f"s3://board-live/logs/{run}") as w:
                w.add_scalar("loss", 1.0, 0)
        server, stub = provider("s3://board-live/logs")
        assert server.wait_loaded(60)
        assert sorted(scalars(stub)) == [("r0", "loss"), ("r1", "loss"), ("r2", "loss")]
        assert len(proxy.gets) == 3
        proxy.gets.clear()
        # another client (a trainer elsewhere) adds a file to a run this process listed before
        with SummaryWriter(tmp_path / "r1") as w:
            w.add_scalar("loss", 0.5, 1)
        (name,) = (p.name for p in (tmp_path / "r1").iterdir())
        client = boto3.client(
            "s3",
            endpoint_url=fsspec.config.conf["s3"]["endpoint_url"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        client.upload_file(str(tmp_path / "r1" / name), "board-live", f"logs/r1/{name}")
        assert server.wait_loaded(60)
        assert scalars(stub)[("r1", "loss")] == [0, 1], server.loader.problems
        assert proxy.gets == [f"/board-live/logs/r1/{name}"]
        server.stop()  # before the store goes


class _StallFS(MemoryFileSystem):
    """An in-memory store whose listing stalls while ``gate`` is clear, or refuses when
    ``refuse`` is set."""

    protocol = "stalltest"
    gate = threading.Event()
    refuse = False

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        return str(super()._strip_protocol(path.removeprefix("stalltest://")))

    def find(self, *args: Any, **kwargs: Any) -> Any:
        if type(self).refuse:
            raise PermissionError("Access Denied")
        type(self).gate.wait()
        return super().find(*args, **kwargs)


@pytest.fixture
def stall_store() -> Iterator[type[_StallFS]]:
    fsspec.register_implementation("stalltest", _StallFS, clobber=True)
    _StallFS.gate.set()
    _StallFS.refuse = False
    fs = fsspec.filesystem("stalltest")
    fs.pipe("/logs/run/scalars.csv", b"wall_time,step,tag,value\n1.0,0,loss,0.5\n")
    yield _StallFS
    _StallFS.gate.set()  # let any stalled call end
    _StallFS.refuse = False
    fs.rm("/logs", recursive=True)


def test_a_stalled_first_listing_answers_within_the_deadline(
    stall_store: Any, provider: Any
) -> None:
    stall_store.gate.clear()
    server, stub = provider("stalltest:///logs", deadline=0.5)
    start = time.monotonic()
    with pytest.raises(grpc.RpcError) as err:
        runs(stub)
    assert time.monotonic() - start < 5
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "within 0.5 s" in err.value.details()
    stall_store.gate.set()
    assert server.wait_loaded(30) and runs(stub) == ["run"]


def test_a_store_that_stalls_later_never_holds_a_request(stall_store: Any, provider: Any) -> None:
    server, stub = provider("stalltest:///logs", deadline=0.5)
    assert server.wait_loaded(30) and runs(stub) == ["run"]
    stall_store.gate.clear()
    assert not server.wait_loaded(30)  # the pass gave up on the listing at its deadline
    start = time.monotonic()
    assert scalars(stub, timeout=5) == {("run", "loss"): [0]}  # the last data, at once
    assert time.monotonic() - start < 1
    assert any("did not answer within 0.5 s" in p for p in server.loader.problems)


def test_a_store_that_refuses_answers_with_its_status_and_message(
    stall_store: Any, provider: Any
) -> None:
    stall_store.refuse = True
    _, stub = provider("stalltest:///logs")
    with pytest.raises(grpc.RpcError) as err:
        runs(stub)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "stalltest:///logs" in err.value.details() and "Access Denied" in err.value.details()


def _hold_ingest(
    monkeypatch: pytest.MonkeyPatch, release: threading.Event
) -> tuple[list[str], threading.Event]:
    """Ingest.add waits for ``release`` before each window (a disk or a decode that hangs);
    returns the runs it was given, in order, and an event set once it was first called."""
    from tallyboard.board.ingest import Ingest

    given: list[str] = []
    entered = threading.Event()
    add = Ingest.add

    def held(self: Any, run: str, batch: Any) -> int:
        given.append(run)
        entered.set()
        assert release.wait(30)
        return add(self, run, batch)

    monkeypatch.setattr(Ingest, "add", held)
    return given, entered


def test_a_stalled_pass_is_reported_with_its_values_and_problems_when_it_ends(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "scalars.csv").write_text(
        "wall_time,step,tag,value\n1.0,0,loss,0.5\n2.0,1,loss,oops\n3.0,2,loss,0.25\n"
    )
    release = threading.Event()
    _hold_ingest(monkeypatch, release)
    server, stub = provider(str(tmp_path), deadline=0.2)
    assert not server.wait_loaded(30)  # stalled: no progress for stall_after(0.2) s
    assert any("no listing or read finished" in p for p in server.loader.problems)
    release.set()
    assert server.loader._pass.done.wait(30)  # it ends before the next pass starts
    assert server.wait_loaded(30)
    assert server.loader.last_points == 2  # its values, counted by the pass that reported it
    assert any("oops" in p and "offset" in p for p in server.loader.problems)
    assert scalars(stub) == {("a", "loss"): [0, 2]}


def test_stop_ends_a_running_pass_at_its_next_window_and_nothing_more_goes_in(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for run in ["a", "b", "c", "d"]:
        (tmp_path / run).mkdir()
        (tmp_path / run / "scalars.csv").write_text("wall_time,step,tag,value\n1.0,0,loss,0.5\n")
    release = threading.Event()
    given, entered = _hold_ingest(monkeypatch, release)
    server, _ = provider(str(tmp_path))
    assert entered.wait(30)  # the first pass is in its first window
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    assert server.loader._stop.wait(30)
    release.set()  # the window under way ends; the pass looks at stop before the next
    stopper.join(30)
    assert not stopper.is_alive() and not server._thread.is_alive()
    assert server.loader._pass.done.is_set()
    assert len(given) == 1  # no window after stop() went into the store
    # the other runs were read ahead (listed), but none of their values went in
    assert sorted(server.store.runs) == ["a", "b", "c", "d"]
    assert [n for n, r in server.store.runs.items() if r.series] == given


def test_stop_answers_the_requests_waiting_for_the_first_load_at_once(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "scalars.csv").write_text("wall_time,step,tag,value\n1.0,0,loss,0.5\n")
    release = threading.Event()
    _, entered = _hold_ingest(monkeypatch, release)
    # a first load that stalls: requests wait for it up to stall_after(30) + 0.5 = 60.5 s
    server, stub = provider(str(tmp_path), deadline=30)
    assert entered.wait(30)
    got: list[Any] = []

    def ask() -> None:
        try:
            got.append(scalars(stub))
        except grpc.RpcError as exc:
            got.append(exc)

    waiting = threading.Thread(target=ask)
    waiting.start()
    time.sleep(0.3)
    assert waiting.is_alive() and not got  # waiting for the first load
    try:
        server.stop(grace=0.5, wait=0.5)  # the pass, held in its window, is left behind
        waiting.join(5)
        assert not waiting.is_alive()
        (answer,) = got
        assert isinstance(answer, grpc.RpcError)
        assert answer.code() == grpc.StatusCode.UNAVAILABLE
        assert "is stopping" in answer.details()
    finally:
        release.set()


def test_the_first_list_of_runs_has_every_run_before_the_values_are_in(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for run, wall in [("b", 2.0), ("a", 3.0), ("c", 1.0)]:
        (tmp_path / run).mkdir()
        (tmp_path / run / "scalars.csv").write_text(f"wall_time,step,tag,value\n{wall},0,x,1\n")
    SummaryWriter(tmp_path / "events").close()  # a run with a file and no value yet
    release = threading.Event()
    given, entered = _hold_ingest(monkeypatch, release)
    server, stub = provider(str(tmp_path), deadline=30)
    try:
        assert entered.wait(30)  # the values of the first run are held on their way in
        listed = stub.ListRuns(pb.ListRunsRequest(), timeout=10).runs
        # every run, by start: the event file's header (now) after the CSV runs' first values
        assert [r.name for r in listed] == ["c", "b", "a", "events"]
        assert [r.start_time for r in listed][:3] == [1.0, 2.0, 3.0]
        assert len(given) == 1  # listed before the values went in
        with pytest.raises(grpc.RpcError) as waited:  # the values wait for the first pass
            scalars(stub, timeout=0.5)
        assert waited.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        release.set()
    assert server.wait_loaded(30)
    assert sorted(scalars(stub)) == [("a", "x"), ("b", "x"), ("c", "x")]


def test_a_first_listing_that_hangs_on_a_local_disk_answers_with_the_stall(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "scalars.csv").write_text("wall_time,step,tag,value\n1.0,0,loss,0.5\n")
    gate = threading.Event()
    iter_poll = loader_module.Reader.iter_poll

    def hanging(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        assert gate.wait(30)  # the listing of a disk that hangs
        yield from iter_poll(self, *args, **kwargs)

    monkeypatch.setattr(loader_module.Reader, "iter_poll", hanging)
    # stall_after(0.8) = 1.6 s: past deadline + 0.5, what requests once waited (then got nothing)
    server, stub = provider(str(tmp_path), deadline=0.8)
    try:
        with pytest.raises(grpc.RpcError) as err:
            runs(stub)  # waits until the loader calls the pass stalled, not less
        assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "no listing or read finished" in err.value.details()
    finally:
        gate.set()
    assert server.wait_loaded(30) and runs(stub) == ["a"]


def test_with_reload_0_a_failure_promises_no_retry(stall_store: Any, provider: Any) -> None:
    stall_store.refuse = True
    server, _ = provider("stalltest:///logs", reload=0)
    assert not server.wait_loaded(30)
    (message,) = server.loader.problems
    assert "Access Denied" in message and "not tried again: reload is 0" in message
    assert "tried again next" not in message


def test_a_log_dir_that_is_not_a_directory_is_refused_in_the_call(
    tmp_path: Path, stall_store: Any
) -> None:
    for logdir in [str(tmp_path / "missing"), "stalltest:///missing"]:
        with pytest.raises((NotADirectoryError, ValueError), match="is not a directory"):
            serve(logdir)


def test_the_status_of_a_log_dir_that_is_not_a_directory_is_not_found() -> None:
    message = "logdir 'x' is not a directory"
    assert loader_module._status(NotADirectoryError(message)) == "NOT_FOUND"
    assert loader_module._status(ValueError(message)) == "NOT_FOUND"  # readers before it
    assert loader_module._status(PermissionError("Access Denied")) == "PERMISSION_DENIED"
    assert loader_module._status(ValueError("other")) == "UNAVAILABLE"


def test_a_tree_that_cannot_be_watched_whole_is_said_once_and_polled(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from tallyboard.reading.watch import Watch

    for name in ("a", "b", "c"):
        with SummaryWriter(tmp_path / name) as w:
            w.add_scalar("loss", 1.0, 0)
    monkeypatch.setattr(Watch, "share", 1e-9)  # no watch left for this tree: a budget of 0
    with caplog.at_level("WARNING", logger="tallyboard.board"):
        server, stub = provider(str(tmp_path), follow=True, reload=0.2)
        assert server.wait_loaded(30)
        wait_until(lambda: server.loader._follow is not None, 30, "the follow thread")
        wait_until(lambda: "not as they happen" in caplog.text, 30, "the notice")
        with SummaryWriter(tmp_path / "d") as w:  # still read, at the next reload
            w.add_scalar("loss", 2.0, 0)
        wait_until(lambda: ("d", "loss") in scalars(stub), 30, "the new run")
    said = [r.getMessage() for r in caplog.records if "not as they happen" in r.getMessage()]
    assert len(said) == 1, said
    assert "read every 0.2 s (--reload)" in said[0] and str(tmp_path) in said[0]
    assert "fs.inotify.max_user_watches" in said[0]
