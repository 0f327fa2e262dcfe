"""``tallyboard.SummaryCollector`` in ``Model.train`` and ``Model.eval``, against MindSpore's own.

Each scenario trains the same tiny net on the same data (``mindspore.set_seed(0)``: CPU training
is deterministic) once with MindSpore 2.10's ``SummaryCollector`` (``ms``) and once with
tallyboard's (``tb``; ``tbm`` with ``tensorboard=True``), in one MindSpore child
(``mindspore_support``). The tests compare what both wrote, read back with the independent reader:
every summary value (kind, tag, step, value), the lineage records, the graph event, the loss
landscape's checkpoints and metadata; and the mirror with TensorBoard's ``EventAccumulator``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from conftest import load_run
from mindspore_support import (
    Results,
    comparable,
    error_of,
    fresh_operator_caches,
    lineage_records,
    note,
    run_scenarios,
    scenario,
    summary_file,
    summary_values,
)
from mindspore_support import (
    image_dataset as _dataset,
)
from mindspore_support import (
    summary_net as _net,
)

# -- the MindSpore child ---------------------------------------------------------------------


def _model() -> Any:
    import mindspore as ms
    from mindspore import nn

    ms.set_seed(0)
    net = _net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    return ms.train.Model(net, loss, optimizer, metrics={"acc": ms.train.Accuracy()})


def _collectors(**extra: Any) -> list[tuple[str, Any, dict[str, Any]]]:
    import mindspore
    import tallyboard

    return [
        ("ms", mindspore.SummaryCollector, {}),
        ("tb", tallyboard.SummaryCollector, {}),
        ("tbm", tallyboard.SummaryCollector, {"tensorboard": True, "sinks": ["csv"], **extra}),
    ]


def _train(
    out: Path,
    mode: str,
    epochs: int = 2,
    sink: bool = False,
    evaluate: bool = False,
    sides: tuple[str, ...] = ("ms", "tb", "tbm"),
    **kwargs: Any,
) -> None:
    """Train (and evaluate) with each side's collector; GRAPH_MODE compiles once per side."""
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    for name, collector_class, extra in _collectors():
        if name not in sides:
            continue
        fresh_operator_caches()
        model = _model()
        collector = collector_class(str(out / name), **kwargs, **extra)
        model.train(epochs, _dataset(), callbacks=[collector], dataset_sink_mode=sink)
        if evaluate:
            evaluation = collector_class(str(out / name / "eval"), **kwargs, **extra)
            note(f"{name} eval", model.eval(_dataset(8), callbacks=[evaluation]))


@scenario
def train_graph(out: Path) -> None:
    _train(out, "graph", collect_freq=3)


@scenario
def train_pynative(out: Path) -> None:
    _train(out, "pynative", evaluate=True, collect_freq=3)


@scenario
def train_specified(out: Path) -> None:
    """Histograms by regular expression, custom lineage, no landscape, a tensor frequency."""
    import os

    os.environ["MINDINSIGHT_HYPER_CONFIG"] = json.dumps({"custom_lineage_data": {"from_env": 1}})
    try:
        _train_specified(out)
    finally:
        del os.environ["MINDINSIGHT_HYPER_CONFIG"]


def _train_specified(out: Path) -> None:
    _train(
        out,
        "pynative",
        epochs=3,
        collect_freq=2,
        collect_tensor_freq=5,
        collect_specified_data={"histogram_regular": "^fc", "collect_landscape": None},
        custom_lineage_data={"lr": 0.1, "epochs": 3, "note": "tiny", "from_env": 2},
    )


@scenario
def train_only_specified(out: Path) -> None:
    """keep_default_action=False: only the loss."""
    _train(
        out,
        "pynative",
        epochs=1,
        collect_freq=1,
        collect_specified_data={"collect_metric": True},
        keep_default_action=False,
    )


@scenario
def driven_sink_mode(out: Path) -> None:
    """Dataset sink mode collects by epoch. MindSpore on CPU trains step by step even when asked
    to sink, so the callbacks are driven here as Model.train drives them in sink mode: one
    step_end and one epoch_end per epoch, with the epoch's last step number."""
    import mindspore as ms
    from mindspore.train.callback._callback import InternalCallbackParam

    ms.set_context(mode=ms.PYNATIVE_MODE)
    for name, collector_class, extra in _collectors():
        fresh_operator_caches()
        model = _model()
        network = model.train_network
        dataset = _dataset()
        batches = list(dataset.create_tuple_iterator())
        collector = collector_class(str(out / name), collect_freq=2, **extra)
        params = InternalCallbackParam()
        params.update(
            mode="train", dataset_sink_mode=True, epoch_num=5, batch_num=len(batches),
            train_network=network, network=model._network, optimizer=model._optimizer,
            loss_fn=model._loss_fn, train_dataset=dataset, train_dataset_element=None,
            list_callback=[collector], parallel_mode="stand_alone", device_number=1,
        )  # fmt: skip
        context = ms.train.RunContext(params)
        with collector:
            collector.begin(context)
            for epoch in range(1, 6):
                for image, label in batches:
                    params.net_outputs = network(image, label)
                params.cur_epoch_num, params.cur_step_num = epoch, epoch * len(batches)
                collector.step_end(context)
                collector.epoch_end(context)
            collector.end(context)


