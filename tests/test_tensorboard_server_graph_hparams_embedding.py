"""A real TensorBoard serves what add_graph, add_hparams and add_embedding wrote."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nets import Net
from PIL import Image
from tallyboard import SummaryWriter
from tb_server import TensorBoard, tensorboard_server


def _wait(fn: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            out = fn()
            if out:
                return out
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("TensorBoard did not serve the data in time")
        time.sleep(0.3)


def _session_groups(tb: TensorBoard) -> list[Any]:
    body = {
        "experimentName": "",
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 100,
    }
    return list(tb.post_json("/data/plugin/hparams/session_groups", body).get("sessionGroups", []))


def test_graphs_hparams_and_projector_are_served(logdir: Path) -> None:
    mat = np.arange(12, dtype=np.float32).reshape(4, 3) / 3
    images = np.zeros((4, 3, 2, 5), dtype=np.float32)
    images[2] = 1.0
    with SummaryWriter(logdir) as w:
        w.add_graph(Net(), torch.zeros(2, 3))
        w.add_hparams({"lr": 0.1, "opt": "adam", "aug": True}, {"acc": 0.5}, run_name="t1")
        w.add_hparams({"lr": 0.01, "opt": "sgd", "aug": False}, {"acc": 0.75}, run_name="t2")
        w.add_embedding(
            mat, metadata=["a", "b", "c", "d"], label_img=images, tag="emb/x", global_step=2
        )

    with tensorboard_server(logdir) as tb:
        # graphs
        info = _wait(lambda: tb.get_json("/data/plugin/graphs/info").get("."))
        assert info["run_graph"] is True and "step1" in info["tags"]
        pbtxt = tb.get("/data/plugin/graphs/graph", run=".").decode()
        for name in (
            "input/x",
            "output/output.1",
            "Net/Linear[l]/input",
            "Net/Linear[l]/weight/weight",
        ):
            assert f'name: "{name}"' in pbtxt
        assert 'op: "aten::linear"' in pbtxt and "_output_shapes" in pbtxt
        assert (
            "/device:CPU:0"
            in tb.get("/data/plugin/graphs/run_metadata", run=".", tag="step1").decode()
        )

        # hparams
        experiment = _wait(
            lambda: tb.post_json("/data/plugin/hparams/experiment", {"experimentName": ""})
        )
        infos = {h["name"]: h for h in experiment["hparamInfos"]}
        assert (
            infos["aug"]["type"] == "DATA_TYPE_BOOL" and infos["opt"]["type"] == "DATA_TYPE_STRING"
        )
        assert [m["name"]["tag"] for m in experiment["metricInfos"]] == ["acc"]
        groups = _wait(lambda: len(_session_groups(tb)) == 2 and _session_groups(tb))
        by_name = {g["sessions"][0]["name"]: g for g in groups}
        assert set(by_name) == {"t1", "t2"}
        assert by_name["t1"]["hparams"] == {"lr": 0.1, "opt": "adam", "aug": True}
        assert by_name["t2"]["hparams"] == {"lr": 0.01, "opt": "sgd", "aug": False}
        acc = {n: g["sessions"][0]["metricValues"][0]["value"] for n, g in by_name.items()}
        assert acc == {"t1": 0.5, "t2": 0.75}

        # projector
        runs = _wait(lambda: tb.get_json("/data/plugin/projector/runs"))
        assert "." in runs
        config = tb.get_json("/data/plugin/projector/info", run=".")
        (emb,) = config["embeddings"]
        assert emb["tensorName"] == "emb/x:00002" and emb["tensorShape"] == [4, 3]
        assert emb["sprite"]["singleImageDim"] == [5, 2]
        raw = tb.get("/data/plugin/projector/tensor", run=".", name="emb/x:00002")
        assert np.array_equal(np.frombuffer(raw, dtype=np.float32).reshape(4, 3), mat)
        metadata = tb.get("/data/plugin/projector/metadata", run=".", name="emb/x:00002").decode()
        assert metadata.split("\n")[:4] == ["a", "b", "c", "d"]
        sprite_bytes = tb.get("/data/plugin/projector/sprite_image", run=".", name="emb/x:00002")
        from io import BytesIO

        sprite = np.asarray(Image.open(BytesIO(sprite_bytes)))
        assert sprite.shape == (4, 10, 3)  # 2 x 2 tiles of 5 x 2
        assert sprite[2:, :5].min() == 255 and sprite[:2].max() == 0
