"""Event files: names, header, purge_step, flush/close/reopen, exit, fork, I/O errors, bounded memory."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from conftest import event_files, load_run, raw_events
from tallyboard import SummaryWriter
from tallyboard.records.recordfile import RecordFile
from tallyboard.records.storage import LocalAppendFile

NAME = re.compile(
    r"^events\.out\.tfevents\.\d{10}\.(?P<host>.+)\.(?P<pid>\d+)\.(?P<n>\d+)(?P<suffix>.*)$"
)


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_file_name_and_complete_header_exist_right_after_construction(logdir):
    w = SummaryWriter(logdir, filename_suffix=".v2")
    (path,) = event_files(logdir)
    m = NAME.match(path.name)
    assert (
        m
        and m["host"] == socket.gethostname()
        and int(m["pid"]) == os.getpid()
        and m["suffix"] == ".v2"
    )
    (header,) = raw_events(logdir)
    assert header.file_version == "brain.Event:2" and header.wall_time > 0
    w.close()


def test_default_log_dir_follows_torch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_cmt") as w:
        name = Path(w.get_logdir()).name
    assert re.match(
        r"^[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()) + "_cmt$", name
    )
    assert Path(w.get_logdir()).parent.name == "runs"


def test_log_dir_is_returned_as_given(logdir):
    with SummaryWriter(logdir, comment="ignored") as w:
        assert w.get_logdir() is logdir and w.log_dir is logdir


def test_two_writers_in_one_directory_never_share_a_file(logdir):
    a, b = SummaryWriter(logdir), SummaryWriter(logdir)
    for i in range(100):
        a.add_scalar("a", i, i)
        b.add_scalar("b", i, i)
    a.close()
    b.close()
    assert len(event_files(logdir)) == 2
    acc = load_run(logdir)
    assert len(acc.Scalars("a")) == 100


def test_an_existing_file_name_is_skipped_not_truncated(logdir, monkeypatch):
    from tallyboard_tfevents import sink

    taken = logdir / "events.out.tfevents.0000000001.host.1.0"
    taken.write_bytes(b"precious")
    names = iter([taken.name, "events.out.tfevents.0000000001.host.1.1"])
    monkeypatch.setattr(sink, "next_file_name", lambda suffix="": next(names))
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", 1, 0)
    assert taken.read_bytes() == b"precious"
    assert (logdir / "events.out.tfevents.0000000001.host.1.1").stat().st_size > 0


def test_purge_step_drops_later_steps_once(logdir):
    with SummaryWriter(logdir) as w:
        for i in range(10):
            w.add_scalar("x", i, i)
    time.sleep(0.01)
    w = SummaryWriter(logdir, purge_step=5)
    for i in range(5, 8):
        w.add_scalar("x", 100 + i, i)
    w.close()
    w.add_scalar("x", 200, 9)  # reopened after close: the purge is not repeated
    w.close()
    got = [(e.step, e.value) for e in load_run(logdir).Scalars("x")]
    assert got == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 105), (6, 106), (7, 107), (9, 200)]


def test_files_made_one_after_another_sort_in_that_order(logdir, monkeypatch):
    """TensorBoard reads a run's files in name order: a run closed and reopened in the same
    second, its file counter going from 9 to 10, reads back in the order it was written."""
    import itertools

    from tallyboard_tfevents import sink

    monkeypatch.setattr(sink, "_counter", itertools.count(9))
    names = [sink.next_file_name() for _ in range(3)]
    assert sorted(names) == names
    monkeypatch.setattr(sink, "_counter", itertools.count(99))
    for start in (0, 5):  # a file holding steps 0-4, then one holding 5-9
        with SummaryWriter(logdir) as w:
            for i in range(start, start + 5):
                w.add_scalar("x", i, i)
    assert [n.rsplit(".", 1)[1] for n in sorted(p.name for p in event_files(logdir))] == [
        "000099",
        "000100",
    ]
    assert [e.step for e in load_run(logdir).Scalars("x")] == list(range(10))


def test_flush_makes_every_accepted_record_readable(logdir):
    w = SummaryWriter(logdir, max_queue=1000, flush_secs=3600)
    for i in range(2000):
        w.add_scalar("x", i, i)
    w.flush()
    assert len(load_run(logdir).Scalars("x")) == 2000
    w.close()


def test_pending_records_reach_the_file_within_flush_secs(logdir):
    w = SummaryWriter(logdir, max_queue=1000, flush_secs=0.2)
    w.add_scalar("x", 1, 0)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not load_run(logdir).Tags()["scalars"]:
        time.sleep(0.05)
    assert load_run(logdir).Scalars("x")[0].value == 1
    w.close()


def test_close_is_idempotent_and_add_after_close_opens_a_new_file(logdir):
    w = SummaryWriter(logdir)
    w.add_scalar("x", 1, 0)
    w.close()
    w.close()
    w.flush()  # no-op after close
    w.add_scalar("x", 2, 1)
    w.close()
    files = event_files(logdir)
    assert len(files) == 2
    assert int(NAME.match(files[1].name)["n"]) > int(NAME.match(files[0].name)["n"])
    assert [e.value for e in load_run(logdir).Scalars("x")] == [1, 2]


def test_close_releases_the_writer_threads(logdir):
    before = threading.active_count()
    w = SummaryWriter(logdir)
    w.add_scalars("m", {"a": 1, "b": 2}, 0)
    w.close()
    assert threading.active_count() == before


def test_everything_queued_is_written_at_interpreter_exit(logdir):
    proc = run_python(
        f"""
        from tallyboard import SummaryWriter
        w = SummaryWriter({str(logdir)!r}, max_queue=100000, flush_secs=3600)
        for i in range(2021):
            w.add_scalar("x", i, i)
        w.add_scalars("m", {{"a": 1}}, 0)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert len(load_run(logdir).Scalars("x")) == 2021
    assert len(load_run(logdir / "m_a").Scalars("m")) == 1


