"""Every TensorBoard dashboard, opened in headless Chromium over runs written by tallyboard.

The HTTP API can say "the data is there" while the page draws nothing or an error, so each test
opens one dashboard in a real browser (Debian's ``chromium`` driven by Playwright), waits until it
has drawn the data, asserts the expected runs, tags or cards are on the page and that no error text
is. Runs: every kind written by the SummaryWriter face, the demo (examples/demo_train.py), the
MindSpore face converted with ``tallyboard convert``, and the Lightning, Hugging Face and Keras
integrations. One TensorBoard and one page serve every test (one load of TensorBoard's app); a
failing test saves a screenshot under ``$TALLYBOARD_BROWSER_SHOTS`` (or pytest's tmp dir) and names
it in the message. Run alone with ``python -m pytest tests/test_browser_dashboards.py``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_support import (
    DashboardError,
    assert_no_error_text,
    check,
    goto,
    matching,
    open_page,
    path_points,
    run_check,
    wait_colours,
    wait_plugins_enabled,
    wait_rendered,
)
from tb_server import tensorboard_server

ROOT = Path(__file__).resolve().parents[1]
KIND_RUNS = ["kinds/run_a", "kinds/run_b"]
HP_TRIALS = ["kinds/hp/lr0.1_b16", "kinds/hp/lr0.01_b32"]
PLUGINS = [
    "timeseries",
    "scalars",
    "custom_scalars",
    "images",
    "audio",
    "graphs",
    "distributions",
    "histograms",
    "text",
    "pr_curves",
    "hparams",
    "mesh",
    "projector",
]

# The integrations run as child processes, side by side while the kinds are written: Keras picks
# its backend at import (KERAS_BACKEND=torch), and three imports at once save wall time.
KERAS = r"""
import sys
import keras
import numpy as np
import tallyboard_keras

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([
    keras.Input((4,)),
    keras.layers.Dense(8, activation="relu", name="hidden"),
    keras.layers.Dense(1, activation="sigmoid", name="out"),
])
model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
callback = tallyboard_keras.TensorBoard(sys.argv[1], histogram_freq=1)
model.fit(x, y, batch_size=8, epochs=2, validation_split=0.25, callbacks=[callback], verbose=0)
"""

HF = r"""
import sys, torch
from tallyboard_transformers import TallyboardCallback
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

class Tokens(torch.utils.data.Dataset):
    def __init__(self, n):
        self.ids = torch.randint(0, 64, (n, 8), generator=torch.Generator().manual_seed(0))
    def __len__(self):
        return len(self.ids)
    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}

torch.manual_seed(0)
args = TrainingArguments(
    output_dir=sys.argv[2], max_steps=4, per_device_train_batch_size=4,
    per_device_eval_batch_size=4, learning_rate=1e-3, logging_steps=1, eval_strategy="steps",
    eval_steps=2, save_strategy="no", report_to=[], disable_tqdm=True, use_cpu=True,
)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
Trainer(model=model, args=args, train_dataset=Tokens(16), eval_dataset=Tokens(4),
        callbacks=[TallyboardCallback(sys.argv[1])]).train()
"""

LIGHTNING = r"""
import sys, warnings, torch
import lightning.pytorch as pl
from tallyboard_lightning import TallyboardLogger
from torch.utils.data import DataLoader, TensorDataset

