"""The README's main job: the demo training run writes logs TensorBoard can open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
