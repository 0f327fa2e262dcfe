"""``tallyboard board`` and ``tallyboard serve`` as a shell user runs them: real processes.

``board`` starts the provider and TensorBoard, prints the URL, and stops both on Ctrl-C or when
either dies; ``serve`` runs the provider alone for a TensorBoard started elsewhere.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest
from board_support import STALL_PLUGIN, Board, board, env_with, install_tsv_plugin, wait_until
from tallyboard import SummaryWriter
from tallyboard.cli.board import STOP_WAIT_ENV, TB_STOP
from tb_server import TensorBoard, exited, free_port, stop_process_group
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-board")
    for seed in range(2):
        with SummaryWriter(root / f"seed{seed}", sinks=["csv"]) as w:
            for step in range(5):
                w.add_scalar("loss", 1.0 / (step + 1) + seed, step)
    return root


def _cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tallyboard", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kw,  # type: ignore[call-overload]
    )


def _tensorboard_of(pid: int) -> psutil.Process:
    (child,) = [
        p for p in psutil.Process(pid).children(recursive=True) if "tensorboard.main" in p.cmdline()
    ]
    return child


def _exit_code(b: Board, tb: psutil.Process, within: float = 30) -> int:
    """The board's exit status once it exits within ``within`` seconds; else a failure that
    says whether TensorBoard was still running and what the board printed."""
    try:
        return b.proc.wait(within)
    except subprocess.TimeoutExpired:
        state = "gone" if exited(tb) else "still running"
        pytest.fail(
            f"board still running {within:g} s on (TensorBoard {state}); it printed:\n"
            + b.stderr()[-3000:]
        )


def test_board_serves_the_runs_on_loopback_prints_the_url_and_ctrl_c_stops_both(
    logdir: Path,
) -> None:
    with board(str(logdir), "--samples-per-plugin", "scalars=2", "--window_title=tallied") as b:
        assert sorted(b.tb.get_json("/data/runs")) == ["seed0", "seed1"]
        tb = _tensorboard_of(b.proc.pid)
        cmd = tb.cmdline()
        assert cmd[cmd.index("--logdir") + 1] == str(logdir)  # the projector reads its files
        assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
        assert "--window_title=tallied" in cmd  # an option board does not know goes on
        points = b.tb.get_json("/data/plugin/scalars/scalars", run="seed0", tag="loss")
        assert len(points) == 2 and points[-1][1] == 4  # 2 points kept per series, the last one
        host, port = cmd[cmd.index("--grpc_data_provider") + 1].rsplit(":", 1)
        assert host == "127.0.0.1"
        listening = [
            ipaddress.ip_address(c.laddr.ip)
            for c in psutil.Process(b.proc.pid).net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == int(port)
        ]
        assert listening and all(
            (a.ipv4_mapped or a).is_loopback
            for a in listening  # type: ignore[union-attr]
        ), listening
        web = b.tb.base.rsplit(":", 1)[1]
        wait_until(lambda: f"TensorBoard at http://localhost:{web}/" in b.stderr(), 30, "URL")
        b.proc.send_signal(signal.SIGINT)
        assert _exit_code(b, tb) == 0
        assert exited(tb)


def test_a_tensorboard_that_does_not_stop_is_killed_and_board_says_so(logdir: Path) -> None:
    env = {**os.environ, STOP_WAIT_ENV: "1.5"}  # instead of 10 s, for a short test
    with board(str(logdir), env=env) as b:
        tb = _tensorboard_of(b.proc.pid)
        tb.suspend()  # SIGSTOP: the SIGTERM board sends waits, as for a TensorBoard stuck exiting
        asked = time.monotonic()
        b.proc.send_signal(signal.SIGINT)
        assert _exit_code(b, tb) == 0
        assert time.monotonic() - asked >= 1.5  # it was given its time before it was killed
        assert exited(tb)
        assert "TensorBoard had not exited 1.5 s after SIGTERM: killed" in b.stderr()


def test_a_stop_wait_that_is_not_seconds_is_refused_before_tensorboard_starts(
    logdir: Path,
) -> None:
    assert TB_STOP == 10.0  # what TensorBoard gets unless told otherwise
    for bad in ["soon", "0", "-1", "nan"]:
        got = _cli("board", str(logdir), env={**os.environ, STOP_WAIT_ENV: bad})
        assert got.returncode == 1
        assert got.stderr.strip() == (
            f"tallyboard board: {STOP_WAIT_ENV} must be a number of seconds > 0, got {bad!r}"
        )


def test_when_tensorboard_dies_board_stops_and_says_why(logdir: Path) -> None:
    with board(str(logdir)) as b:
        tb = _tensorboard_of(b.proc.pid)
        tb.kill()
        assert _exit_code(b, tb) == 1
        assert "TensorBoard exited with status -9" in b.stderr()


def test_when_board_is_killed_tensorboard_follows(logdir: Path) -> None:
    with board(str(logdir)) as b:
        tb = _tensorboard_of(b.proc.pid)
        b.proc.kill()  # no chance to clean up: TensorBoard is told by the kernel
        b.proc.wait(30)
        wait_until(lambda: exited(tb), 30, "TensorBoard stopping with its parent")


def test_serve_alone_feeds_a_tensorboard_started_elsewhere(logdir: Path) -> None:
    port, web = free_port(), free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "tallyboard", "serve", str(logdir), "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    tb = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--grpc_data_provider",
            f"127.0.0.1:{port}",
            "--host",
            "127.0.0.1",
            "--port",
            str(web),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        client = TensorBoard(web)

        def runs() -> list[str]:
            try:
                return sorted(client.get_json("/data/runs"))
            except OSError:
                return []

        assert wait_until(runs, 90, "runs through tallyboard serve") == ["seed0", "seed1"]
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0
        assert f"127.0.0.1:{port}" in serve.stderr.read()
    finally:
        stop_process_group(tb, 10)
        if serve.poll() is None:
            stop_process_group(serve, 10)
        serve.stderr.close()


def test_bad_arguments_say_what_was_expected(logdir: Path, tmp_path: Path) -> None:
    out = _cli("board", str(tmp_path / "missing"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        f"tallyboard board: logdir {str(tmp_path / 'missing')!r} is not a directory"
    ]
    for args, words in [
        (["board", str(logdir), "--port", "abc"], "expected a port in 0..65535"),
        (["serve", str(logdir), "--reload", "-1"], "expected a number of seconds >= 0"),
        (["serve", str(logdir), "--deadline", "0"], "expected a number of seconds > 0"),
        (["board", str(logdir), "--samples-per-plugin", "scalars"], "expected plugin=N"),
        (["ls", str(logdir), "--window_title=x"], "unrecognized arguments"),
    ]:
        out = _cli(*args)
        assert out.returncode == 2 and words in out.stderr, (args, out.stderr)


def test_the_cli_imports_neither_grpc_nor_tensorboard_before_tensorboard_starts() -> None:
    code = (
        "import sys, tallyboard.cli.board as b, argparse\n"
        "p = argparse.ArgumentParser(); b.add_parsers(p.add_subparsers(dest='command'))\n"
        "p.parse_args(['board', '.', '--reload', '1', '--deadline', '2', '--port', '0'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'tensorboard')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_serve_says_when_the_logdir_is_not_a_directory(tmp_path: Path) -> None:
    out = _cli("serve", str(tmp_path / "missing"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        f"tallyboard serve: logdir {str(tmp_path / 'missing')!r} is not a directory"
    ]


def test_without_tensorboard_the_extra_is_named(logdir: Path, tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "tensorboard"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no tensorboard here')\n")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")])
    )
    for command in ["board", "serve"]:
        out = _cli(command, str(logdir), env=env)
        assert out.returncode == 1
        last = out.stderr.strip().splitlines()[-1]
        assert last.startswith(f"tallyboard {command}: ") and "does not import" in last
        assert 'pip install "tallyboard[board]"' in last
        if command == "serve":  # (board starts TensorBoard first: its own traceback is shown)
            assert "Traceback" not in out.stderr


def test_every_option_says_its_default() -> None:
    from tallyboard.cli import board as cli_board

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli_board.add_parsers(sub)
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.option_strings and action.dest != "help":
                assert "default" in (action.help or ""), (name, action.option_strings)


@pytest.fixture(scope="module")
def stalled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """A log dir whose first load stalls for 120 s (a run read by a plugin whose reads hang,
    beside an ordinary one), the environment that installs that plugin, and the file the
    plugin writes once the load is under way."""
    root = tmp_path_factory.mktemp("stalled")
    with SummaryWriter(root / "logs/fast") as w:
        w.add_scalar("loss", 0.5, 0)
    (root / "logs/slow").mkdir()
    (root / "logs/slow/run.stall").write_bytes(b"x" * 100)
    mark = root / "entered"
    env = env_with(install_tsv_plugin(root / "plugin", "stall", STALL_PLUGIN))
    env["TALLYBOARD_STALL_MARK"] = str(mark)
    return root / "logs", env, mark


def _started(
    command: str, logdir: Path, port: int, env: dict[str, str], **kw: Any
) -> subprocess.Popen[Any]:
    """``tallyboard COMMAND LOGDIR`` on ``port`` with a 30 s deadline: requests wait up to
    60 s for a first load that does not end."""
    return subprocess.Popen(
        [sys.executable, "-m", "tallyboard", command, str(logdir), "--port", str(port)]
        + ["--deadline", "30"],
        env=env,
        start_new_session=True,
        **kw,
    )


def _asked_in_background(call: Any) -> tuple[threading.Thread, list[Any]]:
    """``call()`` on a thread; what it returned or raised lands in the list."""
    got: list[Any] = []

    def run() -> None:
        try:
            got.append(call())
        except Exception as exc:  # the answer under test
            got.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, got


def _stopped_within(proc: subprocess.Popen[Any], seconds: float, what: str) -> float:
    """Seconds ``proc`` took to exit after now; fails (and kills it) past ``seconds``."""
    start = time.monotonic()
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        stop_process_group(proc, 10)
        pytest.fail(f"{what} still running {seconds:g} s after it was asked to stop")
    return time.monotonic() - start


def test_sigterm_ends_serve_at_once_while_a_request_waits_for_a_stalled_first_load(
    stalled: tuple[Path, dict[str, str], Path],
) -> None:
    # The first load stalls for 120 s and a request waits for it (as long as the deadline,
    # 60 s, lets it). SIGTERM must end the provider now: the request is answered UNAVAILABLE.
    logdir, env, mark = stalled
    mark.unlink(missing_ok=True)
    port = free_port()
    proc = _started("serve", logdir, port, env, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(mark.exists, 60, "the stalled load starting")
        stub = pb_grpc.TensorBoardDataProviderStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        thread, got = _asked_in_background(lambda: stub.ListRuns(pb.ListRunsRequest(), timeout=90))
        time.sleep(0.5)  # the request is in, waiting for the first load
        assert thread.is_alive() and not got
        proc.send_signal(signal.SIGTERM)
        took = _stopped_within(proc, 5, "tallyboard serve")
        thread.join(5)
        assert proc.returncode == 0
        (answer,) = got
        assert isinstance(answer, grpc.RpcError), answer
        assert answer.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
        err = proc.stderr.read()
        assert "Traceback" not in err and "warning" not in err, err
        print(f"serve exited {took:.2f} s after SIGTERM")
    finally:
        if proc.poll() is None:
            stop_process_group(proc, 10)
        proc.stderr.close()


def test_ctrl_c_ends_board_at_once_while_tensorboard_waits_for_a_stalled_first_load(
    stalled: tuple[Path, dict[str, str], Path], tmp_path: Path
) -> None:
    logdir, env, mark = stalled
    mark.unlink(missing_ok=True)
    log = tmp_path / "board.log"
    port = free_port()
    with open(log, "wb") as err:
        proc = _started("board", logdir, port, env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_until(lambda: "TensorBoard at" in log.read_text(), 120, "TensorBoard answering")
        wait_until(mark.exists, 60, "the stalled load starting")
        tb = TensorBoard(port)
        thread, got = _asked_in_background(lambda: tb.get_json("/data/runs"))
        time.sleep(1)  # TensorBoard asked the provider, which waits for the first load
        assert thread.is_alive() and not got
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends
        took = _stopped_within(proc, 15, "tallyboard board")
        assert proc.returncode == 0
        assert "Traceback" not in log.read_text(), log.read_text()
        print(f"board exited {took:.2f} s after Ctrl-C")
    finally:
        if proc.poll() is None:
            stop_process_group(proc, 10)


def test_serve_reports_each_problem_in_one_line_named_after_itself(tmp_path: Path) -> None:
    # a value float32 cannot hold (numpy's overflow warning inside the provider), a malformed
    # row (the reader's warning) and a host that is not loopback: one line each, each naming
    # `tallyboard serve`, never Python's warning with its file, line and source line
    (tmp_path / "run").mkdir()
    (tmp_path / "run/scalars.csv").write_text(
        "wall_time,step,tag,value\n1.0,0,loss,1e300\n2.0,1,loss,oops\n3.0,2,loss,0.5\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tallyboard", "serve", str(tmp_path), "--port", "0"]
        + ["--host", "0.0.0.0", "--reload", "0"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "malformed CSV row" in line:
                break
        time.sleep(0.5)  # anything printed after the pass (nothing should be)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        lines += proc.stderr.read().splitlines()
    finally:
        if proc.poll() is None:
            stop_process_group(proc, 10)
        proc.stderr.close()
    assert all(line.startswith("tallyboard serve: ") for line in lines), lines
    assert len(lines) == 3, lines
    assert "warning: the data provider listens on 0.0.0.0, not loopback" in lines[0]
    assert "Ctrl-C stops" in lines[1]
    assert "scalars.csv: malformed CSV row" in lines[2] and "offset 42" in lines[2]


def test_ctrl_c_while_serve_is_still_starting_stops_it_quietly(logdir: Path) -> None:
    # 1 s in: importing gRPC and TensorBoard, starting the provider, or serving (a fast
    # machine): wherever it is, no traceback, status 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "tallyboard", "serve", str(logdir), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _stopped_within(proc, 10, "tallyboard serve")
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr.read()
    proc.stderr.close()


def test_ctrl_c_while_serve_still_watches_thousands_of_runs_stops_it_quietly(
    tmp_path: Path,
) -> None:
    # The kernel watch over a local log dir is set up folder by folder on its own thread; Ctrl-C
    # as soon as every run is listed lands while it is still at it: no traceback, status 0.
    with SummaryWriter(tmp_path / "first") as w:
        w.add_scalar("loss", 0.5, 0)
    (event,) = (tmp_path / "first").iterdir()
    for i in range(1, 2000):
        run = tmp_path / f"run{i:04d}"
        run.mkdir()
        (run / event.name).write_bytes(event.read_bytes())
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tallyboard", "serve", str(tmp_path), "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def listed() -> int:  # a new channel each time: a refused one waits a second to retry
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = pb_grpc.TensorBoardDataProviderStub(channel)
                try:
                    return len(stub.ListRuns(pb.ListRunsRequest(), timeout=30).runs)
                except grpc.RpcError:  # not listening yet
                    return 0

        wait_until(lambda: listed() == 2000, 60, "every run listed", every=0.01)
        proc.send_signal(signal.SIGINT)
        _stopped_within(proc, 10, "tallyboard serve")
        assert proc.returncode == 0
        err = proc.stderr.read()
        assert "Traceback" not in err and "Exception" not in err, err
    finally:
        if proc.poll() is None:
            stop_process_group(proc, 10)
        proc.stderr.close()
