"""A small training run logged with tallyboard: open it with ``tensorboard --logdir runs``.

A NumPy network (2 inputs, 32 tanh units, 1 sigmoid output, trained with Adam on the full batch)
learns to separate two interleaved spirals, and reaches about 99% validation accuracy in its
default 600 steps (about a second of training). The run uses all three faces:

- the SummaryWriter face: the training loss (``loss/train``), train and validation accuracy in one
  ``add_scalars`` chart (``accuracy``), weight histograms (``params/w1``, ...), the
  ``predictions/decision`` image (what the network predicts over the plane, with the validation
  points drawn on it: the two spirals appear as it learns) and the hyper-parameters with the final
  validation accuracy (``accuracy/final_val``; the HPARAMS tab);
- the torch.monitor face: a Stat of each step's time in milliseconds, aggregated over 20 ms
  windows and written by ``TensorboardEventHandler`` at the training step each window ended, so
  its charts (``time/step_ms.mean``, ``time/step_ms.max``, one group) share the x axis of the loss;
- the MindSpore SummaryRecord face: MindSpore summary files in ``<log-dir>/mindspore``, with the
  same values as TensorBoard files beside them (turn it off with ``--no-mindspore``), under the
  writer's tags (``loss/train``, ``accuracy``, ``params/w1``) so each shares the writer's chart.

TensorBoard sorts the groups of charts by name and opens the first two: ``accuracy`` and ``loss``.

It prints one line: the final validation accuracy and where the logs are.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

import numpy as np
import tallyboard
from tallyboard import Aggregation, Stat, SummaryWriter, TensorboardEventHandler

EXTENT = 1.2  # the decision image covers [-EXTENT, EXTENT] on both axes


def spirals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals (1.5 turns each, radius up to ~0.94): points (n, 2), labels (n,)."""
    t = np.sqrt(rng.uniform(0, 1, n // 2)) * 3 * np.pi
    a = np.stack([t * np.cos(t), t * np.sin(t)], axis=1)
    x = np.concatenate([a, -a]) / 10 + rng.normal(0, 0.05, (n, 2))
    y = np.concatenate([np.zeros(n // 2), np.ones(n // 2)])
    return x.astype(np.float32), y.astype(np.float32)


def forward(params: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations (n, hidden) and the probability of class 1 (n,)."""
    h = np.tanh(x @ params["w1"] + params["b1"])
    p = 1 / (1 + np.exp(-(h @ params["w2"] + params["b2"])))
    return h, p[:, 0]


def pixel_of(points: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each point (n, 2) in a ``size`` x ``size`` decision image."""
    scale = (size - 1) / (2 * EXTENT)
    col = np.rint((points[:, 0] + EXTENT) * scale).astype(int)
    row = np.rint((EXTENT - points[:, 1]) * scale).astype(int)
    return row.clip(0, size - 1), col.clip(0, size - 1)


def decision_image(
    params: dict[str, np.ndarray], points: np.ndarray, labels: np.ndarray, size: int = 160
) -> np.ndarray:
    """What the network predicts over the plane, as a CHW float image in [0, 1].

    Orange where it says class 0, blue where it says class 1 (pale where it is unsure), and each
    of ``points`` as a dark dot of its true class's colour: once the network has learnt, the dots
    lie on the two spiral-shaped regions of their own colour.
    """
    g = np.linspace(-EXTENT, EXTENT, size, dtype=np.float32)
    xx, yy = np.meshgrid(g, -g)  # row 0 is the top of the plane (y = EXTENT)
    _, p = forward(params, np.stack([xx.ravel(), yy.ravel()], axis=1))
    p = p.reshape(size, size, 1)
    orange, blue = np.array([1.0, 0.55, 0.1]), np.array([0.15, 0.4, 1.0])
    sure = np.abs(2 * p - 1)  # 0 on the boundary, 1 where the network is certain
    img = sure * np.where(p > 0.5, blue, orange) + (1 - sure)  # white where it is unsure
    row, col = pixel_of(points, size)
    img[row, col] = np.where(labels[:, None] > 0.5, blue * 0.4, orange * 0.35)
    return np.clip(img, 0, 1).transpose(2, 0, 1).astype(np.float32)


def train(log_dir: str, steps: int, hidden: int, lr: float, with_mindspore: bool) -> float:
    """Train, log every face, and return the final validation accuracy."""
    rng = np.random.default_rng(0)
    x, y = spirals(2000, rng)
    xv, yv = spirals(500, rng)
    params = {
        "w1": rng.normal(0, 1, (2, hidden)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "w2": rng.normal(0, 1 / np.sqrt(hidden), (hidden, 1)).astype(np.float32),
        "b2": np.zeros(1, np.float32),
    }
    # Adam's running means of the gradients and of their squares
    moment1 = {k: np.zeros_like(v) for k, v in params.items()}
    moment2 = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2 = 0.9, 0.999

    writer = SummaryWriter(log_dir)
    step = 0
    # A Stat event is written at the training step its window ended (step=...), so the step-time
    # charts share the loss's x axis; without step= they would be numbered by window (0, 1, 2...).
    handle = tallyboard.register_event_handler(TensorboardEventHandler(writer, step=lambda: step))
    # 20 ms windows: enough points for a chart even when the run takes a second (with 2 points
    # TensorBoard's "ignore outliers" y range keeps neither and the line falls off the chart)
    step_time = Stat(
        "time/step_ms", [Aggregation.MEAN, Aggregation.MAX], timedelta(milliseconds=20)
    )
    record = None
    if with_mindspore:
        record = tallyboard.SummaryRecord(os.path.join(log_dir, "mindspore"), tensorboard=True)
    writer.add_text(
        "about", f"Two spirals, MLP with **{hidden}** tanh units, Adam lr={lr}, full batch.", 0
    )
    for step in range(steps):
        t0 = time.perf_counter()
        h, p = forward(params, x)
        loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
        d = (p - y)[:, None] / len(x)
        grads = {"w2": h.T @ d, "b2": d.sum(0)}
        dh = (d @ params["w2"].T) * (1 - h**2)
        grads.update({"w1": x.T @ dh, "b1": dh.sum(0)})
        for k, g in grads.items():
            moment1[k] = beta1 * moment1[k] + (1 - beta1) * g
            moment2[k] = beta2 * moment2[k] + (1 - beta2) * g**2
            m = moment1[k] / (1 - beta1 ** (step + 1))
            v = moment2[k] / (1 - beta2 ** (step + 1))
            params[k] -= (lr * m / (np.sqrt(v) + 1e-8)).astype(np.float32)
        step_time.add((time.perf_counter() - t0) * 1000)

        writer.add_scalar("loss/train", loss, step)
        if step % 10 == 0:
            _, pv = forward(params, xv)
            val_acc = float(np.mean((pv > 0.5) == yv))
            train_acc = float(np.mean((p > 0.5) == y))
            writer.add_scalars("accuracy", {"train": train_acc, "val": val_acc}, step)
            if record is not None:
                record.add_value("scalar", "loss/train", np.array(loss, np.float32))
                record.add_value("scalar", "accuracy", np.array(val_acc, np.float32))
                if step % 50 == 0:
                    record.add_value("histogram", "params/w1", params["w1"])
                record.record(step)
        if step % 50 == 0 or step == steps - 1:
            for k, val in params.items():
                writer.add_histogram(f"params/{k}", val, step)
            writer.add_image("predictions/decision", decision_image(params, xv, yv), step)
    _, pv = forward(params, xv)
    final_acc = float(np.mean((pv > 0.5) == yv))
    writer.add_hparams(
        {"hidden": hidden, "lr": lr}, {"accuracy/final_val": final_acc}, run_name="hparams"
    )
    step_time.close()
    tallyboard.unregister_event_handler(handle)
    writer.close()
    if record is not None:
        record.close()
    return final_acc


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--log-dir",
        default=os.path.join("runs", time.strftime("demo-%Y%m%d-%H%M%S")),
        help="where to write the run (default: runs/demo-<date>-<time>)",
    )
    parser.add_argument("--steps", type=int, default=600, help="training steps (default: 600)")
    parser.add_argument("--hidden", type=int, default=32, help="hidden units (default: 32)")
    parser.add_argument("--lr", type=float, default=0.03, help="Adam's step size (default: 0.03)")
    parser.add_argument(
        "--mindspore",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also write MindSpore summary files (default: yes)",
    )
    args = parser.parse_args(argv)
    acc = train(args.log_dir, args.steps, args.hidden, args.lr, args.mindspore)
    print(f"final validation accuracy {acc:.3f}; logs in {args.log_dir}")


if __name__ == "__main__":
    main()