def test_records_of_a_writer_dropped_without_close_are_written_at_exit(logdir):
    proc = run_python(
        f"""
        import gc
        from tallyboard import SummaryWriter
        def train():
            w = SummaryWriter({str(logdir)!r}, max_queue=1000, flush_secs=3600)
            for i in range(50):
                w.add_scalar("x", i, i)
        train()
        gc.collect()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert len(load_run(logdir).Scalars("x")) == 50


def test_forked_child_neither_hangs_nor_duplicates_parent_records(logdir):
    proc = run_python(
        f"""
        import os
        from tallyboard import SummaryWriter
        w = SummaryWriter({str(logdir)!r}, max_queue=1000, flush_secs=3600)
        for i in range(50):
            w.add_scalar("parent", i, i)
        pid = os.fork()
        if pid == 0:
            for i in range(20):
                w.add_scalar("child", i, i)
            w.flush()
            w.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        w.close()
        print(pid)
        """,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    child_pid = int(proc.stdout.split()[-1])
    files = event_files(logdir)
    by_pid = {int(NAME.match(f.name)["pid"]): f for f in files}
    assert child_pid in by_pid and len(files) == 2
    acc = load_run(logdir)
    assert len(acc.Scalars("parent")) == 50
    assert len(acc.Scalars("child")) == 20


def test_disk_full_error_reaches_the_caller_once_and_never_hangs(logdir):
    proc = run_python(
        f"""
        import resource, signal, time
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        from tallyboard import SummaryWriter
        w = SummaryWriter({str(logdir)!r}, max_queue=10, flush_secs=3600)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))
        caught, t0 = [], time.monotonic()
        for i in range(1000):
            try:
                w.add_scalar("x", float(i), i)
            except OSError as e:
                caught.append(("add", i, e.errno))
        try:
            w.flush()
        except OSError as e:
            caught.append(("flush", e.errno))
        try:
            w.close()
        except OSError as e:
            caught.append(("close", e.errno))
        w.close()
        print(len(caught), caught[0], round(time.monotonic() - t0, 2))
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    count, first, seconds = (
        proc.stdout.split(" ", 1)[0],
        proc.stdout,
        float(proc.stdout.split()[-1]),
    )
    assert int(count) >= 1 and "27" in first  # errno 27 = EFBIG
    assert seconds < 30
    (path,) = event_files(logdir)
    assert path.stat().st_size <= 4000
    scalars = load_run(logdir).Scalars("x")
    assert scalars and [e.step for e in scalars] == list(range(len(scalars)))


class SlowFile(LocalAppendFile):
    """Writes that take a while: the caller must not queue without bound."""

    def write(self, data: bytes) -> None:
        time.sleep(0.01)
        super().write(data)


def test_pending_memory_is_bounded_when_the_disk_is_slow(tmp_path):
    rf = RecordFile(
        SlowFile(str(tmp_path / "f")), max_queue=10, flush_secs=3600, max_pending_bytes=10_000
    )
    peak = 0
    for _ in range(3000):
        rf.write(b"x" * 100)
        peak = max(peak, rf._bytes_in - rf._bytes_out)
    rf.close()
    assert peak <= 10_000 + 10 * 116
    assert (tmp_path / "f").stat().st_size == 3000 * 116
