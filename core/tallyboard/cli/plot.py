"""``tallyboard plot``: one scalar tag over runs as a PNG, with TensorBoard's smoothing."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from tallyboard.cli.common import CliError, iter_file_batches, refuse_overwriting_input, run_reader
from tallyboard.extras import require


def smooth(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's debiased exponential moving average (``weight`` in [0, 1), 0 is no smoothing).

    ``last = last * w + (1 - w) * v``, divided by ``1 - w ** n`` after ``n`` finite values so the
    start is not pulled toward zero; non-finite values pass through unchanged.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"weight must be in [0, 1), got {weight!r}")
    last, n, out = 0.0, 0, []
    for v in values:
        if v != v or v in (float("inf"), float("-inf")):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight**n) if weight else last)
    return out


def cmd_plot(
    logdir: str,
    tag: str,
    out: str,
    weight: float,
    band: bool,
    runs: Sequence[str] | None,
    force: bool,
    formats: Sequence[str] | None = None,
) -> int:
    import numpy as np

    require("matplotlib", "figures", "tallyboard plot")
    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    if os.path.lexists(out):
        probe = run_reader(logdir, formats)
        refuse_overwriting_input(out, probe, probe.discover())
    series: dict[str, dict[int, float]] = {}
    seen: set[str] = set()
    for run, b in iter_file_batches(logdir, formats, runs):
        tags, steps, _, values = b.scalars()
        seen.update(tags.tolist())
        for t, step, v in zip(tags.tolist(), steps.tolist(), values.tolist()):
            if t == tag:
                series.setdefault(run, {})[int(step)] = float(v)
    if not series:
        have = ", ".join(sorted(seen)) or "none"
        raise CliError(f"no scalar tag {tag!r} in the selected runs; tags there: {have}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    if band:
        steps = sorted(set().union(*(set(s) for s in series.values())))
        grid = np.full((len(series), len(steps)), np.nan)
        col = {s: i for i, s in enumerate(steps)}
        for r, s in enumerate(series.values()):
            for st, v in s.items():
                grid[r, col[st]] = v
        grid = np.array([smooth(list(row), weight) for row in grid])
        with np.errstate(all="ignore"):
            lo, hi = np.nanmin(grid, axis=0), np.nanmax(grid, axis=0)
            mean = np.nanmean(grid, axis=0)
        ax.fill_between(steps, lo, hi, alpha=0.3, label=f"min..max over {len(series)} runs")
        ax.plot(steps, mean, label="mean")
    else:
        for run in sorted(series):
            pts = sorted(series[run].items())
            ax.plot([p[0] for p in pts], smooth([p[1] for p in pts], weight), label=run)
    ax.set_xlabel("step")
    ax.set_ylabel(tag)
    ax.set_title(tag + (f" (smoothing {weight})" if weight else ""))
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def smoothing_weight(text: str) -> float:
    import argparse

    try:
        w = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0 <= w < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return w