@scenario
def constructor_checks(out: Path) -> None:
    """Bad arguments: MindSpore's and tallyboard's errors side by side."""
    import mindspore
    import tallyboard

    (out / "a_file").write_text("")
    cases: dict[str, dict[str, Any]] = {
        "dir type": {"summary_dir": 3},
        "dir blank": {"summary_dir": "  "},
        "dir is a file": {"summary_dir": str(out / "a_file")},
        "freq zero": {"collect_freq": 0},
        "freq bool": {"collect_freq": True},
        "freq float": {"collect_freq": 1.5},
        "tensor freq": {"collect_tensor_freq": -1},
        "max size zero": {"max_file_size": 0},
        "max size str": {"max_file_size": "1"},
        "export list": {"export_options": []},
        "export key": {"export_options": {"x": "npy"}},
        "export value": {"export_options": {"tensor_format": "png"}},
        "action": {"keep_default_action": 1},
        "specified type": {"collect_specified_data": []},
        "specified key": {"collect_specified_data": {"collect_loss": True}},
        "specified bool": {"collect_specified_data": {"collect_graph": 1}},
        "regular type": {"collect_specified_data": {"histogram_regular": 3}},
        "regular bad": {"collect_specified_data": {"histogram_regular": "(["}},
        "landscape type": {"collect_specified_data": {"collect_landscape": []}},
        "landscape key": {"collect_specified_data": {"collect_landscape": {"size": 3}}},
        "landscape size": {"collect_specified_data": {"collect_landscape": {"landscape_size": 2}}},
        "landscape unit": {"collect_specified_data": {"collect_landscape": {"unit": "day"}}},
        "landscape create": {
            "collect_specified_data": {"collect_landscape": {"create_landscape": {"x": True}}}
        },
        "landscape interval": {
            "collect_specified_data": {"collect_landscape": {"intervals": [[1, 2]]}}
        },
        "landscape epoch": {
            "collect_specified_data": {"collect_landscape": {"intervals": [[1, 2, "3"]]}}
        },
        "custom type": {"custom_lineage_data": [1]},
        "custom key": {"custom_lineage_data": {1: 2}},
        "custom value": {"custom_lineage_data": {"a": [1]}},
        "fine": {"collect_freq": 1, "custom_lineage_data": {"a": 1.5}},
    }
    for name, collector_class in [
        ("ms", mindspore.SummaryCollector),
        ("tb", tallyboard.SummaryCollector),
    ]:
        errors = {}
        for case, kwargs in cases.items():
            kwargs = {"summary_dir": str(out / name / case.replace(" ", "_")), **kwargs}
            errors[case] = error_of(lambda c=collector_class, k=kwargs: c(**k))
        note(name, errors)
    note("tensorboard", error_of(lambda: tallyboard.SummaryCollector(str(out), tensorboard=1)))
    unknown = tallyboard.SummaryCollector(str(out / "sinks"), sinks=["no_such_sink"])
    note("sinks", error_of(unknown.__enter__))  # SummaryRecord checks them when it opens


@scenario
def two_collectors(out: Path) -> None:
    """Two collectors in one callback list are refused when training starts."""
    import mindspore
    import tallyboard

    mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
    for name, collector_class in [
        ("ms", mindspore.SummaryCollector),
        ("tb", tallyboard.SummaryCollector),
    ]:
        callbacks = [collector_class(str(out / name / "a")), collector_class(str(out / name / "b"))]
        note(name, error_of(lambda c=callbacks: _model().train(1, _dataset(), callbacks=c)))


# -- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_scenarios(__file__, tmp_path_factory.mktemp("ms_collector"))


def graph_events(path: Path) -> list[str]:
    return [
        e.graph_def.name
        for e in msr.read_events(summary_file(path), canonical=False)
        if e.HasField("graph_def")
    ]


def written_values(path: Path) -> list[tuple[int, str, str, Any]]:
    """(step, tag, kind, comparable value) of every summary value, in file order."""
    return [(s, t, k, comparable(v, k)) for s, t, k, v in summary_values(path)]