class Tiny(pl.LightningModule):
    def __init__(self, lr=0.05, hidden=8):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, 1))
        self.example_input_array = torch.zeros(2, 4)
    def forward(self, x):
        return self.net(x)
    def training_step(self, batch, _):
        loss = torch.nn.functional.mse_loss(self(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

warnings.filterwarnings("ignore")
torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
trainer = pl.Trainer(logger=TallyboardLogger(sys.argv[1], name="", version="tiny", log_graph=True),
                     max_steps=6, log_every_n_steps=1, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
trainer.fit(Tiny(), data)
"""

# MindSpore's Model.train with tallyboard's SummaryCollector, viewed live in TensorBoard
# (tensorboard=True). Rows are NumPy arrays: MindSpore 2.10's GeneratorDataset fails on NumPy 2
# for anything it would have to copy.
MINDSPORE = r"""
import sys
import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn, ops
from tallyboard import SummaryCollector

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 3, pad_mode="valid", has_bias=True)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2 * 6 * 6, 4)
        self.histogram = ops.HistogramSummary()
    def construct(self, x):
        y = self.fc(self.flatten(self.conv(x)))
        self.histogram("logits", y)
        return y

def rows():
    rng = np.random.default_rng(0)
    for i in range(16):
        yield rng.random((3, 8, 8), dtype=np.float32), np.array(i % 4, np.int32)

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_seed(0)
net = Net()
model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                       nn.Momentum(net.trainable_params(), 0.01, 0.9))
collector = SummaryCollector(sys.argv[1], collect_freq=1, tensorboard=True,
                             collect_specified_data={"collect_landscape": None})
