"""tallyboard_keras.TensorBoard against what Keras' own callback writes on TensorFlow.

``fixtures/keras_tf`` was written by ``keras.callbacks.TensorBoard`` (Keras 3.15, TensorFlow 2.21)
fitting the model below; here the same fit runs on the torch backend with tallyboard's callback,
and both runs are read back with TensorBoard's own readers and server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_server import tensorboard_server

FIXTURE = Path(__file__).parent / "fixtures" / "keras_tf"

FIT = r"""
import json, sys
import keras
import numpy as np
import tallyboard_keras

log_dir, out = sys.argv[1], sys.argv[2]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(3)
x = rng.normal(size=(32, 3)).astype(np.float32)
y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
xv = rng.normal(size=(8, 3)).astype(np.float32)
yv = (xv @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
model = keras.Sequential([
    keras.Input(shape=(3,)),
    keras.layers.Dense(4, activation="relu", name="hidden"),
    keras.layers.Dense(1, name="out"),
])
model.compile(optimizer="adam", loss="mse", metrics=["mae"])
weights = []


class Record(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        weights.append({w.path: keras.ops.convert_to_numpy(w).tolist() for w in model.weights})


cb = tallyboard_keras.TensorBoard(
    log_dir=log_dir, histogram_freq=1, write_graph=True, write_images=True, update_freq="epoch"
)
model.fit(x, y, validation_data=(xv, yv), epochs=3, batch_size=16, callbacks=[cb, Record()],
          verbose=0, shuffle=False)
json.dump({"weights": weights}, open(out, "w"))
"""


def _accumulator(path: Path) -> Any:
    """TensorBoard's plugin EventAccumulator: legacy values migrated as TensorBoard serves them."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def _by_plugin(acc: Any, plugin: str) -> set[str]:
    return {
        tag
        for tag in acc.Tags()["tensors"]
        if acc.SummaryMetadata(tag).plugin_data.plugin_name == plugin
    }


def _array(acc: Any, tag: str, index: int = 0) -> np.ndarray:
    from tensorboard.util import tensor_util

    return tensor_util.make_ndarray(acc.Tensors(tag)[index].tensor_proto)


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("keras_parity")
    done = subprocess.run(
        [sys.executable, "-c", FIT, str(tmp / "logs"), str(tmp / "weights.json")],
        env={**os.environ, "KERAS_BACKEND": "torch"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "logs", json.loads((tmp / "weights.json").read_text())["weights"]


def test_same_runs_tags_and_steps_as_keras_own_callback(ours: tuple[Path, Any]) -> None:
    logs, _ = ours
    for run in ("train", "validation"):
        theirs, mine = _accumulator(FIXTURE / run), _accumulator(logs / run)
        for plugin in ("scalars", "histograms", "images"):
            assert _by_plugin(mine, plugin) == _by_plugin(theirs, plugin), (run, plugin)
        for tag in _by_plugin(theirs, "scalars") | _by_plugin(theirs, "histograms"):
            assert [e.step for e in mine.Tensors(tag)] == [e.step for e in theirs.Tensors(tag)]


def test_histograms_are_tensorflows_30_equal_width_buckets(ours: tuple[Path, Any]) -> None:
    """Every weight, every epoch: what TensorBoard serves equals TensorBoard's own NumPy
    histogram (the TF algorithm) of the weights, and has the fixture's shape."""
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb
    from tensorboard.util import tensor_util

    logs, weights = ours
    theirs, mine = _accumulator(FIXTURE / "train"), _accumulator(logs / "train")
    for tag in _by_plugin(theirs, "histograms"):
        assert _array(theirs, tag).shape == (30, 3)
        path = tag[: -len("/histogram")]
        for epoch, snapshot in enumerate(weights):
            expected = tensor_util.make_ndarray(
                histogram_pb(tag, np.asarray(snapshot[path], np.float32)).value[0].tensor
            )
            got = _array(mine, tag, epoch)
            if np.ptp(snapshot[path]) > 0:
                np.testing.assert_array_equal(got[:, 2], expected[:, 2])  # counts: exact
                # edges: TensorBoard migrates a legacy histogram's edges to float32
                np.testing.assert_allclose(got[:, :2], expected[:, :2], rtol=1e-6, atol=0)
            else:  # one value (out/bias, 1 weight): all of it in one [v, v] bucket
                assert got[:, 2].sum() == expected[:, 2].sum() == 1
                assert set(got[:, :2].ravel()) == set(expected[:, :2].ravel())


def test_weight_images_as_keras_draws_them(ours: tuple[Path, Any]) -> None:
    """A kernel (3, 4) is 3 high and 4 wide, a bias (4,) one column 4 high, a kernel (4, 1)
    squeezed to a column too, and a bias of shape (1,) no image at all: as in the fixture."""
    from io import BytesIO

    from PIL import Image

    logs, _ = ours

    def sizes(acc: Any) -> dict[str, tuple[int, int]]:
        out = {}
        for tag in _by_plugin(acc, "images"):
            data = _array(acc, tag)
            width, height = int(data[0]), int(data[1])
            assert Image.open(BytesIO(data[2])).size == (width, height)
            out[tag] = (width, height)
        return out

    theirs = sizes(_accumulator(FIXTURE / "train"))
    assert theirs == {
        "sequential/hidden/kernel/image": (4, 3),
        "sequential/hidden/bias/image": (1, 4),
        "sequential/out/kernel/image": (1, 4),
    }
    assert sizes(_accumulator(logs / "train")) == theirs


def test_graphs_tab_opens_on_a_drawn_graph_and_keeps_keras_conceptual_graph(
    ours: tuple[Path, Any],
) -> None:
    """TensorBoard's GRAPHS tab opens a run on its op graph (the "Default" tag, present when the
    run has a GraphDef): the layers drawn, where a model config alone gives "Malformed GraphDef"
    (as Keras' own run does). The conceptual graph (tag ``keras``) stays as Keras writes it."""
    logs, _ = ours
    with tensorboard_server(logs) as tb:
        deadline = time.monotonic() + 30
        while not (info := tb.get_json("/data/plugin/graphs/info").get("train")):
            assert time.monotonic() < deadline, "TensorBoard lists no graph for run train"
            time.sleep(0.3)
        op_graph = tb.get("/data/plugin/graphs/graph", run="train").decode()
        conceptual = tb.get(
            "/data/plugin/graphs/graph", run="train", tag="keras", conceptual="true"
        )
    assert info["run_graph"] is True
    assert info["tags"]["keras"]["conceptual_graph"] is True
    nodes = re.findall(r'name: "([^"]+)"\s+op: "([^"]+)"', op_graph)
    assert nodes == [
        ("sequential/input_layer", "InputLayer"),
        ("sequential/hidden", "Dense"),
        ("sequential/out", "Dense"),
    ]
    assert re.findall(r'input: "([^"]+)"', op_graph) == [
        "sequential/input_layer",
        "sequential/hidden",
    ]
    assert [n.split("/")[-1] for n in re.findall(r'name: "([^"]+)"', conceptual.decode())] == [
        "input_layer",
        "hidden",
        "out",
    ]
    with tensorboard_server(FIXTURE) as tb:  # Keras' own: no op graph to open on
        deadline = time.monotonic() + 30
        while not (theirs := tb.get_json("/data/plugin/graphs/info").get("train")):
            assert time.monotonic() < deadline
            time.sleep(0.3)
    assert theirs["run_graph"] is False


def test_functional_model_graph_follows_its_wiring() -> None:
    os.environ.setdefault("KERAS_BACKEND", "torch")
    code = r"""
import keras, json
from tallyboard_keras.model_graph import layer_graph
from tallyboard_graph.proto import GraphDef
a = keras.Input((3,), name="a")
b = keras.Input((2,), name="b")
h = keras.layers.Dense(4, name="h")(a)
c = keras.layers.Concatenate(name="cat")([h, b])
model = keras.Model([a, b], keras.layers.Dense(1, name="y")(c), name="net")
graph = GraphDef.FromString(layer_graph(model.to_json()))
print(json.dumps([(n.name, n.op, list(n.input)) for n in graph.node]))
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "KERAS_BACKEND": "torch"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    nodes = {name: (op, inputs) for name, op, inputs in json.loads(done.stdout)}
    assert nodes["net/cat"] == ("Concatenate", ["net/h", "net/b"])
    assert nodes["net/y"] == ("Dense", ["net/cat"])
    assert nodes["net/h"] == ("Dense", ["net/a"])
    assert nodes["net/a"] == ("InputLayer", [])
