"""TallyboardCallback beside transformers' own TensorBoardCallback, and the HPARAMS tab it fills."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import load_run
from tb_server import tensorboard_server
from test_transformers import _offline, _train  # noqa: F401  (_offline: an autouse fixture)

ALL_STATUSES = ["STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING", "STATUS_UNKNOWN"]


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same training logged by HF's TensorBoardCallback (torch's writer) and by ours, and a
    Lightning run with other hyper-parameters in the same log dir."""
    from tallyboard_lightning import TallyboardLogger
    from tallyboard_transformers import TallyboardCallback
    from torch.utils.tensorboard import SummaryWriter
    from transformers.integrations import TensorBoardCallback

    with pytest.MonkeyPatch.context() as mp:
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
            mp.setenv(var, "1")
        mp.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
        tmp = tmp_path_factory.mktemp("hf")
        runs = tmp / "runs"
        _train(tmp, [TensorBoardCallback(tb_writer=SummaryWriter(str(runs / "hf")))])
        _train(tmp, [TallyboardCallback(runs / "ours")])
    other = TallyboardLogger(runs, name="", version="lightning", default_hp_metric=False)
    other.log_hyperparams({"lr": 0.1, "hidden": 8})
    other.log_metrics({"val_loss": 0.5}, 3)
    other.finalize("success")
    return runs


def test_same_scalars_and_texts_as_hf_tensorboard_callback(side_by_side: Path) -> None:
    theirs, ours = load_run(side_by_side / "hf"), load_run(side_by_side / "ours")
    assert set(ours.Tags()["scalars"]) == set(theirs.Tags()["scalars"])
    for tag in theirs.Tags()["scalars"]:
        want = [(e.step, e.value) for e in theirs.Scalars(tag)]
        got = [(e.step, e.value) for e in ours.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in want], tag
        if not tag.endswith(("runtime", "per_second")):  # timings differ run to run
            assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=1e-6), tag
    for tag in ("args/text_summary", "model_config/text_summary"):
        [mine], [their] = ours.Tensors(tag), theirs.Tensors(tag)
        assert json.loads(mine.tensor_proto.string_val[0]) == json.loads(
            their.tensor_proto.string_val[0]
        )


def test_hparams_tab_row_has_every_column_beside_another_trainers_run(side_by_side: Path) -> None:
    """TensorBoard's hparams plugin (HTTP API, real server): the run's row holds its 100+
    hyper-parameters and its metrics, equal to read(kind="hparams"), while a Lightning run
    with other hyper-parameters in the same log dir keeps its own columns too."""
    import tallyboard

    table = tallyboard.read(str(side_by_side), kind="hparams").set_index("run")
    body = {
        "experimentName": "",
        "allowedStatuses": ALL_STATUSES,
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 100,
    }
    with tensorboard_server(side_by_side) as tb:
        deadline = time.monotonic() + 30
        while True:
            groups = tb.post_json("/data/plugin/hparams/session_groups", body)
            groups = {g["name"]: g for g in groups.get("sessionGroups", [])}
            if len(groups) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        experiment = tb.post_json(
            "/data/plugin/hparams/experiment", {"experimentName": "", "includeMetrics": True}
        )
    columns = {info["name"] for info in experiment["hparamInfos"]}
    metrics = {m["name"]["tag"] for m in experiment["metricInfos"]}
    assert sorted(groups) == ["lightning", "ours"]
    ours = groups["ours"]
    assert len(ours["hparams"]) > 100
    assert set(ours["hparams"]) <= columns  # every value of the row has its column
    assert {"lr", "hidden"} <= columns  # ... and so has the other trainer's run
    assert {"train/loss", "eval/loss", "val_loss"} <= metrics
    row = table.loc["ours"]
    for name, value in ours["hparams"].items():
        assert row[name] == value, name
    [session] = ours["sessions"]
    assert session["status"] == "STATUS_SUCCESS"
    values = {m["name"]["tag"]: m["value"] for m in session["metricValues"]}
    assert values["train/loss"] == pytest.approx(row["train/loss"])
    assert values["eval/loss"] == pytest.approx(row["eval/loss"])
    assert groups["lightning"]["hparams"] == {"lr": 0.1, "hidden": 8}
