"""The mlflow sink's runs as mlflow's own API makes them (tags, params, FAILED on an exception),
and its deadline: flush() and close() return in bounded time whatever the server does."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from mlflow_support import local_store
from tallyboard import SummaryWriter
from tallyboard.warn import SinkWarning


def _client(log_dir: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(f"sqlite:///{log_dir.resolve() / 'mlflow' / 'mlflow.db'}")


def _only_run(client: Any, experiment: str) -> Any:
    exp = client.get_experiment_by_name(experiment)
    [run] = client.search_runs([exp.experiment_id])
    return run


def test_tags_and_params_are_those_mlflow_start_run_and_log_params_give(tmp_path: Path) -> None:
    import mlflow

    log_dir = tmp_path / "exp" / "run"
    local_store(log_dir)
    hparams = {"layers": 3, "lr": 0.1, "decay": 0.0, "amp": True, "opt": "adam", "big": 2**40}
    with SummaryWriter(log_dir, sinks=["tfevents", "mlflow"]) as w:
        w.add_hparams(hparams, {"loss": None}, own_run=True)
        w.add_scalar("loss", 0.5, 1)
    client = _client(log_dir)
    ours = _only_run(client, "exp")

    uri = f"sqlite:///{log_dir.resolve() / 'mlflow' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    try:
        with mlflow.start_run(experiment_id=ours.info.experiment_id) as active:
            mlflow.log_params(hparams)
        theirs = client.get_run(active.info.run_id)
    finally:
        mlflow.set_tracking_uri(None)
    assert ours.data.params == theirs.data.params
    assert ours.data.params["layers"] == "3" and ours.data.params["big"] == str(2**40)
    mlflow_tags = {k: v for k, v in theirs.data.tags.items() if k.startswith("mlflow.")}
    mlflow_tags.pop("mlflow.runName")
    assert {"mlflow.user", "mlflow.source.name", "mlflow.source.type"} <= set(mlflow_tags)
    assert {k: ours.data.tags.get(k) for k in mlflow_tags} == mlflow_tags
    assert ours.info.status == "FINISHED"


@pytest.mark.parametrize("how", ["uncaught", "with"])
def test_a_run_ends_failed_when_the_process_ends_with_an_exception(
    tmp_path: Path, how: str
) -> None:
    body = {
        "uncaught": "w = SummaryWriter(d, sinks=['tfevents', 'mlflow'])\n"
        "w.add_scalar('loss', 1.0, 0)\n"
        "raise RuntimeError('training diverged')\n",
        "with": "with SummaryWriter(d, sinks=['tfevents', 'mlflow']) as w:\n"
        "    w.add_scalar('loss', 1.0, 0)\n"
        "    raise RuntimeError('training diverged')\n",
    }[how]
    code = "import sys\nfrom tallyboard import SummaryWriter\nd = sys.argv[1]\n" + body
    log_dir = tmp_path / "exp" / "run"
    local_store(log_dir)
    done = subprocess.run(
        [sys.executable, "-c", code, str(log_dir)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1 and "training diverged" in done.stderr
    run = _only_run(_client(log_dir), "exp")
    assert run.info.status == "FAILED"
    assert [m.value for m in _client(log_dir).get_metric_history(run.info.run_id, "loss")] == [1.0]
    assert (
        json.loads((log_dir / ".tallyboard-mlflow.json").read_text()).popitem()[1]["status"]
        == "FAILED"
    )


def test_a_bad_deadline_is_refused_when_the_sink_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for bad in ("soon", "0", "-3", "inf", "nan"):
        monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", bad)
        with pytest.raises(ValueError, match="TALLYBOARD_MLFLOW_DEADLINE=.* positive number"):
            SummaryWriter(tmp_path / "r", sinks=["mlflow+http://127.0.0.1:9"])


@pytest.mark.parametrize("server", ["dead", "silent"])
def test_a_dead_or_silent_server_cannot_hold_flush_or_close_past_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str
) -> None:
    """``dead``: nothing listens (connection refused; MLflow's client retries for minutes);
    ``silent``: a socket accepts connections and never answers (MLflow's client waits 120 s a
    request, then retries). flush() and close() return after the deadline, one warning counts
    what was not sent, and the event file keeps everything."""
    from conftest import load_run
    from tb_server import free_port

    monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", "2")
    with socket.socket() as silent:
        if server == "silent":
            silent.bind(("127.0.0.1", 0))
            silent.listen(64)
            port = silent.getsockname()[1]
        else:
            port = free_port()
        url = f"http://127.0.0.1:{port}"
        log_dir = tmp_path / "exp" / "run"
        w = SummaryWriter(log_dir, sinks=["tfevents", f"mlflow+{url}"])
        for step in range(250):
            w.add_scalar("loss", float(step), step)
        started = time.monotonic()
        w.flush()  # MLflow does not answer: the values stay queued, flush returns
        flushed = time.monotonic() - started
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            started = time.monotonic()
            w.close()
            closed = time.monotonic() - started
    assert flushed < 2 + 1.5 and closed < 2 + 1.5, (flushed, closed)
    messages = [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]
    assert len(messages) == 1, messages
    assert "250 values could not be sent" in messages[0] and "tallyboard sync" in messages[0]
    assert [e.step for e in load_run(log_dir).Scalars("loss")] == list(range(250))
    entry = json.loads((log_dir / ".tallyboard-mlflow.json").read_text())[url]
    assert entry["unsent"] == 250 and entry["status"] == "FINISHED" and not entry["ended"]


def test_trials_logged_while_the_server_never_answers_do_not_each_wait_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``add_hparams`` closes each trial's writer at once (as torch): against a server that
    never answers, the first close waits the deadline, the next ones only a short grace (the
    trials' sinks take the writer's settings: a grace shorter than its 2 s default, so each
    trial waiting the deadline would take twice the time allowed)."""
    monkeypatch.setenv("TALLYBOARD_MLFLOW_DEADLINE", "3")
    grace = 0.5
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        entry = (f"mlflow+{url}", {"grace_secs": grace})
        w = SummaryWriter(tmp_path / "sweep" / "run", sinks=["tfevents", entry])
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for trial in range(4):
                w.add_hparams({"lr": 0.1 * trial}, {"acc": 0.5}, run_name=f"t{trial}")
            w.close()
        took = time.monotonic() - started
    assert took < 3 + 4 * grace + 2, took
    counts = [str(c.message) for c in caught if issubclass(c.category, SinkWarning)]
    assert len(counts) == 5 and all("could not be sent" in m for m in counts[:4]), counts