data = ds.GeneratorDataset(rows, ["image", "label"], shuffle=False).batch(4)
model.train(3, data, callbacks=[collector], dataset_sink_mode=False)
"""


def _start(script: str, *args: str, file: Path | None = None) -> subprocess.Popen[bytes]:
    """Run ``script`` in a child (from ``file`` when given: MindSpore's GRAPH_MODE compiles a
    Cell from its source file, and refuses ``python -c``)."""
    env = {
        **os.environ,
        "KERAS_BACKEND": "torch",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONWARNINGS": "ignore",
    }
    env.pop("TENSORBOARD_LOGGING_DIR", None)
    if file is not None:
        file.write_text(textwrap.dedent(script))
    return subprocess.Popen(
        [sys.executable, *([str(file)] if file else ["-c", textwrap.dedent(script)]), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _write_kinds(logdir: Path) -> None:
    """Two runs with every kind the SummaryWriter face has, plus two hparams trials."""
    import torch
    from tallyboard import SummaryWriter

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)
            self.act = torch.nn.ReLU()

        def forward(self, x: Any) -> Any:
            return self.act(self.fc(x))

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    for i, run in enumerate(KIND_RUNS):
        with SummaryWriter(logdir / run) as w:
            for step in range(50):
                w.add_scalar("train/loss", math.exp(-step / 10) + 0.1 * i, step)
                w.add_scalar("train/acc", 1 - math.exp(-step / 15) - 0.05 * i, step)
            w.add_scalar("short/two_points", 1.0 + i, 0)  # a tag with 2 points must be drawn
            w.add_scalar("short/two_points", 2.0 + i, 1)
            for step in range(2):
                img = np.zeros((3, 32, 32), dtype=np.float32)
                img[0] = np.linspace(0, 1, 32)[None, :]
                img[1] = np.linspace(0, 1, 32)[:, None]
                img[2] = 0.5 * step + 0.25 * i
                w.add_image("samples/image", img, step)
            for step in range(5):
                w.add_histogram("weights/w", rng.normal(step * 0.5, 1.0, size=1000), step)
            w.add_text("notes/text", f"Hello **tallyboard** from {run}", 0)
            t = np.arange(int(1.5 * 8000)) / 8000
            w.add_audio("sound/sine", 0.5 * np.sin(2 * np.pi * 440 * t)[None, :], 0, 8000)
            labels = rng.integers(0, 2, size=200)
            w.add_pr_curve("pr/curve", labels, np.clip(labels * 0.3 + rng.random(200) * 0.7, 0, 1))
            w.add_mesh(
                "mesh/tetra",
                vertices=np.array([[[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]]),
                colors=np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]]]),
                faces=np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]]),
                global_step=0,
            )
            w.add_graph(Tiny(), torch.zeros(1, 4))
            if i == 0:
                w.add_embedding(
                    rng.normal(size=(60, 8)).astype(np.float32),
                    metadata=[f"pt{k % 3}" for k in range(60)],
                    tag="emb",
                    global_step=0,
                )
                w.add_custom_scalars({"Custom": {"Loss both runs": ["Multiline", ["train/loss"]]}})
    for lr, batch in [(0.1, 16), (0.01, 32)]:
        with SummaryWriter(logdir / "kinds/hp") as w:
            w.add_hparams(
                {"lr": lr, "batch": batch}, {"hparam/score": lr * 10}, run_name=f"lr{lr}_b{batch}"
            )


def _write_mindspore(logdir: Path, tmp: Path) -> None:
    """MindSpore summary files from the SummaryRecord face, converted with ``tallyboard convert``."""
    from tallyboard import SummaryRecord

    src = tmp / "ms-src"
    with SummaryRecord(src / "seed0") as record:
        for step in range(1, 21):
            record.add_value("scalar", "ms_loss", np.float32(1.0 / step))
            record.add_value(
                "histogram", "ms_weights", np.linspace(-1, 1, 50, dtype=np.float32) * step
            )
            record.record(step)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tallyboard",
            "convert",
            str(src),
            str(logdir / "mindspore"),
            "--to",
            "tfevents",
        ],
        check=True,
        capture_output=True,
    )


def _wait(name: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise RuntimeError(
            f"{name} run did not finish in {timeout} s: {out.decode()[-2000:]}"
        ) from None
    if proc.returncode:
        raise RuntimeError(f"{name} run failed ({proc.returncode}): {out.decode()[-3000:]}")


class Logdirs:
    """Every run the suite opens, in two log directories.

    ``faces``: every kind and the demo. ``integrations``: the MindSpore face converted, a MindSpore
    ``Model.train`` with tallyboard's SummaryCollector, Lightning, Hugging Face and Keras. Two, because
    TensorBoard's HPARAMS takes the columns of the first ``add_hparams`` experiment it finds in a log
    directory and leaves every other run's cells blank; Lightning and Hugging Face write no
    experiment (TensorBoard infers it from every run).

    The integrations' training runs start with the faces' and go on in the background while the
    faces' tests run; the first test that needs them waits for them (``integrations_done``).
    """

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.faces = tmp / "faces"
        self.integrations = tmp / "integrations"
        self._pending = {
            "keras": _start(KERAS, str(self.integrations / "keras")),
            "hf": _start(HF, str(self.integrations / "hf"), str(tmp / "hf-out")),
            "lightning": _start(LIGHTNING, str(self.integrations / "lightning")),
            "mindspore": _start(
                MINDSPORE,
                str(self.integrations / "mindspore_train"),
                file=tmp / "mindspore_train.py",
            ),
        }

    def write_faces(self) -> None:
        demo = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "examples/demo_train.py"),
                "--log-dir",
                str(self.faces / "demo"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            _write_kinds(self.faces)
            _wait("demo", demo, 300)
        finally:
            _end(demo)

    def integrations_done(self) -> Path:
        """The integrations' log directory once every run in it has been written."""
        if self._pending:
            try:
                _write_mindspore(self.integrations, self.tmp)
                for name, proc in list(self._pending.items()):
                    _wait(name, proc, 300)
                    del self._pending[name]
            finally:
                self.close()
        return self.integrations

    def close(self) -> None:
        for proc in self._pending.values():
            _end(proc)
        self._pending.clear()


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def logdirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logdirs]:
    dirs = Logdirs(tmp_path_factory.mktemp("browser"))
    try:
        dirs.write_faces()
        yield dirs
    finally:
        dirs.close()


@pytest.fixture(scope="module")
def tb(logdirs: Logdirs) -> Iterator[Any]:
    """TensorBoard over every kind and the demo."""
    with tensorboard_server(logdirs.faces) as server:
        wait_plugins_enabled(server, PLUGINS)
        yield server


@pytest.fixture(scope="module")
def tb_integrations(logdirs: Logdirs, page: Any) -> Iterator[Any]:
    """TensorBoard over the MindSpore, Lightning, Hugging Face and Keras runs."""
    page.goto("about:blank")  # nothing drawing in the browser while the runs are finished
    with tensorboard_server(logdirs.integrations_done()) as server:
        wait_plugins_enabled(server, ["scalars", "graphs", "hparams", "histograms"])
        yield server