def by_step(vals: list[tuple[int, str, str, Any]]) -> dict[int, list[str]]:
    steps: dict[int, list[str]] = {}
    for step, tag, kind, _ in vals:
        steps.setdefault(step, []).append(f"{tag}/{kind}")
    return steps


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.parametrize("name", ["tb", "tbm"])
def test_model_train_writes_what_mindsporess_collector_writes(
    runs: Results, mode: str, name: str
) -> None:
    path = runs[f"train_{mode}"].path
    expected = written_values(path / "ms")
    got = written_values(path / name)
    assert [v[:3] for v in got] == [v[:3] for v in expected]
    assert got == expected
    assert lineage_records(path / name) == lineage_records(path / "ms")
    assert len(graph_events(path / name)) == len(graph_events(path / "ms"))


def test_collection_steps_and_tags(runs: Results) -> None:
    steps = by_step(written_values(runs["train_graph"].path / "tb"))
    auto = ["input_data/auto/image", "loss/auto/scalar_value"] + [
        f"{p}/auto/histogram" for p in ("conv.weight", "conv.bias", "fc.weight", "fc.bias")
    ]
    operators = ["logits_mean/scalar_value", "logits/histogram", "logits_t/tensor"]
    # 8 steps, collect_freq=3: the first step (twice: after the graph, then the collection),
    # 3 and 6; TensorSummary only at steps of range(0, 9, 3); each epoch's end repeats a step
    # collected by the frequency (4: no, 8: no).
    assert sorted(steps) == [1, 3, 6]
    assert sorted(steps[3]) == sorted(auto + operators)
    assert "logits_t/tensor" in steps[6]
    assert graph_events(runs["train_graph"].path / "tb")  # GRAPH_MODE: the training graph
    assert not graph_events(runs["train_pynative"].path / "tb")  # PyNative has none


def test_lineage_of_train_and_eval(runs: Results) -> None:
    path = runs["train_graph"].path / "tb"
    fields = [field for field, _ in lineage_records(path)]
    assert fields == ["dataset_graph", "train_lineage"]
    train = dict(lineage_records(path))["train_lineage"]
    assert train.hyper_parameters.optimizer == "Momentum"
    assert train.hyper_parameters.learning_rate == pytest.approx(0.01)
    assert train.hyper_parameters.loss_function == "SoftmaxCrossEntropyWithLogits"
    assert (train.hyper_parameters.epoch, train.hyper_parameters.batch_size) == (2, 4)
    assert train.train_dataset.train_dataset_size == 16
    assert train.algorithm.network == "Net"
    assert train.model.path == '{"ckpt": null}'
    graph = dict(lineage_records(path))["dataset_graph"]
    assert graph.children[0].parameter.mapStr["op_type"] == "GeneratorDataset"
    for name in ("tb", "tbm"):
        evaluation = lineage_records(runs["train_pynative"].path / name / "eval")
        assert evaluation == lineage_records(runs["train_pynative"].path / "ms" / "eval")
    ((field, metric),) = lineage_records(runs["train_pynative"].path / "tb" / "eval")
    assert field == "evaluation_lineage" and metric.valid_dataset.valid_dataset_size == 8
    assert json.loads(metric.metric) == runs["train_pynative"].notes["ms eval"]
    notes = runs["train_pynative"].notes
    assert notes["tb eval"] == notes["ms eval"]


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_landscape_checkpoints_and_metadata(runs: Results, mode: str) -> None:
    path = runs[f"train_{mode}"].path
    ms_ckpt, tb_ckpt = path / "ms" / "ckpt_dir", path / "tb" / "ckpt_dir"
    names = sorted(p.name for p in ms_ckpt.iterdir())
    assert names == [f"Net_{i}_step.ckpt" for i in range(1, 9)] + ["train_metadata.json"]
    assert sorted(p.name for p in tb_ckpt.iterdir()) == names
    for ckpt in names[:-1]:
        assert (tb_ckpt / ckpt).read_bytes() == (ms_ckpt / ckpt).read_bytes()
    ms_meta = json.loads((ms_ckpt / "train_metadata.json").read_text().replace(str(ms_ckpt), "D"))
    tb_meta = json.loads((tb_ckpt / "train_metadata.json").read_text().replace(str(tb_ckpt), "D"))
    assert tb_meta == ms_meta
    assert tb_meta["model_params_file_map"]["1"] == "D/Net_1_step.ckpt"
    assert oct((tb_ckpt / "train_metadata.json").stat().st_mode & 0o777) == "0o400"


@pytest.mark.parametrize("name", ["tb", "tbm"])
def test_specified_data_custom_lineage_and_tensor_frequency(runs: Results, name: str) -> None:
    path = runs["train_specified"].path
    assert written_values(path / name) == written_values(path / "ms")
    assert lineage_records(path / name) == lineage_records(path / "ms")
    assert not (path / name / "ckpt_dir").exists()
    steps = by_step(written_values(path / name))
    assert [t for t in steps[2] if t.endswith("/histogram") and "/auto" in t] == [
        "fc.weight/auto/histogram",
        "fc.bias/auto/histogram",
    ]
    assert sorted(s for s, tags in steps.items() if "logits_t/tensor" in tags) == [1, 5, 10]
    info = dict(lineage_records(path / name))["user_defined_info"]
    entries = [dict(e.map_int32) or dict(e.map_double) or dict(e.map_str) for e in info.user_info]
    assert entries == [{"from_env": 2}, {"lr": 0.1}, {"epochs": 3}, {"note": "tiny"}]


