"""The README's main job: the demo training run learns its spirals and writes logs TensorBoard
can open, through all three faces."""

from __future__ import annotations

import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import mindspore_reader
import numpy as np
from conftest import load_run

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_train.py"
ACCURACY_FLOOR = 0.95


def run_demo(log_dir: Path, *options: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--log-dir", str(log_dir), *options],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def demo_module() -> Any:
    spec = importlib.util.spec_from_file_location("demo_train", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_default_run_learns_the_spirals_and_writes_all_three_faces(tmp_path):
    """Without options: at least 95% validation accuracy, the decision image shows the spirals,
    and SummaryWriter scalars, Stat events and MindSpore summary files are written."""
    log_dir = tmp_path / "demo"
    out = run_demo(log_dir)
    m = re.fullmatch(r"final validation accuracy (\d\.\d{3}); logs in (.+)\n", out)
    assert m, out
    printed = float(m.group(1))
    assert printed >= ACCURACY_FLOOR, out
    assert m.group(2) == str(log_dir)
    [metric] = load_run(log_dir / "hparams").Scalars("accuracy/final_val")
    assert round(metric.value, 3) == printed  # the HPARAMS tab shows what it printed

    run = load_run(log_dir)
    tags = run.Tags()
    loss = run.Scalars("loss/train")
    assert [e.step for e in loss] == list(range(600))
    assert loss[-1].value < 0.2 * loss[0].value
    assert {"params/w1", "params/w2"} <= set(tags["histograms"])
    # the Stat's windows are written at the training step they closed at (the loss's x axis),
    # not numbered 0, 1, 2, ... by window
    for tag in ["time/step_ms.mean", "time/step_ms.max"]:
        steps = [e.step for e in run.Scalars(tag)]
        assert len(steps) >= 2 and steps == sorted(steps) and 0 < steps[-1] <= 599, steps
        assert steps[-1] >= 500 and len(set(steps)) >= len(steps) - 1, steps
    [val_run] = [load_run(log_dir / "accuracy_val")]
    assert [e.step for e in val_run.Scalars("accuracy")] == list(range(0, 600, 10))

    [summary] = (log_dir / "mindspore").glob("events.out.events.summary.*_MS")
    got = mindspore_reader.values(summary)
    assert [s for s, t, _, _ in got if t == "loss/train"] == list(range(0, 600, 10))
    assert [(s, k) for s, t, k, _ in got if t == "params/w1"] == [
        (s, "histogram") for s in range(0, 600, 50)
    ]
    # tensorboard=True: the mirror's charts are the writer's (the same tags)
    mirror = load_run(log_dir / "mindspore").Tags()
    assert {"loss/train", "accuracy"} <= set(mirror["scalars"]) and mirror["histograms"] == [
        "params/w1"
    ]
    assert _tensorboard_runs(tmp_path) == _readme_demo_runs()

    # the decision image shows the spirals: its colours classify spiral points it never saw
    from PIL import Image

    images = run.Images("predictions/decision")
    assert [i.step for i in images] == [*range(0, 600, 50), 599]
    pixels = np.asarray(Image.open(io.BytesIO(images[-1].encoded_image_string)).convert("RGB"))
    demo = demo_module()
    points, labels = demo.spirals(2000, np.random.default_rng(12345))
    row, col = demo.pixel_of(points, pixels.shape[0])
    colour = pixels[row, col].astype(int)
    says_blue = colour[:, 2] > colour[:, 0]  # blue: class 1, orange: class 0
    assert np.mean(says_blue == (labels > 0.5)) >= 0.9
    # ... which a straight boundary (the first image, before training) does not
    first = np.asarray(Image.open(io.BytesIO(images[0].encoded_image_string)).convert("RGB"))
    colour = first[row, col].astype(int)
    assert np.mean((colour[:, 2] > colour[:, 0]) == (labels > 0.5)) < 0.75


def _tensorboard_runs(logdir: Path) -> set[str]:
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    return set(mux.Runs())


def _readme_demo_runs() -> set[str]:
    """The runs the README says TensorBoard shows for the demo (its first paragraph about it)."""
    text = (ROOT / "README.md").read_text()
    para = text[text.index("Run the demo training job") :].split("```", 1)[0]
    return set(re.findall(r"`(demo(?:/[\w]+)?)`", para))


def test_demo_no_mindspore_option_writes_no_mindspore_files(tmp_path):
    log_dir = tmp_path / "demo"
    run_demo(log_dir, "--steps", "20", "--no-mindspore")
    assert not (log_dir / "mindspore").exists()
    assert "loss/train" in load_run(log_dir).Tags()["scalars"]
