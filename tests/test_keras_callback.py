"""tallyboard_keras.TensorBoard on Keras 3's torch backend, read back with EventAccumulator.

Keras picks its backend once, at import, from ``KERAS_BACKEND``; so that no other test (or test
order) can decide it, Keras runs in a child process with ``KERAS_BACKEND=torch``.
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
from conftest import load_run
from tallyboard import SummaryWriter
from tb_server import tensorboard_server

FIT = r"""
import json, os, sys
import keras
import numpy as np
import tallyboard_keras

log_dir, out = sys.argv[1], sys.argv[2]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([
    keras.Input((4,)),
    keras.layers.Dense(8, activation="relu"),
    keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="binary_crossentropy", metrics=["accuracy"])
callback = tallyboard_keras.TensorBoard(
    log_dir, histogram_freq=1, write_images=True, update_freq=2, write_steps_per_second=True
)
history = model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, callbacks=[callback], verbose=0)
weights = {w.path: keras.ops.convert_to_numpy(w).ravel().tolist() for w in model.weights}
with open(out, "w") as f:
    json.dump({
        "config": json.loads(model.to_json()),
        "backend": keras.backend.backend(),
        "tensorflow_imported": "tensorflow" in sys.modules,
        "history": history.history,
        "weights": weights,
    }, f)
"""

BAD = r"""
import tallyboard_keras

cases = [
    ({"update_freq": 0}, ValueError, "update_freq"),
    ({"update_freq": "weekly"}, TypeError, "update_freq"),
    ({"histogram_freq": -1}, ValueError, "histogram_freq"),
    ({"histogram_freq": 1.5}, TypeError, "histogram_freq"),
    ({"log_dir": 3}, TypeError, "log_dir"),
    ({"sinks": ["no-such-sink"]}, ValueError, "no-such-sink"),
    ({"sinks": "tfevents"}, TypeError, "sinks"),
]
for kwargs, error, word in cases:
    try:
        tallyboard_keras.TensorBoard(**kwargs)
    except error as exc:
        assert word in str(exc), (kwargs, exc)
    else:
        raise AssertionError(f"{kwargs} was accepted")
print("all refused")
"""


def _keras(code: str, *args: str, cwd: Path) -> str:
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A tiny model fit for 3 epochs with the callback: the log dir and what Keras reported."""
    tmp_path = tmp_path_factory.mktemp("keras")
    out = tmp_path / "result.json"
    _keras(FIT, "logs", str(out), cwd=tmp_path)
    return tmp_path, json.loads(out.read_text())


def test_fit_writes_keras_train_and_validation_runs_without_tensorflow(
    fitted: tuple[Path, dict[str, Any]],
) -> None:
    tmp_path, result = fitted
    assert result["backend"] == "torch"
    assert result["tensorflow_imported"] is False
    history = result["history"]
    assert sorted(os.listdir(tmp_path / "logs")) == ["train", "validation"]

    train, val = load_run(tmp_path / "logs" / "train"), load_run(tmp_path / "logs" / "validation")

    def curve(acc: object, tag: str) -> tuple[list[int], list[float]]:
        events = acc.Scalars(tag)  # type: ignore[attr-defined]
        return [e.step for e in events], [e.value for e in events]

    for name in ("loss", "accuracy"):
        steps, values = curve(train, f"epoch_{name}")
        assert steps == [0, 1, 2]
        np.testing.assert_allclose(values, history[name], rtol=1e-6)
        steps, values = curve(val, f"epoch_{name}")
        assert steps == [0, 1, 2]
        np.testing.assert_allclose(values, history[f"val_{name}"], rtol=1e-6)
        # 48 training samples in batches of 16: 3 batches an epoch, 9 in all, every 2nd logged
        assert curve(train, f"batch_{name}")[0] == [2, 4, 6, 8]
        steps, values = curve(val, f"evaluation_{name}_vs_iterations")
        assert steps == [3, 6, 9]
        np.testing.assert_allclose(values, history[f"val_{name}"], rtol=1e-6)
    np.testing.assert_allclose(curve(train, "epoch_learning_rate")[1], [0.05] * 3, rtol=1e-6)
    assert curve(train, "epoch_steps_per_second")[0] == [0, 1, 2]
    assert all(v > 0 for v in curve(train, "batch_steps_per_second")[1])
    assert not any(t.startswith("batch_") for t in val.Tags()["scalars"])

    histograms = train.Tags()["histograms"]
    assert sorted(histograms) == sorted(f"{path}/histogram" for path in result["weights"])
    for path, values in result["weights"].items():
        events = train.Histograms(f"{path}/histogram")
        assert [e.step for e in events] == [0, 1, 2]
        last = events[-1].histogram_value
        assert last.num == len(values)  # the weights after the last epoch
        assert last.min == pytest.approx(min(values)) and last.max == pytest.approx(max(values))
    images = train.Tags()["images"]
    # as Keras: a weight of one value (the last layer's bias) gets no image
    drawn = [path for path, values in result["weights"].items() if len(values) > 1]
    assert sorted(images) == sorted(f"{path}/image" for path in drawn)
    kernel = next(p for p in result["weights"] if p.endswith("dense/kernel"))
    assert [(i.height, i.width) for i in train.Images(f"{kernel}/image")] == [(4, 8)] * 3


def test_write_graph_logs_the_model_config_tensorboard_draws(
    fitted: tuple[Path, dict[str, Any]],
) -> None:
    tmp_path, result = fitted
    [event] = load_run(tmp_path / "logs" / "train").Tensors("keras")
    assert event.step == 0
    [blob] = event.tensor_proto.string_val
    assert json.loads(blob) == result["config"]
    with tensorboard_server(tmp_path / "logs") as tb:
        deadline = time.monotonic() + 30
        while not (info := tb.get_json("/data/plugin/graphs/info").get("train")):
            assert time.monotonic() < deadline, "TensorBoard lists no graph for run train"
            time.sleep(0.3)
        assert info["tags"]["keras"]["conceptual_graph"] is True
        pbtxt = tb.get("/data/plugin/graphs/graph", run="train", tag="keras", conceptual="true")
    names = re.findall(r'name: "([^"]+)"', pbtxt.decode())
    assert [n.split("/")[-1] for n in names] == ["input_layer", "dense", "dense_1"]


def test_keras_model_kind_refuses_what_is_not_a_model_config(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "run") as w:
        with pytest.raises(TypeError, match="Keras model or its JSON config"):
            w.add_keras_model("keras", 42)
        with pytest.raises(ValueError, match="not valid JSON"):
            w.add_keras_model("keras", "{oops")
        with pytest.raises(ValueError, match="JSON object"):
            w.add_keras_model("keras", "[1, 2]")
        w.add_keras_model("keras", '{"class_name": "Sequential", "config": {"layers": []}}', 1)
    [event] = load_run(tmp_path / "run").Tensors("keras")
    assert event.step == 1


def test_bad_callback_arguments_are_refused_by_name(tmp_path: Path) -> None:
    assert _keras(BAD, cwd=tmp_path).strip() == "all refused"
