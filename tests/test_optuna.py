"""Optuna: every finished trial of a real study is a run with its params and value.

optuna-integration's own ``TensorBoardCallback`` writes through ``tf.summary`` and so needs
TensorFlow, which the test environment does not have; these tests check the layout it
documents (``trial-<number>`` runs, the value at step ``trial.number``, params as hparams).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run

STATUS_SUCCESS, STATUS_FAILURE, STATUS_UNKNOWN = 1, 2, 0


def _objective(trial: Any) -> float:
    import optuna

    x = trial.suggest_float("x", -10, 10)
    layers = trial.suggest_int("layers", 1, 4)
    opt = trial.suggest_categorical("opt", ["sgd", "adam"])
    for step in range(3):
        trial.report(x * x / (step + 1), step)
    if trial.number == 2:
        raise RuntimeError("this trial fails")
    if trial.number == 3:
        raise optuna.TrialPruned()
    return (x - 2) ** 2 + layers + (opt == "sgd")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    import optuna
    from tallyboard_optuna import TallyboardCallback

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    logdir = tmp_path_factory.mktemp("optuna") / "runs"
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(
        _objective,
        n_trials=6,
        callbacks=[TallyboardCallback(logdir, "loss")],
        catch=(RuntimeError,),
    )
    return logdir, study


def _hparams(path: Path) -> dict[str, Any]:
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = load_run(path).PluginTagToContent("hparams")
    return {k: plugin_data_pb2.HParamsPluginData.FromString(v) for k, v in content.items()}


def test_each_trial_is_a_run_with_its_params_value_and_reported_curve(study: Any) -> None:
    logdir, study = study
    assert sorted(os.listdir(logdir)) == [f"trial-{t.number}" for t in study.trials]
    for trial in study.trials:
        run = logdir / f"trial-{trial.number}"
        acc = load_run(run)
        start = _hparams(run)["_hparams_/session_start_info"].session_start_info
        assert start.hparams["x"].number_value == trial.params["x"]
        assert start.hparams["layers"].number_value == trial.params["layers"]
        assert start.hparams["opt"].string_value == trial.params["opt"]
        curve = [(e.step, e.value) for e in acc.Scalars("intermediate_value")]
        assert curve == [
            (s, pytest.approx(v, rel=1e-6)) for s, v in sorted(trial.intermediate_values.items())
        ]
        if trial.value is not None:
            [point] = acc.Scalars("loss")
            assert point.step == trial.number and point.value == pytest.approx(trial.value)
        else:
            assert "loss" not in acc.Tags()["scalars"]


def test_session_status_says_how_each_trial_ended(study: Any) -> None:
    logdir, study = study
    statuses = {
        t.number: _hparams(logdir / f"trial-{t.number}")[
            "_hparams_/session_end_info"
        ].session_end_info.status
        for t in study.trials
    }
    assert statuses == {
        0: STATUS_SUCCESS,
        1: STATUS_SUCCESS,
        2: STATUS_FAILURE,
        3: STATUS_UNKNOWN,
        4: STATUS_SUCCESS,
        5: STATUS_SUCCESS,
    }


def test_the_study_reads_back_as_one_hparams_table(study: Any) -> None:
    import tallyboard

    logdir, study = study
    table = tallyboard.read(str(logdir), kind="hparams").set_index("run")
    assert sorted(table.index) == [f"trial-{t.number}" for t in study.trials]
    for trial in study.trials:
        row = table.loc[f"trial-{trial.number}"]
        assert row["x"] == trial.params["x"] and row["opt"] == trial.params["opt"]
        if trial.value is not None:
            assert row["loss"] == pytest.approx(trial.value)
    complete = [f"trial-{t.number}" for t in study.trials if t.state.name == "COMPLETE"]
    assert table.loc[complete, "loss"].idxmin() == f"trial-{study.best_trial.number}"


def test_multi_objective_and_bad_arguments(tmp_path: Path) -> None:
    import optuna
    from tallyboard_optuna import TallyboardCallback

    with pytest.raises(TypeError, match="dirname"):
        TallyboardCallback(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="metric_name"):
        TallyboardCallback(tmp_path, "")
    with pytest.raises(TypeError, match="sinks"):
        TallyboardCallback(tmp_path, sinks="csv")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no-such-sink"):
        TallyboardCallback(tmp_path, sinks=["no-such-sink"])
    study = optuna.create_study(directions=["minimize", "maximize"])
    callback = TallyboardCallback(tmp_path / "mo", ["loss", "acc"])
    study.optimize(lambda t: (t.suggest_float("a", 0, 1), 2.0), n_trials=2, callbacks=[callback])
    acc = load_run(tmp_path / "mo" / "trial-1")
    assert [e.value for e in acc.Scalars("acc")] == [2.0]
    with pytest.raises(ValueError, match="2 objectives"):
        study.optimize(lambda t: (1.0, 2.0), n_trials=1, callbacks=[TallyboardCallback(tmp_path)])
