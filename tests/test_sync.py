"""``tallyboard sync LOGDIR --to SINK``: local runs replayed into another sink, only what is new,
into a real MLflow server that goes away mid-sync and comes back (the link to it cut and
restored: its port refuses connections and open ones are reset, as when it dies; a real kill and
restart is tests/test_mlflow_deadline.py's), and into csv on remote storage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from mlflow_support import MlflowServer
from tallyboard import SummaryWriter
from tallyboard.cli import main as cli_main
from tallyboard.reading.sync import STATE_FILE, SyncError, sync
from tcp_proxy import Outage


def _history(client: Any, run: Any, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))


def _warm(client: Any) -> None:
    """A server just started answers its first calls slowly: make them before timing anything."""
    client.search_experiments()
    client.search_runs(["0"])


def _stored(client: Any, name: str, key: str) -> int:
    """Values of ``key`` MLflow holds for run ``name`` of experiment proj (0 before it exists)."""
    exp = client.get_experiment_by_name("proj")
    runs = [] if exp is None else client.search_runs([exp.experiment_id])
    ids = [r.info.run_id for r in runs if r.info.run_name == name]
    return len(client.get_metric_history(ids[0], key)) if ids else 0


def _local(log_dir: Path, tag: str) -> list[tuple[int, float]]:
    return sorted((e.step, e.value) for e in load_run(log_dir).Scalars(tag))


def _sent(logdir: Path, to: str, run: str) -> int:
    """Scalars of ``run`` the state file remembers as sent to ``to``."""
    path = logdir / STATE_FILE
    if not path.exists():
        return 0
    files = json.loads(path.read_text())["targets"].get(to, {})
    return sum(c.get("scalar", 0) for f, c in files.items() if f.startswith(run + "/events"))


# Waits: a dead server is waited for the whole deadline, so the phases where it is dead use a
# short one; a sync cut mid-way needs one patient enough for a loaded machine while the server
# still answers (each confirmed flush of 1,000 values waits at most the deadline; 0.1-0.3 s on
# the idle 2-core host), waited in full once when it goes away: 6 s, not the default 30 s.
SHORT = {"TALLYBOARD_MLFLOW_DEADLINE": "2"}
PATIENT = {"TALLYBOARD_MLFLOW_DEADLINE": "6"}


def _sync_cmd(logdir: Path, to: str) -> list[str]:
    return [sys.executable, "-m", "tallyboard", "sync", str(logdir), "--to", to]


def test_sync_fills_what_the_live_sink_could_not_send_once_mlflow_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server")
    url = server.start()
    link = Outage(("127.0.0.1", server.port))  # the sinks' way to the server, cut and restored
    to = f"mlflow+http://127.0.0.1:{link.port}"
    logdir = tmp_path / "proj"
    client = MlflowClient(url)  # the test's own way, never cut
    _warm(client)
    try:
        # a live run: the server dies after 100 of its 300 values
        settings = {"deadline": 2.0, "grace_secs": 0.5, "retry_secs": 0.05}
        w = SummaryWriter(logdir / "run1", sinks=["tfevents", (to, settings)])
        w.add_hparams({"layers": 3, "lr": 0.1}, {"loss": None}, own_run=True)
        for step in range(100):
            w.add_scalar("loss", step / 7, step)
        w.flush()
        waited = time.monotonic() + 120
        while _stored(client, "run1", "loss") < 100:
            assert time.monotonic() < waited, "the first 100 values never reached MLflow"
            time.sleep(0.2)
        link.cut()  # MLflow is gone for the writer
        for step in range(100, 300):
            w.add_scalar("loss", step / 7, step)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w.close()
        assert any("200 values could not be sent" in str(c.message) for c in caught)

        # sync while the server is still down: an error that says to run it again
        down = subprocess.run(
            _sync_cmd(logdir, to),
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **SHORT},
        )
        assert down.returncode == 1, down.stderr[-2000:]
        assert "run it again to go on" in down.stderr

        link.restore()
        monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", PATIENT["TALLYBOARD_MLFLOW_DEADLINE"])
        assert cli_main(["sync", str(logdir), "--to", to]) == 0
        capsys.readouterr()
        exp = client.get_experiment_by_name("proj")
        [run] = client.search_runs([exp.experiment_id])
        # the live sink sent its values as given, the event file holds float32: one copy each
        live = _history(client, run, "loss")
        assert [s for s, _ in live] == list(range(300))
        assert [v for _, v in live] == pytest.approx([s / 7 for s in range(300)], rel=1e-6)
        assert [v for _, v in live[:100]] == [s / 7 for s in range(100)]
        assert run.data.params == {"layers": "3", "lr": "0.1"}  # as given live
        assert run.info.run_name == "run1" and run.info.status == "FINISHED"
    finally:
        link.close()
        server.stop()


def test_sync_cut_by_mlflow_going_away_mid_sync_goes_on_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow.tracking import MlflowClient

    (tmp_path / "server").mkdir()
    server = MlflowServer(tmp_path / "server")
    logdir = tmp_path / "proj"
    total = 6000  # six confirmed batches
    with SummaryWriter(logdir / "big") as b:  # written without network, with sub-runs
        for step in range(total):
            b.add_scalar("x", step * 0.5, step)
        b.add_scalars("acc", {"train": 0.5, "val": 0.25}, 3)
    url = server.start()
    link = Outage(("127.0.0.1", server.port))  # the sync's way to the server, cut and restored
    to = f"mlflow+http://127.0.0.1:{link.port}"
    client = MlflowClient(url)  # the test's own way, never cut
    _warm(client)
    try:
        proc = subprocess.Popen(
            _sync_cmd(logdir, to),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **PATIENT},
        )
        try:
            deadline = time.monotonic() + 240
            while _sent(logdir, to, "big") == 0:
                assert proc.poll() is None, proc.communicate()[1][-2000:]
                assert time.monotonic() < deadline, "no batch confirmed in time"
                time.sleep(0.02)
            link.cut()  # mid-sync
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 1, err[-2000:]
        assert "run it again to go on" in err
        before = _sent(logdir, to, "big")
        assert 0 < before < total, before

        link.restore()
        monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", PATIENT["TALLYBOARD_MLFLOW_DEADLINE"])
        assert cli_main(["sync", str(logdir), "--to", to]) == 0
        assert f"{before} sent before" in capsys.readouterr().out
        assert cli_main(["sync", str(logdir), "--to", to]) == 0
        assert capsys.readouterr().out.startswith("sent 0 new values")

        exp = client.get_experiment_by_name("proj")
        runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
        assert set(runs) == {"big", "acc_train", "acc_val"}
        assert _history(client, runs["big"], "x") == _local(logdir / "big", "x")
        assert len(_history(client, runs["big"], "x")) == total
        for name, value in (("acc_train", 0.5), ("acc_val", 0.25)):
            assert runs[name].data.tags["mlflow.parentRunId"] == runs["big"].info.run_id
            assert _history(client, runs[name], "acc") == [(3, value)]
        assert {r.info.status for r in runs.values()} == {"FINISHED"}
    finally:
        link.close()
        server.stop()


def test_sync_to_csv_on_remote_storage_sends_only_what_is_new(tmp_path: Path) -> None:
    import fsspec
    import tallyboard

    logdir = tmp_path / "runs"
    to = "csv+memory://sync-test/metrics"
    with SummaryWriter(logdir / "a") as w:
        for step in range(50):
            w.add_scalar("loss", step / 3, step)
    with SummaryWriter(logdir / "b") as w:
        w.add_scalar("acc", 0.75, 9)
    first = sync(logdir, to)
    assert first.sent == {"scalar": 51} and first.already == 0
    assert sync(logdir, to).total == 0
    with SummaryWriter(logdir / "a") as w:  # the run goes on: a new event file
        for step in range(50, 80):
            w.add_scalar("loss", step / 3, step)
    third = sync(logdir, to)
    assert third.sent == {"scalar": 30} and third.already == 51
    back = tallyboard.read("memory://sync-test/metrics")
    got = sorted(zip(back["run"], back["tag"], back["step"], back["value"]))
    want = sorted(
        [("a", "loss", s, pytest.approx(s / 3)) for s in range(80)] + [("b", "acc", 9, 0.75)]
    )
    assert got == want
    fsspec.filesystem("memory").rm("/sync-test", recursive=True)


def test_sync_refuses_bad_input_with_the_argument_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryWriter(tmp_path / "runs" / "a") as w:
        w.add_scalar("loss", 1.0, 0)
    logdir = tmp_path / "runs"
    with pytest.raises(ValueError, match="logdir .* is not a directory"):
        sync(tmp_path / "missing", "csv")
    with pytest.raises(ValueError, match="logdir must be a local directory"):
        sync("s3://bucket/runs", "csv")
    with pytest.raises(TypeError, match="logdir must be a non-empty str"):
        sync(3, "csv")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="to='nosuch\\+memory://x'"):
        sync(logdir, "nosuch+memory://x")
    with pytest.raises(ValueError, match="names no location"):
        sync(logdir, "csv+s3://")
    with pytest.raises(TypeError, match="to must be a non-empty str"):
        sync(logdir, "")
    (logdir / STATE_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="is not a sync state file"):
        sync(logdir, "csv+memory://x")
    assert (logdir / STATE_FILE).read_text() == "{not json"  # left as it was
    os.remove(logdir / STATE_FILE)
    assert cli_main(["sync", str(tmp_path / "missing"), "--to", "csv"]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_a_sink_that_fails_mid_sync_is_a_sync_error_and_nothing_unconfirmed_is_remembered(
    tmp_path: Path,
) -> None:
    logdir = tmp_path / "runs"
    with SummaryWriter(logdir / "a") as w:
        w.add_scalar("loss", 1.0, 0)
    blocker = tmp_path / "out"
    blocker.write_text("a file where the csv sink wants a folder")
    with pytest.raises(SyncError, match="run it again to go on"):
        sync(logdir, f"csv+file://{blocker}")
    files = json.loads((logdir / STATE_FILE).read_text())["targets"][f"csv+file://{blocker}"]
    assert list(files.values()) == [{}]  # nothing remembered as sent
