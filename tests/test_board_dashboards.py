"""Every dashboard's data through ``tallyboard board`` equals TensorBoard's over event files.

One log dir holds a run per format (event files with every kind, a MindSpore summary file, CSV,
JSONL, and a third-party reader plugin's format; see ``board_support``). The reference is
TensorBoard itself (``--load_fast=false``) over the same values as event files: the original
event files for ``events/*``, ``tallyboard convert --to tfevents`` for the other formats. Both
frontends are asked every route each dashboard's page asks (tags, data, image and audio bytes,
the graph, the hparams tables, Time Series), and the answers must be equal; blob keys differ by
provider, so image and audio are compared by the bytes they lead to.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from board_support import board, convert_to_events, env_with, install_tsv_plugin, write_formats
from tb_server import TensorBoard, tensorboard_server


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TensorBoard, TensorBoard]]:
    """(TensorBoard through ``tallyboard board``, TensorBoard over event files)."""
    root = tmp_path_factory.mktemp("board-formats")
    env = env_with(install_tsv_plugin(root / "plugins"))
    write_formats(root / "logs")
    convert_to_events(root / "logs", root / "converted", env)
    shutil.rmtree(root / "converted" / "events")
    shutil.copytree(root / "logs" / "events", root / "converted" / "events")
    with (
        board(str(root / "logs"), "--reload", "0", env=env) as ours,
        tensorboard_server(root / "converted") as ref,
    ):
        yield ours.tb, ref


def both(pair: tuple[TensorBoard, TensorBoard], route: str, **params: Any) -> tuple[Any, Any]:
    return tuple(tb.get_json(route, **params) for tb in pair)  # type: ignore[return-value]


def same(pair: tuple[TensorBoard, TensorBoard], route: str, **params: Any) -> Any:
    ours, ref = both(pair, route, **params)
    assert ours == ref, (route, params)
    return ours


def tags_of(pair: tuple[TensorBoard, TensorBoard], plugin: str) -> list[tuple[str, str]]:
    tags = same(pair, f"/data/plugin/{plugin}/tags")
    found = [(run, tag) for run in sorted(tags) for tag in sorted(tags[run])]
    assert found, f"no {plugin} tags"
    return found


def test_runs_and_active_dashboards_are_the_same(pair: Any) -> None:
    ours, ref = both(pair, "/data/runs")
    assert (
        sorted(ours)
        == sorted(ref)
        == [
            "csv/run",
            "events/all",
            "events/all/trial",
            "jsonl/run",
            "mindspore/seed0",
            "tsv/run",
        ]
    )
    ours, ref = both(pair, "/data/plugins_listing")
    enabled = {name for name, p in ours.items() if p["enabled"]}
    assert enabled == {name for name, p in ref.items() if p["enabled"]}
    assert {
        "scalars",
        "custom_scalars",
        "images",
        "audio",
        "graphs",
        "distributions",
        "histograms",
        "text",
        "pr_curves",
        "hparams",
        "mesh",
        "timeseries",
    } <= enabled


def test_scalars_of_every_format_are_the_same_float32_values(pair: Any) -> None:
    found = tags_of(pair, "scalars")
    assert {run for run, _ in found} >= {"csv/run", "jsonl/run", "mindspore/seed0", "tsv/run"}
    for run, tag in found:
        points = same(pair, "/data/plugin/scalars/scalars", run=run, tag=tag)
        assert points, (run, tag)
    # a CSV holds 2/3 + 0.1 as a double; TensorBoard shows what event files keep, a float32
    csv = same(pair, "/data/plugin/scalars/scalars", run="csv/run", tag="csv_loss")
    assert csv[2][2] == float(__import__("numpy").float32(2.0 / 3 + 0.1))


def test_histograms_and_distributions_are_the_same(pair: Any) -> None:
    found = tags_of(pair, "histograms")
    assert {run for run, _ in found} == {"events/all", "jsonl/run", "mindspore/seed0"}
    for run, tag in found:
        for route in ("histograms/histograms", "distributions/distributions"):
            if run.startswith("events/"):
                assert same(pair, f"/data/plugin/{route}", run=run, tag=tag)
                continue
            # MindSpore and JSONL hold float64 histograms: the board serves them so, where
            # TensorBoard's loader rounds the converted files' HistogramProto to float32
            ours, ref = both(pair, f"/data/plugin/{route}", run=run, tag=tag)
            assert ours
            assert _float32_close(ours, ref), (route, run, tag)


def _float32_close(ours: Any, ref: Any) -> bool:
    """Same structure, numbers equal to float32 precision."""
    if isinstance(ours, list) and isinstance(ref, list):
        return len(ours) == len(ref) and all(map(_float32_close, ours, ref))
    if isinstance(ours, (int, float)) and isinstance(ref, (int, float)):
        return bool(abs(ours - ref) <= 1e-6 * max(abs(ours), abs(ref), 1e-30))
    return bool(ours == ref)


def _blobs_equal(pair: Any, plugin: str, listing: str, fetch: str) -> int:
    count = 0
    for run, tag in tags_of(pair, plugin):
        ours, ref = both(pair, f"/data/plugin/{plugin}/{listing}", run=run, tag=tag, sample=0)
        strip = [{k: v for k, v in item.items() if k != "query"} for item in ours]
        assert strip == [{k: v for k, v in item.items() if k != "query"} for item in ref]
        for a, b in zip(ours, ref):
            got = pair[0].get(f"/data/plugin/{plugin}/{fetch}?{a['query']}")
            assert got == pair[1].get(f"/data/plugin/{plugin}/{fetch}?{b['query']}")
            assert got
            count += 1
    return count


def test_images_are_the_same_bytes(pair: Any) -> None:
    assert _blobs_equal(pair, "images", "images", "individualImage") == 3 + 3 + 2


def test_audio_is_the_same_bytes(pair: Any) -> None:
    assert _blobs_equal(pair, "audio", "audio", "individualAudio") == 2


def test_text_is_the_same(pair: Any) -> None:
    for run, tag in tags_of(pair, "text"):
        assert same(pair, "/data/plugin/text/text", run=run, tag=tag)


def test_pr_curves_are_the_same(pair: Any) -> None:
    for run, tag in tags_of(pair, "pr_curves"):
        assert same(pair, "/data/plugin/pr_curves/pr_curves", run=run, tag=tag)


def test_meshes_are_the_same(pair: Any) -> None:
    found = tags_of(pair, "mesh")
    assert found == [("events/all", "tetra")]
    meshes = same(pair, "/data/plugin/mesh/meshes", run="events/all", tag="tetra", sample=0)
    assert {m["content_type"] for m in meshes} == {1, 2, 3}  # VERTEX, FACE, COLOR
    for content in ["VERTEX", "FACE", "COLOR"]:
        params = {"run": "events/all", "tag": "tetra", "sample": 0, "content_type": content}
        ours, ref = (tb.get("/data/plugin/mesh/data", **params) for tb in pair)
        assert ours == ref and ours


def test_custom_scalars_are_the_same(pair: Any) -> None:
    layout = same(pair, "/data/plugin/custom_scalars/layout")
    assert layout["category"][0]["title"] == "Board"
    assert same(pair, "/data/plugin/custom_scalars/scalars", run="events/all", tag="loss")


def test_graphs_are_the_same(pair: Any) -> None:
    info = same(pair, "/data/plugin/graphs/info")
    assert info["events/all"]["run_graph"]
    ours, ref = (tb.get("/data/plugin/graphs/graph", run="events/all") for tb in pair)
    assert ours == ref and b"Linear" in ours


def test_hparams_come_from_the_plugin_metadata_and_are_the_same(pair: Any) -> None:
    exp = [tb.post_json("/data/plugin/hparams/experiment", {"experimentName": ""}) for tb in pair]
    assert exp[0] == exp[1]
    names = {h["name"] for h in exp[0]["hparamInfos"]}
    assert names == {"lr", "optimizer"}
    request = {
        "experimentName": "",
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [{"hparam": n} for n in sorted(names)]
        + [{"metric": m["name"]} for m in exp[0]["metricInfos"]],
        "startIndex": 0,
        "sliceSize": 100,
    }
    groups = [tb.post_json("/data/plugin/hparams/session_groups", request) for tb in pair]
    assert groups[0] == groups[1]
    (group,) = groups[0]["sessionGroups"]
    assert group["hparams"] == {"lr": 0.1, "optimizer": "sgd"}
    assert group["metricValues"][0]["value"] == 0.75


def test_time_series_cards_are_the_same(pair: Any) -> None:
    tags = same(pair, "/data/plugin/timeseries/tags")
    requests = [
        {"plugin": "scalars", "tag": tag}
        for tag in sorted({t for run in tags["scalars"]["runTagInfo"].values() for t in run})
    ] + [
        {"plugin": "histograms", "tag": tag, "runId": run}
        for run, ts in sorted(tags["histograms"]["runTagInfo"].items())
        for tag in ts
    ]
    form = [("requests", json.dumps(requests))]
    ours, ref = (tb.post_form("/data/plugin/timeseries/timeSeries", form) for tb in pair)
    assert ours == ref and len(ours) == len(requests)
