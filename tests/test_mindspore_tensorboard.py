"""MindSpore runs whole in TensorBoard: the network and dataset graphs on GRAPHS, the lineage on
HPARAMS, through ``tallyboard convert --to tfevents`` and ``tallyboard board``.

One MindSpore child (``mindspore_support``) runs ``Model.train`` and ``Model.eval`` in GRAPH_MODE
and in PYNATIVE_MODE, each with MindSpore 2.10's own ``SummaryCollector`` (``ms``, learning rate
0.01) and tallyboard's (``tb``, 0.02), each with custom lineage, the evaluation into ``<run>/eval``.
The child notes the network graph as MindSpore's own ``anf_ir_pb2`` parses it. The tests read the
converted files back with TensorBoard's ``EventAccumulator`` and its graph and hparams protos, ask
``tallyboard board`` for the GRAPHS blob and the HPARAMS session groups over HTTP, and open both
dashboards on the board in headless Chromium.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import browser_support
import numpy as np
import pytest
from board_support import board
from browser_support import (
    check,
    goto,
    open_page,
    visible_text,
    wait_plugins_enabled,
    wait_rendered,
)
from mindspore_support import (
    Results,
    fresh_operator_caches,
    image_dataset,
    note,
    run_scenarios,
    scenario,
    summary_net,
)
from test_mindspore_graph_lineage import _accumulator, _session_hparams
from test_tensorboard_server_graph_hparams_embedding import _session_groups

MODES = ("graph", "pynative")
SIDES = {"ms": 0.01, "tb": 0.02}
CUSTOM = {
    "ms": {"note": "ms", "width": 2, "scale": 0.5},
    "tb": {"note": "tb", "width": 3, "scale": 1.5},
}
CONV_SCOPE = "Default/network-WithLossCell/_backbone-Net/conv-Conv2d"

# -- the MindSpore child ---------------------------------------------------------------------


def _graph_facts(path: Path) -> dict[str, Any]:
    """The network graph of the summary file in ``path`` as MindSpore's own protos read it."""
    import mindspore_reader as msr
    from mindspore.train import summary_pb2

    (summary,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    for payload in msr.read_records(summary):
        event = summary_pb2.Event.FromString(payload)
        if event.HasField("graph_def"):
            g = event.graph_def
            full = {n.name: n.full_name for n in g.node}
            return {
                "ops": {
                    n.full_name: [
                        n.op_type,
                        [full.get(i.name, i.name) for i in n.input],
                        [d.size for d in n.output_type.tensor_type.shape.dim]
                        if n.output_type.HasField("tensor_type")
                        else None,
                    ]
                    for n in g.node
                },
                "params": {
                    p.name: [d.size for d in p.type.tensor_type.shape.dim] for p in g.parameters
                },
            }
    return {}


def _train(out: Path, mode: str) -> None:
    import mindspore as ms
    import tallyboard
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    for side, lr in SIDES.items():
        fresh_operator_caches()
        ms.set_seed(0)
        net = summary_net()
        model = ms.train.Model(
            net,
            nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
            nn.Momentum(net.trainable_params(), lr, 0.9),
            metrics={"acc": ms.train.Accuracy()},
        )
        collector = ms.SummaryCollector if side == "ms" else tallyboard.SummaryCollector
        run = out / side
        train = collector(str(run), collect_freq=2, custom_lineage_data=CUSTOM[side])
        model.train(2, image_dataset(), callbacks=[train], dataset_sink_mode=False)
        note(f"{side} eval", model.eval(image_dataset(8), callbacks=[collector(str(run / "eval"))]))
        note(f"{side} graph", _graph_facts(run))


@scenario
def graph_mode(out: Path) -> None:
    _train(out, "graph")


@scenario
def pynative_mode(out: Path) -> None:
    _train(out, "pynative")


# -- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_scenarios(__file__, tmp_path_factory.mktemp("ms_tensorboard"))


@pytest.fixture(scope="module")
def converted(runs: Results, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each mode's runs as event files, converted by the CLI."""
    out = {}
    for mode in MODES:
        dst = tmp_path_factory.mktemp(f"converted_{mode}") / "tb"
        src = runs[f"{mode}_mode"].path
        done = subprocess.run(
            [sys.executable, "-m", "tallyboard", "convert", str(src), str(dst), "--to", "tfevents"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        out[mode] = dst
    return out


def _check_network(graph: Any, facts: dict[str, Any]) -> None:
    """``graph`` (a TensorBoard GraphDef) holds MindSpore's network: every operation under its
    full name (scopes kept), op type, inputs (parameters and constants as nodes named by them
    in their reader's scope) and output shape; every parameter with its shape."""
    nodes = {n.name: n for n in graph.node}
    by_leaf: dict[str, str] = {}
    for n in graph.node:
        if n.op in ("Parameter", "Const"):
            by_leaf[n.attr["name"].s.decode()] = n.name
    assert len(facts["ops"]) > 20
    for full, (op, inputs, shape) in facts["ops"].items():
        node = nodes[full]
        assert node.op == op, full
        assert [i.lstrip("^") for i in node.input] == [by_leaf.get(i, i) for i in inputs], full
        if shape is not None:
            (got,) = node.attr["_output_shapes"].list.shape
            assert [d.size for d in got.dim] == shape, full
    for name, shape in facts["params"].items():
        param = nodes[by_leaf[name]]
        assert param.op == "Parameter"
        assert [d.size for d in param.attr["_output_shapes"].list.shape[0].dim] == shape
    conv = [n for n in nodes if n.startswith(CONV_SCOPE + "/")]
    assert {nodes[n].op for n in conv} >= {"Conv2D", "BiasAdd"}, conv


@pytest.mark.parametrize("side", sorted(SIDES))
def test_graph_mode_network_converts_to_a_graphdef_with_mindspore_scopes(
    runs: Results, converted: dict[str, Path], side: str
) -> None:
    facts = runs["graph_mode"].notes[f"{side} graph"]
    assert facts, "MindSpore wrote no graph in GRAPH_MODE"
    acc = _accumulator(converted["graph"] / side)
    from tensorboard.compat.proto import graph_pb2

    graph = graph_pb2.GraphDef.FromString(acc.SerializedGraph())
    _check_network(graph, facts)


def _dataset_graph(acc: Any) -> Any:
    from tensorboard.compat.proto import config_pb2
    from tensorboard.util import tensor_util

    (event,) = acc.Tensors("dataset_graph")
    meta = acc.SummaryMetadata("dataset_graph").plugin_data
    assert (meta.plugin_name, meta.content) == ("graph_run_metadata_graph", b"1")
    (blob,) = tensor_util.make_ndarray(event.tensor_proto).reshape(-1)
    (function,) = config_pb2.RunMetadata.FromString(blob).function_graphs
    return function.pre_optimization_graph


@pytest.mark.parametrize("mode", MODES)
def test_dataset_pipeline_is_a_tagged_graph_in_both_modes(
    converted: dict[str, Path], mode: str
) -> None:
    for side in SIDES:
        graph = _dataset_graph(_accumulator(converted[mode] / side))
        nodes = {n.name: n for n in graph.node}
        assert sorted(nodes) == ["dataset/Batch", "dataset/GeneratorDataset"], nodes
        assert list(nodes["dataset/Batch"].input) == ["dataset/GeneratorDataset"]
        assert nodes["dataset/Batch"].attr["batch_size"].s == b"4"


def test_pynative_mode_has_no_network_graph_as_in_mindspore(
    runs: Results, converted: dict[str, Path]
) -> None:
    for side in SIDES:
        assert runs["pynative_mode"].notes[f"{side} graph"] == {}
        assert not _accumulator(converted["pynative"] / side).Tags()["graph"]


@pytest.mark.parametrize("mode", MODES)
def test_lineage_converts_to_hparams_and_metrics(
    runs: Results, converted: dict[str, Path], mode: str
) -> None:
    notes = runs[f"{mode}_mode"].notes
    for side, lr in SIDES.items():
        acc = _accumulator(converted[mode] / side)
        hparams = _session_hparams(acc)
        custom = CUSTOM[side]
        assert hparams == {
            "learning_rate": lr,
            "batch_size": 4.0,
            "epoch": 2.0,
            "optimizer": "Momentum",
            "loss_function": "SoftmaxCrossEntropyWithLogits",
            "network": "Net",
            "train_dataset_size": 16.0,
            "parallel_mode": "stand_alone",
            "device_num": 1.0,
            "model_size": 0.0,
            "custom/note": custom["note"],
            "custom/width": float(custom["width"]),
            "custom/scale": custom["scale"],
        }
        (text,) = acc.Tensors("lineage/custom")
        assert acc.SummaryMetadata("lineage/custom").plugin_data.plugin_name == "text"
        table = text.tensor_proto.string_val[0].decode()
        assert f"| note | {custom['note']} |" in table and f"| scale | {custom['scale']} |" in table
        (loss,) = acc.Tensors("lineage/loss")
        assert 0 < float(np.asarray(loss.tensor_proto.float_val)[0]) < 5
        evaluation = _accumulator(converted[mode] / side / "eval")
        (acc_value,) = evaluation.Tensors("lineage/metric/acc")
        expected = notes[f"{side} eval"]
        assert acc_value.tensor_proto.float_val[0] == pytest.approx(expected["acc"])
        (size,) = evaluation.Tensors("lineage/valid_dataset_size")
        assert size.tensor_proto.float_val[0] == 8


def test_read_gives_each_runs_lineage_as_hparams_with_its_last_scalars(runs: Results) -> None:
    import tallyboard

    table = tallyboard.read(str(runs["graph_mode"].path), kind="hparams").set_index("run")
    assert sorted(table.index) == ["ms", "tb"]
    assert table.loc["ms", "learning_rate"] == 0.01
    assert table.loc["tb", "learning_rate"] == 0.02
    assert table.loc["tb", "custom/note"] == "tb"
    assert np.isfinite(table.loc["ms", "loss/auto"])


# -- the board: its blob and session groups over HTTP, its dashboards in Chromium -------------

run_check = partial(browser_support.run_check, shot_prefix="mindspore-")


@pytest.fixture(scope="module")
def served(runs: Results, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``tallyboard board`` over both modes' MindSpore runs (no conversion)."""
    root = runs["graph_mode"].path.parent
    log = tmp_path_factory.mktemp("board") / "board.log"
    with board(str(root), log=log) as running:
        wait_plugins_enabled(running.tb, ["graphs", "hparams"])
        yield running


def _board_runs(served: Any) -> list[str]:
    return sorted(served.tb.get_json("/data/runs"))


def test_board_serves_the_network_graph_blob(runs: Results, served: Any) -> None:
    from google.protobuf import text_format
    from tensorboard.compat.proto import graph_pb2

    info = served.tb.get_json("/data/plugin/graphs/info")
    for side in SIDES:
        run = f"graph_mode/{side}"
        assert info[run]["run_graph"], info
        assert info[run]["tags"]["dataset_graph"]["op_graph"], info
        assert not info[f"pynative_mode/{side}"]["run_graph"], info
        text = served.tb.get("/data/plugin/graphs/graph", run=run).decode()
        graph = text_format.Parse(text, graph_pb2.GraphDef())
        _check_network(graph, runs["graph_mode"].notes[f"{side} graph"])
    assert "kind 'anf_graph' has no encoder" not in served.stderr()


def test_board_serves_the_lineage_as_session_groups(served: Any) -> None:
    groups = _session_groups(served.tb)
    got = {g["name"]: g["hparams"] for g in groups}
    for mode in MODES:
        for side, lr in SIDES.items():
            hparams = got[f"{mode}_mode/{side}"]
            assert hparams["learning_rate"] == pytest.approx(lr)
            assert hparams["custom/note"] == CUSTOM[side]["note"]
    experiment = served.tb.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
    metrics = {(m["name"]["group"], m["name"]["tag"]) for m in experiment["metricInfos"]}
    assert {("", "lineage/loss"), ("eval", "lineage/metric/acc")} <= metrics, metrics


@pytest.fixture(scope="module")
def page(served: Any) -> Iterator[Any]:
    with open_page() as pg:
        yield pg


def _graphs_of(page: Any, served: Any, run: str) -> tuple[Any, Any]:
    """Open GRAPHS and pick ``run`` in its Run menu as a user does; (dashboard, controls)."""
    goto(page, served.tb.base, "graphs")
    dash = page.locator("tf-graph-dashboard")
    controls = dash.locator("tf-graph-controls")
    menu = controls.locator("paper-dropdown-menu").first
    menu.wait_for()
    if run not in menu.locator("input").input_value():
        menu.click()
        controls.locator("paper-item").filter(has_text=run).first.click()
    return dash, controls


def test_graphs_dashboard_draws_the_network_with_its_cell_groups(
    page: Any, served: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    run = "graph_mode/ms"

    def body() -> None:
        dash, _ = _graphs_of(page, served, run)
        scene = dash.locator("tf-graph-scene")
        wait_rendered(scene.locator('g.node[data-name="Default"]'), dash, "graphs")
        for group in ["Default", "Gradients"]:
            expect(scene.locator(f'g.node[data-name="{group}"]')).to_be_visible()
        # open Default, then its network, down to the conv Cell's group
        path = ""
        for part in CONV_SCOPE.split("/"):
            path = f"{path}/{part}" if path else part
            node = scene.locator(f'g.node[data-name="{path}"]')
            expect(node).to_be_visible()
            if path != CONV_SCOPE:
                node.locator(".buttoncontainer").dispatch_event("click")
        node = scene.locator(f'g.node[data-name="{CONV_SCOPE}"]')
        node.locator(".buttoncontainer").dispatch_event("click")
        expect(scene.locator(f'g.node[data-name="{CONV_SCOPE}/Conv2D-op0"]')).to_be_visible()

    run_check(page, "graphs", tmp_path, body)


def test_graphs_dashboard_draws_the_dataset_pipeline_of_a_pynative_run(
    page: Any, served: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    run = "pynative_mode/tb"

    def body() -> None:
        dash, controls = _graphs_of(page, served, run)
        menus = controls.locator("paper-dropdown-menu")
        tag = menus.filter(has=page.locator('input[value="dataset_graph"]'))
        if not tag.count():  # the tag menu offers the run's tagged graphs
            menus.nth(1).click()
            controls.locator("paper-item").filter(has_text="dataset_graph").first.click()
        scene = dash.locator("tf-graph-scene")
        group = scene.locator('g.node[data-name="dataset"]')
        wait_rendered(group, dash, "graphs dataset")
        group.locator(".buttoncontainer").dispatch_event("click")
        for node in ["dataset/GeneratorDataset", "dataset/Batch"]:
            expect(scene.locator(f'g.node[data-name="{node}"]')).to_be_visible()

    run_check(page, "graphs_dataset", tmp_path, body)


def test_hparams_dashboard_compares_the_runs_lineage(
    page: Any, served: Any, tmp_path: Path
) -> None:
    def body() -> None:
        goto(page, served.tb.base, "hparams")
        dash = page.locator("tf-hparams-dashboard")
        grid = dash.locator("tf-hparams-table-view vaadin-grid")
        for mode in MODES:
            for side in SIDES:
                cell = grid.locator("vaadin-grid-cell-content").filter(
                    has_text=f"{mode}_mode/{side}"
                )
                wait_rendered(cell.first, dash, f"hparams {mode}/{side}")
        cells = grid.locator("vaadin-grid-cell-content").evaluate_all(
            "cs => cs.map(c => c.textContent.trim())"
        )
        for value in ["0.010000", "0.020000", "ms", "tb", "1.5000", "learning_rate"]:
            check(value in cells, f"hparams: {value!r} not in the table: {cells}")
        names = visible_text(page)
        for name in ["optimizer", "loss_function", "epoch", "train_dataset_size", "custom/note"]:
            check(name in names, f"hparams: {name!r} not among the hyper-parameters: {names}")

    run_check(page, "hparams", tmp_path, body)


def test_the_mindspore_child_wrote_evaluations(runs: Results) -> None:
    for mode in MODES:
        for side in SIDES:
            result = runs[f"{mode}_mode"].notes[f"{side} eval"]
            assert set(result) == {"acc"}, json.dumps(result)
