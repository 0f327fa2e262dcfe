"""A small Flax training run logged through tallyboard_jax, opened in headless Chromium.

The run is written in a child process (a Flax MLP trained with optax, its jitted step donating
the state): CLU's ``create_default_writer`` for the loss and accuracy of every step and the
params' histograms, Flax's ``SummaryWriter`` for an image batch. One TensorBoard and one page
serve the tests, which check that SCALARS draws both lines, HISTOGRAMS a chart per param with a
curve per logged step, and IMAGES the batch.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    check,
    goto,
    matching,
    open_page,
    run_check,
    wait_plugins_enabled,
    wait_rendered,
)
from tb_server import tensorboard_server

FLAX_RUN = r"""
import sys
import jax, jax.numpy as jnp, numpy as np, optax
from flax import linen as nn
from tallyboard_jax import metric_writers
from tallyboard_jax.tensorboard import SummaryWriter

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(nn.relu(nn.Dense(16)(x)))

x = jax.random.normal(jax.random.key(0), (64, 4))
y = (x[:, 0] > 0).astype(jnp.int32) + (x[:, 1] > 0).astype(jnp.int32)
model = MLP()
params = model.init(jax.random.key(1), x)
tx = optax.sgd(0.3)
opt = tx.init(params)

@jax.jit
def loss_fn(p):
    logits = model.apply(p, x)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, (jnp.argmax(logits, -1) == y).mean()

def step(p, o):
    (loss, acc), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
    updates, o = tx.update(g, o)
    return optax.apply_updates(p, updates), o, loss, acc

step = jax.jit(step, donate_argnums=(0, 1))
writer = metric_writers.create_default_writer(sys.argv[1], collection="train")
for i in range(30):
    params, opt, loss, acc = step(params, opt)
    writer.write_scalars(i, {"loss": loss, "accuracy": acc})
    if i % 10 == 9:
        writer.write_histograms(i, {"params": params["params"]})
writer.close()
images = SummaryWriter(sys.argv[1] + "/samples")
images.image("inputs", jnp.tile(jnp.linspace(0, 1, 16)[None, None, :, None], (2, 16, 1, 1)), 0)
images.close()
"""

HIST_TAGS = ["params/Dense_0/kernel", "params/Dense_1/bias"]


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    logdir = tmp_path_factory.mktemp("flax")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FLAX_RUN), str(logdir / "flax")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with tensorboard_server(logdir) as server:
        wait_plugins_enabled(server, ["scalars", "histograms", "images"])
        yield server


@pytest.fixture(scope="module")
def page(tb: Any) -> Iterator[Any]:
    with open_page() as pg:
        yield pg


def test_scalars_of_every_step_are_drawn(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, tb.base, "scalars&tagFilter=^loss$|^accuracy$")
        dash = page.locator("tf-scalar-dashboard")
        lines = dash.locator("tf-scalar-card vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(lines, dash, "scalars")
        cards = matching(dash).locator("tf-scalar-card")
        check(cards.count() == 2, f"scalars: {cards.count()} cards, expected loss and accuracy")

    run_check(page, "flax_scalars", tmp_path, body)


def test_param_histograms_have_a_curve_per_logged_step(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "histograms&tagFilter=" + "|".join(f"^{t}$" for t in HIST_TAGS))
        dash = page.locator("tf-histogram-dashboard")
        charts = matching(dash).locator("vz-histogram-timeseries")
        expect(charts).to_have_count(len(HIST_TAGS))
        for i in range(len(HIST_TAGS)):  # steps 9, 19, 29
            expect(charts.nth(i).locator("g.histogram path.outline")).to_have_count(3)

    run_check(page, "flax_histograms", tmp_path, body)


def test_the_image_batch_is_shown(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, tb.base, "images&tagFilter=inputs")
        dash = page.locator("tf-image-dashboard")
        imgs = matching(dash).locator("tf-image-loader img")
        imgs.first.wait_for()
        page.wait_for_function(
            "i => i.complete && i.naturalWidth === 16", arg=imgs.first.element_handle()
        )
        check(imgs.count() == 2, f"images: {imgs.count()} shown, expected inputs/image/0 and 1")

    run_check(page, "flax_images", tmp_path, body)
