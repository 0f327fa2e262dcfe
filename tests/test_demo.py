"""The README's main job: the demo training run writes logs TensorBoard can open."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import mindspore_reader
from conftest import load_run

ROOT = Path(__file__).resolve().parents[1]


def test_demo_training_run_writes_a_run_tensorboard_reads(tmp_path):
    log_dir = tmp_path / "demo"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "demo_train.py"),
            "--log-dir",
            str(log_dir),
            "--steps",
            "120",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    acc = load_run(log_dir)
    tags = acc.Tags()
    assert len(acc.Scalars("loss/train")) == 120
    assert acc.Scalars("loss/train")[-1].value < acc.Scalars("loss/train")[0].value
    assert {"params/w1", "params/w2"} <= set(tags["histograms"])
    assert "decision" in tags["images"]
    assert "step_time_ms.mean" in tags["scalars"]
    assert len(load_run(log_dir / "accuracy_val").Scalars("accuracy")) == 12


def test_demo_default_run_writes_all_three_faces(tmp_path):
    """Without options: SummaryWriter scalars, Stat events and MindSpore summary files."""
    log_dir = tmp_path / "demo"
    cmd = [sys.executable, str(ROOT / "examples" / "demo_train.py"), "--log-dir", str(log_dir)]
    proc = subprocess.run(cmd + ["--steps", "60"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    tags = load_run(log_dir).Tags()
    assert "loss/train" in tags["scalars"]  # SummaryWriter
    assert "step_time_ms.mean" in tags["scalars"]  # Stat through TensorboardEventHandler
    [summary] = (log_dir / "mindspore").glob("events.out.events.summary.*_MS")
    got = mindspore_reader.values(summary)
    assert [(s, t) for s, t, _, _ in got if t == "loss"] == [(s, "loss") for s in range(0, 60, 10)]
    assert [(s, k) for s, t, k, _ in got if t == "w1"] == [
        (0, "histogram"),
        (50, "histogram"),
    ]
    assert "loss" in load_run(log_dir / "mindspore").Tags()["scalars"]  # tensorboard=True
    assert _tensorboard_runs(tmp_path) == _readme_demo_runs()


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
    cmd = [sys.executable, str(ROOT / "examples" / "demo_train.py"), "--log-dir", str(log_dir)]
    proc = subprocess.run(
        cmd + ["--steps", "20", "--no-mindspore"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert not (log_dir / "mindspore").exists()
    assert "loss/train" in load_run(log_dir).Tags()["scalars"]