@pytest.fixture(scope="module")
def page(logdirs: Logdirs) -> Iterator[Any]:
    with open_page() as pg:
        yield pg


def expect_runs(scope: Any, runs: list[str]) -> None:
    from playwright.sync_api import expect

    for r in runs:
        expect(scope.locator("tf-runs-selector").get_by_text(r, exact=True).first).to_be_visible()


def _visible_vertices(card: Any) -> list[tuple[int, int]]:
    """Per Time Series line of ``card``: (vertices, vertices inside the chart's visible area)."""
    view = card.locator("line-chart .series-view svg").first
    paths = card.locator("line-chart .series-view svg path[d*='L']")
    paths.first.wait_for()
    height = view.evaluate("s => s.clientHeight")
    out = []
    for d in paths.evaluate_all("ps => ps.map(p => p.getAttribute('d'))"):
        pts = path_points(d)
        out.append((len(pts), sum(1 for _, y in pts if 0 <= y <= height)))
    return out


def _timeseries_card(page: Any, tag: str) -> Any:
    """Filter Time Series to ``tag`` and return its card once drawn (cards draw lazily)."""
    dash = page.locator("metrics-dashboard")
    flt = dash.locator("metrics-tag-filter input")
    flt.fill(f"^{tag}$")
    flt.press("Escape")
    card = dash.locator("metrics-card-grid card-view").filter(
        has=page.locator(f'tb-truncated-path[title="{tag}"]')
    )
    card.first.wait_for()
    return card.first


def test_timeseries(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, tb.base, "timeseries")
        dash = page.locator("metrics-dashboard")
        dash.locator("metrics-card-group-toolbar").first.wait_for()
        for tag, points in [
            ("train/loss", [50, 50]),
            ("short/two_points", [2, 2]),
            ("loss/train", [60, 600]),  # the demo's 600 steps; its MindSpore mirror's 60
        ]:
            lines = _visible_vertices(_timeseries_card(page, tag))
            # a line per run, and its smoothed twin
            got = sorted(n for n, _ in lines)
            check(got == sorted(2 * points), f"timeseries {tag}: vertices {lines}, want {points}")
        card = _timeseries_card(page, "samples/image")
        img = card.locator("img").first
        img.wait_for()
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
        _timeseries_card(page, "weights/w").locator("histogram-card svg path").first.wait_for()

    run_check(page, "timeseries", tmp_path, body, height=1200)


def test_timeseries_demo_step_time_is_visible(page: Any, tb: Any, tmp_path: Path) -> None:
    """The demo's ``time/step_ms.max`` draws a line inside its chart, not an empty box.

    With "Ignore outliers in chart scaling" (TensorBoard's default) the y range comes from the
    values between the 5th and 95th percentile: of 2 points neither is, the range falls back to
    [0, 1] and a line of milliseconds runs outside the chart. The demo's Stat windows must give
    a chart enough points for that range to hold a drawn line.
    """

    def body() -> None:
        goto(page, tb.base, "timeseries")
        for tag in ["time/step_ms.max", "time/step_ms.mean"]:
            lines = _visible_vertices(_timeseries_card(page, tag))  # the line, its smoothed twin
            check(all(n >= 10 for n, _ in lines), f"timeseries {tag}: points per line {lines}")
            # outliers may leave the range (that is the setting); the line itself must be drawn
            check(all(i >= 10 for _, i in lines), f"timeseries {tag}: (points, visible) {lines}")

    run_check(page, "timeseries_step_time", tmp_path, body, height=1200)


def _card_groups(page: Any) -> list[tuple[str, int, bool]]:
    """Time Series' groups of cards in page order: name, cards, and whether it is open."""
    groups = page.locator("metrics-dashboard .card-group")
    groups.first.locator(".group-title").wait_for()
    out = []
    for g in groups.all():
        count = g.locator(".group-card-count")  # shown for more than one card
        cards = int("".join(filter(str.isdigit, count.inner_text()))) if count.count() else 1
        opened = g.locator("mat-icon[svgicon='expand_less_24px']").count() > 0
        out.append((g.locator(".group-title").inner_text().strip(), cards, opened))
    return out


