"""Ray Tune on a real local Ray runtime: TallyboardLoggerCallback beside Ray's TBXLoggerCallback.

One runtime for the module (Ray starts slowly), on 127.0.0.1, without its dashboard.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_run
from ray_support import ray_runtime as local_ray

STATUS_SUCCESS, STATUS_FAILURE = 1, 2


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[None]:
    from ray import cloudpickle

    # the workers cannot import this test module: send its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TUNE_RESULT_BUFFER_LENGTH", "1")
        with local_ray(num_cpus=2, log_to_driver=False, configure_logging=False):
            yield


def _trainable(config: dict[str, Any]) -> None:
    from ray import tune

    if config["fail"]:
        raise RuntimeError("this trial fails")
    for i in range(1, 4):
        tune.report({"loss": config["lr"] / i, "acc": 1 - config["lr"] / i, "nested": {"x": i}})


@pytest.fixture(scope="module")
def sweep(ray_runtime: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    """Three trials (one fails), logged by Ray's default TBXLoggerCallback in the trial dirs
    and by ours in a log dir of its own."""
    from ray import tune
    from ray.tune.logger import TBXLoggerCallback
    from tallyboard_raytune import TallyboardLoggerCallback

    tmp = tmp_path_factory.mktemp("ray")
    ours = tmp / "ours"
    tuner = tune.Tuner(
        _trainable,
        param_space={
            "lr": tune.grid_search([0.1, 0.01, 0.5]),
            "fail": tune.sample_from(lambda spec: spec.config["lr"] == 0.5),
            "layers": 2,
            "opt": {"name": "sgd", "momentum": None},
        },
        run_config=tune.RunConfig(
            name="exp",
            storage_path=str(tmp / "storage"),
            callbacks=[TBXLoggerCallback(), TallyboardLoggerCallback(ours)],
            verbose=0,
        ),
    )
    results = tuner.fit()
    return tmp / "storage" / "exp", ours, results


def _trial_dirs(results: Any) -> dict[float, Path]:
    """{lr: the trial's directory, where TBXLoggerCallback wrote}."""
    return {result.config["lr"]: Path(result.path) for result in results}


def test_every_trial_is_a_run_with_the_scalars_tbx_logger_writes(sweep: Any) -> None:
    experiment, ours, results = sweep
    assert len(results) == 3 and len(results.errors) == 1
    theirs_dirs = _trial_dirs(results)
    assert sorted(theirs_dirs) == [0.01, 0.1, 0.5]
    for lr in (0.1, 0.01):
        theirs = load_run(theirs_dirs[lr])
        mine = load_run(ours / theirs_dirs[lr].name)
        their_tags = set(theirs.Tags()["scalars"])
        assert {"ray/tune/loss", "ray/tune/acc", "ray/tune/nested/x"} <= their_tags
        assert set(mine.Tags()["scalars"]) == their_tags
        for tag in their_tags:
            want = [(e.step, e.value) for e in theirs.Scalars(tag)]
            got = [(e.step, e.value) for e in mine.Scalars(tag)]
            if tag.startswith("ray/tune/time_") or tag.endswith("_per_s"):
                assert [s for s, _ in got] == [s for s, _ in want], tag
            else:
                assert got == want, tag
        assert [e.step for e in mine.Scalars("ray/tune/loss")] == [1, 2, 3]


def test_the_sweep_reads_back_as_one_hparams_table(sweep: Any) -> None:
    import tallyboard

    experiment, ours, results = sweep
    table = tallyboard.read(str(ours), kind="hparams").sort_values("lr")
    assert list(table["lr"]) == [0.01, 0.1, 0.5]
    assert list(table["layers"]) == [2, 2, 2]
    assert list(table["opt/name"]) == ["sgd"] * 3
    assert list(table["opt/momentum"]) == ["None"] * 3  # kept, as text
    assert list(table["ray/tune/loss"][:2]) == pytest.approx([0.01 / 3, 0.1 / 3])
    assert table["ray/tune/loss"].isna().iloc[2]  # the failed trial reported nothing
    by_lr = {row.lr: row.run for row in table.itertuples()}
    assert set(by_lr.values()) == {p.name for p in _trial_dirs(results).values()}


def test_sessions_start_with_the_trial_and_end_with_its_status(sweep: Any) -> None:
    """TBXLoggerCallback writes the hparams only at a trial's end, and none for a failed one;
    ours writes them at the start and ends a failed trial's session as a failure."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    experiment, ours, results = sweep

    def hparams(path: Path) -> dict[str, Any]:
        try:
            content = load_run(path).PluginTagToContent("hparams")
        except KeyError:  # no hparams in the run at all
            return {}
        return {k: plugin_data_pb2.HParamsPluginData.FromString(v) for k, v in content.items()}

    statuses = {}
    for lr, their_dir in _trial_dirs(results).items():
        theirs, mine = hparams(their_dir), hparams(ours / their_dir.name)
        start = mine["_hparams_/session_start_info"].session_start_info
        assert start.hparams["lr"].number_value == lr
        assert start.hparams["opt/name"].string_value == "sgd"
        statuses[lr] = mine["_hparams_/session_end_info"].session_end_info.status
        if lr == 0.5:
            assert theirs == {}  # TBXLoggerCallback: a failed trial has no hparams at all
        else:
            their_start = theirs["_hparams_/session_start_info"].session_start_info
            assert their_start.hparams["lr"].number_value == lr
    assert statuses == {0.1: STATUS_SUCCESS, 0.01: STATUS_SUCCESS, 0.5: STATUS_FAILURE}


def test_bad_arguments_are_refused_by_name(tmp_path: Path) -> None:
    from tallyboard_raytune import TallyboardLoggerCallback

    with pytest.raises(TypeError, match="log_dir"):
        TallyboardLoggerCallback(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sinks"):
        TallyboardLoggerCallback(tmp_path, sinks="tfevents")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no-such-sink"):
        TallyboardLoggerCallback(tmp_path, sinks=["no-such-sink"])
    assert not os.listdir(tmp_path)


def test_by_default_each_trial_directory_holds_our_run_alone(
    ray_runtime: None, tmp_path: Path
) -> None:
    """Without log_dir the runs go where TBXLoggerCallback writes, the trial directories, and
    Tune adds no TBXLoggerCallback beside ours (two event files per trial would double every
    point); the experiment directory reads back as one table."""
    import tallyboard
    from ray import tune
    from tallyboard_raytune import TallyboardLoggerCallback

    results = tune.Tuner(
        _trainable,
        param_space={"lr": tune.grid_search([0.2, 0.02]), "fail": False},
        run_config=tune.RunConfig(
            name="exp2",
            storage_path=str(tmp_path),
            callbacks=[TallyboardLoggerCallback()],
            verbose=0,
        ),
    ).fit()
    assert not results.errors
    for result in results:
        events = [p for p in os.listdir(result.path) if p.startswith("events.out.tfevents")]
        assert len(events) == 1, events
        assert [e.step for e in load_run(result.path).Scalars("ray/tune/loss")] == [1, 2, 3]
    table = tallyboard.read(str(tmp_path / "exp2"), kind="hparams").sort_values("lr")
    assert list(table["lr"]) == [0.02, 0.2]
    assert list(table["ray/tune/loss"]) == pytest.approx([0.02 / 3, 0.2 / 3])
