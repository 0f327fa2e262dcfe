"""A small training run logged with tallyboard: open it with ``tensorboard --logdir runs``.

A two-layer NumPy network learns to separate two interleaved spirals. The run uses all three
faces: torch.monitor-style Stats for step timing, the SummaryWriter face for scalars, histograms,
images, text and hyper-parameters, and the MindSpore SummaryRecord face (MindSpore summary files
in ``<log-dir>/mindspore``, with the same values as TensorBoard files beside them; turn it off with
``--no-mindspore``).
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

import numpy as np
import tallyboard
from tallyboard import Aggregation, Stat, SummaryWriter, TensorboardEventHandler


def spirals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals: points (n, 2) and labels (n,)."""
    t = np.sqrt(rng.uniform(0, 1, n // 2)) * 3 * np.pi
    a = np.stack([t * np.cos(t), t * np.sin(t)], axis=1)
    x = np.concatenate([a, -a]) / 10 + rng.normal(0, 0.05, (n, 2))
    y = np.concatenate([np.zeros(n // 2), np.ones(n // 2)])
    return x.astype(np.float32), y.astype(np.float32)


def forward(params: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(x @ params["w1"] + params["b1"])
    p = 1 / (1 + np.exp(-(h @ params["w2"] + params["b2"])))
    return h, p[:, 0]


def decision_image(params: dict[str, np.ndarray], size: int = 64) -> np.ndarray:
    """The network's prediction over the plane as a CHW float image in [0, 1]."""
    g = np.linspace(-1.2, 1.2, size, dtype=np.float32)
    xx, yy = np.meshgrid(g, -g)
    _, p = forward(params, np.stack([xx.ravel(), yy.ravel()], axis=1))
    p = p.reshape(size, size)
    return np.stack([p, 0.2 * np.ones_like(p), 1 - p])


def train(log_dir: str, steps: int, hidden: int, lr: float, with_mindspore: bool) -> None:
    rng = np.random.default_rng(0)
    x, y = spirals(2000, rng)
    xv, yv = spirals(500, rng)
    params = {
        "w1": rng.normal(0, 1, (2, hidden)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "w2": rng.normal(0, 1 / np.sqrt(hidden), (hidden, 1)).astype(np.float32),
        "b2": np.zeros(1, np.float32),
    }
    writer = SummaryWriter(log_dir)
    handle = tallyboard.register_event_handler(TensorboardEventHandler(writer))
    # 20 ms windows: enough points for a chart even when the run takes a second (with 2 points
    # TensorBoard's "ignore outliers" y range keeps neither and the line falls off the chart)
    step_time = Stat(
        "step_time_ms", [Aggregation.MEAN, Aggregation.MAX], timedelta(milliseconds=20)
    )
    record = None
    if with_mindspore:
        record = tallyboard.SummaryRecord(os.path.join(log_dir, "mindspore"), tensorboard=True)
    writer.add_text("about", f"Two spirals, MLP with **{hidden}** hidden units, SGD lr={lr}.", 0)
    for step in range(steps):
        t0 = time.perf_counter()
        h, p = forward(params, x)
        loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
        d = (p - y)[:, None] / len(x)
        grads = {"w2": h.T @ d, "b2": d.sum(0)}
        dh = (d @ params["w2"].T) * (1 - h**2)
        grads.update({"w1": x.T @ dh, "b1": dh.sum(0)})
        for k in params:
            params[k] -= lr * grads[k]
        step_time.add((time.perf_counter() - t0) * 1000)

        writer.add_scalar("loss/train", loss, step)
        if step % 10 == 0:
            _, pv = forward(params, xv)
            val_acc = float(np.mean((pv > 0.5) == yv))
            train_acc = float(np.mean((p > 0.5) == y))
            writer.add_scalars("accuracy", {"train": train_acc, "val": val_acc}, step)
            if record is not None:
                record.add_value("scalar", "loss", np.array(loss, np.float32))
                record.add_value("scalar", "val_accuracy", np.array(val_acc, np.float32))
                if step % 50 == 0:
                    record.add_value("histogram", "w1", params["w1"])
                record.record(step)
        if step % 50 == 0:
            for k, v in params.items():
                writer.add_histogram(f"params/{k}", v, step)
            writer.add_image("decision", decision_image(params), step)
    _, pv = forward(params, xv)
    final_acc = float(np.mean((pv > 0.5) == yv))
    writer.add_hparams(
        {"hidden": hidden, "lr": lr}, {"hparam/val_accuracy": final_acc}, run_name="hparams"
    )
    step_time.close()
    tallyboard.unregister_event_handler(handle)
    writer.close()
    if record is not None:
        record.close()
    print(f"final validation accuracy {final_acc:.3f}; logs in {log_dir}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--log-dir", default=os.path.join("runs", time.strftime("demo-%Y%m%d-%H%M%S"))
    )
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument(
        "--mindspore",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also write MindSpore summary files (default: yes)",
    )
    args = parser.parse_args(argv)
    train(args.log_dir, args.steps, args.hidden, args.lr, args.mindspore)


if __name__ == "__main__":
    main()