def test_timeseries_demo_opens_on_its_loss_and_groups_its_charts(
    page: Any, logdirs: Logdirs, tmp_path: Path
) -> None:
    """TensorBoard over the demo alone opens the groups that sort first (its own rule: the
    first two): ``accuracy`` and ``loss``; the step-time statistics are one group; the MindSpore
    face's mirror draws in the writer's cards (its run in the loss and accuracy charts)."""
    with tensorboard_server(logdirs.faces / "demo") as server:
        wait_plugins_enabled(server, ["timeseries", "scalars"])

        def body() -> None:
            goto(page, server.base, "timeseries")
            groups = _card_groups(page)
            names = [name for name, _, _ in groups]
            check(names[:2] == ["accuracy", "loss"], f"demo groups: {groups}")
            check(all(opened for _, _, opened in groups[:2]), f"demo groups: {groups}")
            check(not any(opened for _, _, opened in groups[2:]), f"demo groups: {groups}")
            check(("time", 2, False) in groups, f"demo groups: {groups}")
            check(not any(n.startswith("step_time") for n in names), f"demo groups: {groups}")
            for tag, runs in [("loss/train", 2), ("accuracy", 3)]:  # the mirror's run is one
                lines = _visible_vertices(_timeseries_card(page, tag))
                check(len(lines) == 2 * runs, f"demo {tag}: {len(lines)} lines, {runs} runs")

        run_check(page, "timeseries_demo_groups", tmp_path, body, height=1200)


SCALAR_TAGS = ["train/loss", "train/acc", "short/two_points", "time/step_ms.max", "loss/train"]