def test_only_what_is_specified_without_the_defaults(runs: Results) -> None:
    path = runs["train_only_specified"].path
    assert written_values(path / "tb") == written_values(path / "ms")
    tags = {tag for _, tag, _, _ in written_values(path / "tb")}
    assert tags == {"loss/auto", "logits_mean", "logits", "logits_t"}
    assert not [p for p in (path / "tb").iterdir() if p.name.endswith("_lineage")]


@pytest.mark.parametrize("name", ["tb", "tbm"])
def test_dataset_sink_mode_collects_by_epoch(runs: Results, name: str) -> None:
    path = runs["driven_sink_mode"].path
    assert written_values(path / name) == written_values(path / "ms")
    assert lineage_records(path / name) == lineage_records(path / "ms")
    steps = by_step(written_values(path / name))
    # epochs 1 (the first), 2 and 4 (collect_freq=2), each at its last step (4 batches);
    # TensorSummary at the epochs of range(0, 6, 2); each collected epoch's end repeats it
    assert sorted(steps) == [4, 8, 16]
    assert "logits_t/tensor" in steps[8] and "input_data/auto/image" not in steps[8]
    ckpt = sorted(p.name for p in (path / name / "ckpt_dir").iterdir())  # steps 1-19, by step
    assert ckpt == sorted(
        [f"Net_{4 * e}_step.ckpt" for e in (1, 2, 3, 4)] + ["train_metadata.json"]
    )


def test_the_mirror_shows_loss_images_and_histograms_in_tensorboard(runs: Results) -> None:
    path = runs["train_graph"].path
    expected = summary_values(path / "ms")
    acc = load_run(path / "tbm")
    loss = [(s, v) for s, t, k, v in expected if t == "loss/auto"]
    got = [(e.step, e.value) for e in acc.Scalars("loss/auto")]
    assert [s for s, _ in got] == [s for s, _ in loss]
    assert np.allclose([v for _, v in got], [v for _, v in loss])
    images = acc.Images("input_data/auto")
    assert [e.step for e in images] == [s for s, t, _, _ in expected if t == "input_data/auto"]
    assert (images[0].width, images[0].height) == (32, 8)  # 4 images of 8x8 side by side
    for tag in ("conv.weight/auto", "fc.bias/auto", "logits"):
        hist = acc.Histograms(tag)
        assert [e.step for e in hist] == [s for s, t, k, _ in expected if t == tag]
        assert hist[0].histogram_value.num > 0


def test_sinks_get_the_loss_too(runs: Results) -> None:
    path = runs["train_graph"].path
    loss = [(s, v) for s, t, k, v in summary_values(path / "ms") if t == "loss/auto"]
    with open(path / "tbm" / "scalars.csv", newline="") as f:
        got = [
            (int(r["step"]), float(r["value"]))
            for r in csv.DictReader(f)
            if r["tag"] == "loss/auto"
        ]
    assert [s for s, _ in got] == [s for s, _ in loss]
    assert np.allclose([v for _, v in got], [v for _, v in loss])


def test_constructor_checks_as_mindspore(runs: Results) -> None:
    notes = runs["constructor_checks"].notes
    assert notes["tb"] == notes["ms"]
    assert notes["ms"]["fine"] is None
    assert all(error is not None for case, error in notes["ms"].items() if case != "fine")
    assert notes["ms"]["freq bool"] == [
        "TypeError",
        "For `collect_freq` the type should be a valid type of ['int'], but got bool.",
    ]
    assert notes["tensorboard"][0] == "TypeError" and "tensorboard" in notes["tensorboard"][1]
    assert notes["sinks"][0] == "ValueError" and "no_such_sink" in notes["sinks"][1]


def test_two_collectors_in_one_list_are_refused(runs: Results) -> None:
    notes = runs["two_collectors"].notes
    assert notes["tb"] == notes["ms"]
    # MindSpore's second collector fails to open its SummaryRecord, before any check of the list
    assert notes["tb"][0] == "RuntimeError" and "only one instance" in notes["tb"][1]


def test_without_mindspore_the_collector_says_what_to_install(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mindspore"] = None  # as if MindSpore were not installed
        import tallyboard
        try:
            from tallyboard import SummaryCollector
        except ImportError as exc:
            print(exc)
        else:
            raise SystemExit("imported")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "pip install mindspore" in out and "SummaryCollector" in out
