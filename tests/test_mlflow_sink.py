"""The mlflow sink: what a writer logs is read back with MlflowClient, locally and from a server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import load_run
from mlflow_support import local_store, migrated_store, mlflow_server
from tallyboard import SummaryWriter


def _client(log_dir: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(f"sqlite:///{log_dir.resolve() / 'mlflow' / 'mlflow.db'}")


def _runs(client: Any, experiment: str) -> dict[str, Any]:
    exp = client.get_experiment_by_name(experiment)
    return {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}


def _history(client: Any, run: Any, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))


def test_local_store_holds_metrics_params_and_artifacts_inside_the_log_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log_dir = Path("runs") / "exp1"
    pixels = np.random.default_rng(0).integers(0, 255, (3, 5, 7), dtype=np.uint8)
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    with SummaryWriter(log_dir, sinks=["tfevents", "mlflow"]) as w:
        for step in range(5):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
        w.add_scalar("odd tag!", 7.0, 1)
        w.add_scalars("acc", {"train": 0.5, "val": 0.4}, 3)
        w.add_text("notes", "hello mlflow", 2)
        w.add_image("sample", pixels, 4)
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hp/acc": 0.9}, run_name="trial")
        w.add_figure("fig", figure, 5)
        w.add_audio("tone", np.sin(np.arange(800) / 5.0), 6, sample_rate=8000)
    assert sorted(os.listdir(tmp_path)) == ["runs"]  # nothing written outside the log dir
    assert sorted(os.listdir(tmp_path / "runs")) == ["exp1"]

    client = _client(tmp_path / log_dir)
    runs = _runs(client, "runs")
    assert set(runs) == {"exp1", "acc_train", "acc_val", "trial"}
    main = runs["exp1"]
    assert main.info.status == "FINISHED"
    assert _history(client, main, "loss/train") == [(s, 1.0 / (s + 1)) for s in range(5)]
    assert _history(client, main, "odd tag_") == [(1, 7.0)]
    for name, value in (("acc_train", 0.5), ("acc_val", 0.4)):
        assert runs[name].data.tags["mlflow.parentRunId"] == main.info.run_id
        assert _history(client, runs[name], "acc") == [(3, value)]
    trial = runs["trial"]
    assert trial.data.params == {"lr": "0.1", "opt": "adam"}
    assert trial.data.metrics == {"hp/acc": 0.9}

    out = tmp_path / "download"
    out.mkdir()
    text = client.download_artifacts(main.info.run_id, "text/notes/step_00000002.txt", str(out))
    assert Path(text).read_text() == "hello mlflow"
    png = client.download_artifacts(main.info.run_id, "images/sample/step_00000004.png", str(out))
    from PIL import Image

    np.testing.assert_array_equal(np.asarray(Image.open(png)), pixels.transpose(1, 2, 0))
    fig_png = client.download_artifacts(main.info.run_id, "images/fig/step_00000005.png", str(out))
    assert Image.open(fig_png).size == (100, 50)
    wav = client.download_artifacts(main.info.run_id, "audio/tone/step_00000006.wav", str(out))
    import soundfile

    samples, rate = soundfile.read(wav)
    assert rate == 8000 and len(samples) == 800
    # the TensorBoard sink got the same scalars
    assert [e.value for e in load_run(tmp_path / log_dir).Scalars("loss/train")][
        -1
    ] == pytest.approx(0.2)


def test_reopened_writer_continues_its_run_and_params_attach_with_own_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "tuning")
    log_dir = tmp_path / "exp" / "run1"
    local_store(log_dir)  # a store: test_local_store_... checks the sink makes one
    w = SummaryWriter(log_dir, sinks=["mlflow"])
    w.add_hparams({"lr": 0.01, "layers": 2}, {"loss": None}, own_run=True)
    w.add_scalar("loss", 3.0, 0)
    w.close()
    w.add_scalar("loss", 2.0, 1)  # opens the sink again: the same MLflow run
    w.close()
    client = _client(log_dir)
    runs = _runs(client, "tuning")  # MLFLOW_EXPERIMENT_NAME, else the parent dir's name
    assert list(runs) == ["run1"]
    assert runs["run1"].data.params == {"lr": "0.01", "layers": "2"}
    assert _history(client, runs["run1"], "loss") == [(0, 3.0), (1, 2.0)]


def test_sibling_writers_share_one_sqlite_store_given_by_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    store = "mlflow+sqlite:///runs/keras/mlflow.db"  # relative: resolved from the working dir
    migrated_store(tmp_path / "runs" / "keras" / "mlflow.db")
    train = SummaryWriter("runs/keras/train", sinks=[store])
    val = SummaryWriter("runs/keras/validation", sinks=[store])
    for epoch in range(3):
        train.add_scalar("epoch_loss", 1.0 - epoch / 10, epoch)
        val.add_scalar("epoch_loss", 1.1 - epoch / 10, epoch)
    val.add_text("report", "done", 2)
    train.close()
    val.close()
    assert sorted(os.listdir(tmp_path)) == ["runs"]
    assert sorted(os.listdir(tmp_path / "runs" / "keras")) == ["artifacts", "mlflow.db"]
    client = MlflowClient("sqlite:///runs/keras/mlflow.db")
    runs = _runs(client, "keras")
    assert set(runs) == {"train", "validation"}
    assert _history(client, runs["validation"], "epoch_loss") == [
        (e, pytest.approx(1.1 - e / 10)) for e in range(3)
    ]
    assert list((tmp_path / "runs" / "keras" / "artifacts").rglob("step_00000002.txt"))


def test_values_still_queued_at_interpreter_exit_reach_mlflow(tmp_path: Path) -> None:

    code = (
        "import sys\n"
        "from tallyboard import SummaryWriter\n"
        "w = SummaryWriter(sys.argv[1], sinks=['mlflow'])\n"
        "for i in range(2500):\n"
        "    w.add_scalar('x', float(i), i)\n"  # no flush, no close
    )
    log_dir = tmp_path / "exp" / "run"
    local_store(log_dir)
    done = subprocess.run(
        [sys.executable, "-c", code, str(log_dir)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    client = _client(log_dir)
    [run] = _runs(client, "exp").values()
    assert run.info.status == "FINISHED"
    assert _history(client, run, "x") == [(i, float(i)) for i in range(2500)]


def test_failed_logging_is_raised_by_flush_and_loses_no_other_kind(tmp_path: Path) -> None:
    log_dir = tmp_path / "exp" / "run"
    local_store(log_dir)
    w = SummaryWriter(log_dir, sinks=["mlflow"])
    w.add_hparams({"lr": 0.1}, {}, own_run=True)
    w.flush()
    w.add_hparams({"lr": 0.2}, {}, own_run=True)  # MLflow refuses to change a logged param
    w.add_scalar("loss", 1.5, 7)  # queued in the same batch
    with pytest.raises(OSError, match="mlflow sink failed"):
        w.flush()
    w.add_hparams({"lr": 0.3}, {}, own_run=True)
    with pytest.raises(OSError, match="mlflow sink failed"):
        w.close()  # still ends the run
    client = _client(log_dir)
    [run] = _runs(client, "exp").values()
    assert run.info.status == "FAILED"
    assert run.data.params == {"lr": "0.1"}
    assert _history(client, run, "loss") == [(7, 1.5)]


def test_mlflow_sink_refuses_a_remote_log_dir_without_a_tracking_uri() -> None:
    with pytest.raises(ValueError, match="tracking server"):
        SummaryWriter("memory://bucket/run", sinks=["mlflow"])


def test_two_writers_cannot_share_one_run(tmp_path: Path) -> None:
    local_store(tmp_path / "r")
    with (
        SummaryWriter(tmp_path / "r", sinks=["mlflow"]),
        pytest.raises(ValueError, match="another writer already logs"),
    ):
        SummaryWriter(tmp_path / "r", sinks=["mlflow"])


def test_tracking_server_given_by_url_receives_metrics_params_and_artifacts(
    tmp_path: Path,
) -> None:
    from mlflow.tracking import MlflowClient

    server_dir = tmp_path / "server"
    server_dir.mkdir()
    log_dir = tmp_path / "proj" / "run7"
    with mlflow_server(server_dir) as url:
        with SummaryWriter(log_dir, sinks=["tfevents", f"mlflow+{url}"]) as w:
            for step in range(1500):  # more than one log_batch
                w.add_scalar("loss", float(step), step)
            w.add_hparams({"batch": 32}, {"best": 1.0}, own_run=True)
            w.add_text("cfg", "a: 1", 0)
        client = MlflowClient(url)
        runs = _runs(client, "proj")
        assert list(runs) == ["run7"]
        run = runs["run7"]
        assert _history(client, run, "loss") == [(s, float(s)) for s in range(1500)]
        assert run.data.params == {"batch": "32"}
        assert run.data.metrics["best"] == 1.0
        out = tmp_path / "download"
        out.mkdir()
        text = client.download_artifacts(run.info.run_id, "text/cfg/step_00000000.txt", str(out))
        assert Path(text).read_text() == "a: 1"
    assert not (log_dir / "mlflow").exists()  # the server holds the store, not the log dir
    assert len(list((server_dir / "artifacts").rglob("step_00000000.txt"))) == 1


def test_the_deadline_is_a_setting_beside_the_sink_and_the_variable_only_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that never answers: close() is bounded by the setting, not the variable's 30 s;
    ``tallyboard sync -s deadline=...`` gives up as soon."""
    import socket
    import time
    import warnings

    from tallyboard.cli import main as cli_main
    from tallyboard.warn import SinkWarning

    monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", "30")
    log_dir = tmp_path / "exp" / "run"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        entry = (f"mlflow+{url}", {"deadline": 1, "grace_secs": 0.5})
        w = SummaryWriter(log_dir, sinks=["tfevents", entry])
        assert w._sinks[1][1].deadline == 1.0
        w.add_scalar("loss", 1.0, 0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            started = time.monotonic()
            w.close()
            closed = time.monotonic() - started
        started = time.monotonic()
        argv = ["sync", str(tmp_path), "--to", f"mlflow+{url}", "-s", "deadline=1"]
        assert cli_main(argv) == 1
        synced = time.monotonic() - started
    assert closed < 1 + 3 and synced < 2 * 1 + 3, (closed, synced)
    [said] = [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]
    assert said.startswith(f"mlflow sink: 1 values could not be sent to {url} within 1 s")
    assert f"tallyboard sync {log_dir} --to mlflow+{url}" in said
    assert "1 values not delivered to" in capsys.readouterr().err