def test_scalars(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "scalars&tagFilter=" + "|".join(f"^{t}$" for t in SCALAR_TAGS))
        dash = page.locator("tf-scalar-dashboard")
        lines = dash.locator("tf-scalar-card vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(lines, dash, "scalars")
        for tag in SCALAR_TAGS:
            card = dash.locator("tf-scalar-card").filter(has=page.get_by_text(tag, exact=True))
            expect(card.locator("vz-line-chart2 svg path.line[d*='L']").first).to_be_attached()
        expect_runs(dash, [*KIND_RUNS, "demo"])

    run_check(page, "scalars", tmp_path, body)


def test_custom_scalars(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, tb.base, "custom_scalars")
        dash = page.locator("tf-custom-scalar-dashboard")
        card = dash.locator("tf-custom-scalar-multi-line-chart-card").filter(
            has_text="Loss both runs"
        )
        lines = card.locator("vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(lines, dash, "custom_scalars")
        check(lines.count() >= 2, f"custom_scalars: {lines.count()} lines, expected both runs")

    run_check(page, "custom_scalars", tmp_path, body)


def test_images(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "images&tagFilter=samples/image")
        dash = page.locator("tf-image-dashboard")
        imgs = matching(dash).locator("tf-image-loader img")
        expect(imgs).to_have_count(len(KIND_RUNS))
        page.wait_for_function(
            "els => els.every(i => i.complete && i.naturalWidth > 0)", arg=imgs.element_handles()
        )
        sizes = imgs.evaluate_all("is => is.map(i => i.naturalWidth + 'x' + i.naturalHeight)")
        check(sizes == ["32x32", "32x32"], f"images: sizes {sizes}")
        expect_runs(dash, KIND_RUNS)

    run_check(page, "images", tmp_path, body)


def test_audio(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "audio")
        dash = page.locator("tf-audio-dashboard")
        audios = dash.locator("tf-audio-loader audio")
        expect(audios).to_have_count(len(KIND_RUNS))
        page.wait_for_function(
            "els => els.every(a => a.readyState >= 1)", arg=audios.element_handles()
        )
        durations = audios.evaluate_all("as => as.map(a => a.duration)")
        check(all(abs(d - 1.5) < 0.01 for d in durations), f"audio: durations {durations}")

    run_check(page, "audio", tmp_path, body)


def _graph_of(page: Any, tb: Any, run: str, node: str) -> list[str]:
    """Open GRAPHS, pick ``run`` in its Run menu as a user does, wait for ``node`` drawn."""
    goto(page, tb.base, "graphs")
    dash = page.locator("tf-graph-dashboard")
    controls = dash.locator("tf-graph-controls")
    controls.locator("paper-dropdown-menu").first.wait_for()
    menu = controls.locator("paper-dropdown-menu").first
    if run not in menu.locator("input").input_value():
        item = controls.locator("paper-item").filter(has_text=run).first
        for _ in range(3):  # a click while the menu is still settling leaves it closed
            menu.click()
            try:
                item.wait_for(state="visible", timeout=10_000)
                break
            except Exception:
                continue
        item.click()
    wait_rendered(dash.locator(f'tf-graph-scene g.node[data-name="{node}"]'), dash, f"graphs {run}")
    names: list[str] = dash.locator("tf-graph-scene g.node[data-name]").evaluate_all(
        "gs => gs.map(g => g.dataset.name)"
    )
    return names


def test_graphs_kinds(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        names = _graph_of(page, tb, "kinds/run_a", "Tiny")
        for n in ["input", "output", "Tiny"]:
            check(n in names, f"graphs: node {n!r} missing, have {names}")
        dash = page.locator("tf-graph-dashboard")
        dash.locator('tf-graph-scene g.node[data-name="Tiny"] .buttoncontainer').dispatch_event(
            "click"
        )
        expect(dash.locator('tf-graph-scene g.node[data-name^="Tiny/"]').first).to_be_visible()

    run_check(page, "graphs_kinds", tmp_path, body)


def test_distributions(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, tb.base, "distributions&tagFilter=weights/w")
        dash = page.locator("tf-distribution-dashboard")
        charts = matching(dash).locator("vz-distribution-chart")
        wait_rendered(charts.locator("path.area[d*='L']"), dash, "distributions")
        check(charts.count() == len(KIND_RUNS), f"distributions: {charts.count()} charts")
        expect_runs(dash, KIND_RUNS)

    run_check(page, "distributions", tmp_path, body)


def test_histograms(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "histograms&tagFilter=weights/w")
        dash = page.locator("tf-histogram-dashboard")
        charts = matching(dash).locator("vz-histogram-timeseries")
        expect(charts).to_have_count(len(KIND_RUNS))
        for i in range(len(KIND_RUNS)):  # one outline per step
            expect(charts.nth(i).locator("g.histogram path.outline")).to_have_count(5)

    run_check(page, "histograms", tmp_path, body)


def test_text(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "text&tagFilter=notes")
        dash = page.locator("tf-text-dashboard")
        strong = matching(dash).locator("tf-text-loader strong", has_text="tallyboard")
        expect(strong).to_have_count(len(KIND_RUNS))
        for r in KIND_RUNS:
            expect(
                matching(dash).locator("tf-text-loader").get_by_text(f"from {r}").first
            ).to_be_visible()

    run_check(page, "text", tmp_path, body)


def test_pr_curves(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "pr_curves")
        dash = page.locator("tf-pr-curve-dashboard")
        card = dash.locator("tf-pr-curve-card").first
        lines = card.locator("vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(lines, dash, "pr_curves")
        check(lines.count() >= len(KIND_RUNS), f"pr_curves: {lines.count()} curves")
        expect(card.get_by_text("pr/curve").first).to_be_visible()

    run_check(page, "pr_curves", tmp_path, body)


def _hparams_row(page: Any, tb: Any, trial: str) -> list[str]:
    """The text of the HPARAMS table row of ``trial`` (vaadin-grid cells in column order)."""
    goto(page, tb.base, "hparams")
    dash = page.locator("tf-hparams-dashboard")
    grid = dash.locator("tf-hparams-table-view vaadin-grid")
    cell = grid.locator("vaadin-grid-cell-content").filter(has_text=trial)
    wait_rendered(cell.first, dash, "hparams")
    texts: list[str] = grid.evaluate(
        r"""(g, trial) => {
          const cells = [...g.querySelectorAll('vaadin-grid-cell-content')];
          const slot = c => c.assignedSlot && c.assignedSlot.parentElement;
          const rowOf = c => { const td = slot(c); return td && td.parentElement; };
          const mine = cells.find(c => c.textContent.trim() === trial);
          if (!mine) return [];
          const row = rowOf(mine);
          return cells.filter(c => rowOf(c) === row).map(c => c.textContent.trim());
        }""",
        trial,
    )
    return texts


def test_hparams_kinds(page: Any, tb: Any, tmp_path: Path) -> None:
    def body() -> None:
        row = _hparams_row(page, tb, HP_TRIALS[0])
        for v in ["16.000", "0.10000", "1.0000"]:
            check(v in row, f"hparams: {v} not in the row of {HP_TRIALS[0]}: {row}")

    run_check(page, "hparams_kinds", tmp_path, body)


def test_projector(page: Any, tb: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, tb.base, "projector")
        proj = page.frame_locator("iframe").frame_locator("iframe")
        expect(
            proj.locator("vz-projector-data-panel").get_by_text("1 tensor found")
        ).to_be_visible()
        expect(proj.locator("vz-projector .dim")).to_have_text("8")
        expect(proj.get_by_text("Total variance described")).to_be_visible()  # PCA done
        wait_colours(
            page, proj.locator("vz-projector canvas[data-engine^='three.js']"), 5, "projector"
        )

    run_check(page, "projector", tmp_path, body)


def test_mesh(page: Any, tb: Any, tmp_path: Path) -> None:
    # Last: three.js keeps animating mesh canvases after their tab is left.
    def body() -> None:
        goto(page, tb.base, "mesh")
        dash = page.locator("mesh-dashboard")
        canvas = dash.locator("tf-mesh-loader canvas[data-engine^='three.js']")
        wait_rendered(canvas, dash, "mesh")
        wait_colours(page, canvas.first, 20, "mesh")

    try:
        run_check(page, "mesh", tmp_path, body)
    finally:  # unload the app: its animation would hold the renderer for the rest of the module
        page.goto("about:blank")


def test_error_text_check_fails_on_visible_error_only(page: Any, tb: Any, tmp_path: Path) -> None:
    """The check every test ends with finds error text inside a shadow root, ignores it hidden."""
    goto(page, tb.base, "graphs")
    page.locator("tf-graph-dashboard").wait_for()
    page.evaluate(
        """hidden => {
          const host = document.createElement('div');
          host.id = 'tallyboard-probe';
          if (hidden) host.style.visibility = 'hidden';
          host.attachShadow({mode: 'open'}).innerHTML =
            '<p>Graph visualization failed. Error: Malformed GraphDef</p>';
          document.body.prepend(host);
        }""",
        True,
    )
    assert_no_error_text(page, "hidden probe")
    page.evaluate("() => document.getElementById('tallyboard-probe').style.visibility = ''")
    try:
        with pytest.raises(DashboardError, match="Malformed GraphDef|Graph visualization failed"):
            assert_no_error_text(page, "visible probe")
    finally:
        page.evaluate("() => document.getElementById('tallyboard-probe').remove()")


# The integrations' TensorBoard: loading its page reloads the app (and stops mesh's animation).


def test_scalars_integrations(page: Any, tb_integrations: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    tags = ["ms_loss", "train_loss", "train/loss", "epoch_loss"]

    def body() -> None:
        goto(page, tb_integrations.base, "scalars&tagFilter=" + "|".join(f"^{t}$" for t in tags))
        dash = page.locator("tf-scalar-dashboard")
        wait_rendered(dash.locator("tf-scalar-card vz-line-chart2 svg path.line"), dash, "scalars")
        for tag in tags:
            card = dash.locator("tf-scalar-card").filter(has=page.get_by_text(tag, exact=True))
            expect(card.locator("vz-line-chart2 svg path.line[d*='L']").first).to_be_attached()
        expect_runs(
            dash, ["mindspore/seed0", "lightning/tiny", "hf", "keras/train", "keras/validation"]
        )

    run_check(page, "scalars_integrations", tmp_path, body)


def test_mindspore_model_train_loss_images_and_histograms(
    page: Any, tb_integrations: Any, tmp_path: Path
) -> None:
    """A MindSpore ``Model.train`` with tallyboard's SummaryCollector (``tensorboard=True``):
    its loss draws a line, its input batches show as 32x8 images (four 8x8 images side by side),
    its weights draw a histogram per collection (12 steps, each epoch's last one collected twice
    as MindSpore collects it: 15) and the net's HistogramSummary one per step (12)."""
    from playwright.sync_api import expect

    run = "mindspore_train"

    def body() -> None:
        goto(page, tb_integrations.base, "scalars&tagFilter=^loss/auto$")
        dash = page.locator("tf-scalar-dashboard")
        card = dash.locator("tf-scalar-card").filter(has=page.get_by_text("loss/auto", exact=True))
        line = card.locator("vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(line.first, dash, "mindspore loss")
        expect_runs(dash, [run])

        goto(page, tb_integrations.base, "images&tagFilter=^input_data/auto$")
        dash = page.locator("tf-image-dashboard")
        imgs = matching(dash).locator("tf-image-loader img")
        expect(imgs).to_have_count(1)
        page.wait_for_function(
            "els => els.every(i => i.complete && i.naturalWidth > 0)", arg=imgs.element_handles()
        )
        sizes = imgs.evaluate_all("is => is.map(i => i.naturalWidth + 'x' + i.naturalHeight)")
        check(sizes == ["32x8"], f"mindspore images: sizes {sizes}")

        outlines = {"conv.weight/auto": 15, "fc.bias/auto": 15, "logits": 12}
        goto(
            page,
            tb_integrations.base,
            "histograms&tagFilter=" + "|".join(f"^{t}$" for t in outlines),
        )
        dash = page.locator("tf-histogram-dashboard")
        charts = matching(dash).locator("vz-histogram-timeseries")
        expect(charts).to_have_count(len(outlines))
        for tag, count in outlines.items():
            chart = matching(dash).locator("tf-histogram-loader").filter(has_text=tag).first
            expect(chart.locator("g.histogram path.outline")).to_have_count(count)

    run_check(page, "mindspore_model_train", tmp_path, body)


def test_graphs_lightning(page: Any, tb_integrations: Any, tmp_path: Path) -> None:
    def body() -> None:
        names = _graph_of(page, tb_integrations, "lightning/tiny", "Tiny")
        check("Tiny" in names, f"graphs lightning: {names}")

    run_check(page, "graphs_lightning", tmp_path, body)


def test_graphs_keras_opens_on_a_drawn_graph(
    page: Any, tb_integrations: Any, tmp_path: Path
) -> None:
    """Picking the Keras run draws its graph: no "Malformed GraphDef" from the op graph first."""

    def body() -> None:
        names = _graph_of(page, tb_integrations, "keras/train", "sequential")
        check("sequential" in names, f"graphs keras: {names}")

    run_check(page, "graphs_keras", tmp_path, body)


def test_hparams_rows_of_hugging_face_and_lightning_have_values(
    page: Any, tb_integrations: Any, tmp_path: Path
) -> None:
    """Both trainers' HPARAMS rows show hyper-parameters and metrics, not blank cells.

    TensorBoard takes the columns of the first experiment summary it finds in a log directory
    for every run, so one trainer writing an experiment used to blank the other's row. (Of the
    inferred columns TensorBoard ticks only the first few, here Hugging Face's: Lightning's
    ``lr`` and ``hidden`` are columns a user ticks; its metric cell is shown.)
    """

    def body() -> None:
        for run, at_least in [("hf", 3), ("lightning/tiny", 1)]:
            row = _hparams_row(page, tb_integrations, run)
            filled = [c for c in row if c and c != run]
            check(len(filled) >= at_least, f"hparams: the {run} row is blank: {row}")

    run_check(page, "hparams_trainers", tmp_path, body)
