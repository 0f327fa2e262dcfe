"""Every dashboard through ``tallyboard board``, in headless Chromium, for every format and on S3.

Two launches of ``tallyboard board``: one over a local log dir holding a run per format (event
files with every kind, a MindSpore summary file, CSV, JSONL, a third-party reader plugin's format;
see ``board_support``), one over the same runs on S3 (moto's server on 127.0.0.1, which
TensorBoard alone cannot read without tensorflow-io). Each dashboard is opened once per launch and
must draw, with no error text, the runs of every format that holds its kind: the counts checked
(lines, vertices, images and their sizes, audio durations, histogram outlines, graph nodes) are
those of the values written. That the data behind each drawing equals TensorBoard's over the
same values as event files is checked route by route in ``test_board_dashboards.py`` (the
frontend is the same code, so equal data draws the same). A last test appends values to a CSV
run while the page is open and sees them drawn after the provider's next reload.

Run alone with ``python -m pytest tests/test_browser_board.py``; a failing check saves a
screenshot under ``$TALLYBOARD_BROWSER_SHOTS`` (or pytest's tmp dir) and names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import browser_support
import pytest
from board_support import (
    board,
    convert_to_events,
    env_with,
    install_tsv_plugin,
    wait_until,
    write_formats,
)
from browser_support import (
    TIMEOUT_MS,
    check,
    goto,
    matching,
    open_page,
    path_points,
    wait_colours,
    wait_plugins_enabled,
    wait_rendered,
)
from tb_server import tensorboard_server

run_check = partial(browser_support.run_check, shot_prefix="board-")

BUCKET = "browser-board"  # moto keeps buckets per process: a name no other test uses
LIVE = "live/run"
#: every scalar tag and the run (format) holding it, with its points
SCALARS = {
    "loss": ("events/all", 30),
    "ms_loss": ("mindspore/seed0", 10),
    "csv_loss": ("csv/run", 20),
    "jsonl_loss": ("jsonl/run", 20),
    "tsv_loss": ("tsv/run", 15),
}
IMAGES = {
    "picture": "events/all",
    "jsonl_picture": "jsonl/run",
    "ms_image": "mindspore/seed0",
}
HISTOGRAMS = {
    "weights": "events/all",
    "jsonl_weights": "jsonl/run",
    "ms_weights": "mindspore/seed0",
}


def _live_lines(path: Path, steps: range) -> None:
    with open(path, "a") as f:
        f.writelines(f"{1.7e9 + s!r},{s},live_loss,0.5\n" for s in steps)  # all in range


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("browser-board")
    env = env_with(install_tsv_plugin(root / "plugins"))
    write_formats(root / "logs")
    live = root / "logs" / LIVE
    live.mkdir(parents=True)
    (live / "scalars.csv").write_text("wall_time,step,tag,value\n")
    _live_lines(live / "scalars.csv", range(5))
    return root / "logs", env


@pytest.fixture(scope="module")
def local(logs: tuple[Path, dict[str, str]]) -> Iterator[Any]:
    with board(str(logs[0]), "--reload", "1", env=logs[1]) as b:
        wait_plugins_enabled(
            b.tb,
            ["scalars", "timeseries", "custom_scalars", "images", "audio", "graphs"]
            + ["distributions", "histograms", "text", "pr_curves", "hparams", "mesh", "projector"],
        )
        yield b


@pytest.fixture(scope="module")
def on_s3(logs: tuple[Path, dict[str, str]]) -> Iterator[Any]:
    """The same runs uploaded to moto's S3 and served from there."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    keys = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    env = {
        **logs[1],
        **keys,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "FSSPEC_S3_ENDPOINT_URL": url,
        "FSSPEC_S3_KEY": "testing",
        "FSSPEC_S3_SECRET": "testing",
    }
    client = boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        **{"aws_access_key_id": "testing", "aws_secret_access_key": "testing"},
    )
    client.create_bucket(Bucket=BUCKET)
    for path in logs[0].rglob("*"):
        if path.is_file() and not path.is_relative_to(logs[0] / "live"):
            client.upload_file(str(path), BUCKET, f"logs/{path.relative_to(logs[0]).as_posix()}")
    try:
        with board(f"s3://{BUCKET}/logs", "--reload", "0", env=env) as b:
            wait_plugins_enabled(b.tb, ["scalars", "images", "histograms", "audio", "text"])
            yield b
    finally:
        server.stop()


@pytest.fixture(scope="module")
def reference(
    logs: tuple[Path, dict[str, str]], page: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, int]:
    """What TensorBoard alone draws on SCALARS for the same values as event files."""
    converted = tmp_path_factory.mktemp("converted")
    convert_to_events(logs[0], converted, logs[1])
    with tensorboard_server(converted) as tb:
        return _scalar_drawing(page, tb.base, list(SCALARS))


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with open_page() as pg:
        yield pg


def _filter(tags: list[str]) -> str:
    return "|".join(f"^{t}$" for t in tags)


def _scalar_vertices(page: Any, dash: Any, tag: str) -> int:
    """Vertices of the (unsmoothed) line of ``tag``'s SCALARS card, once drawn (the card may
    draw again while it is read: read until a line is there)."""
    card = dash.locator("tf-scalar-card").filter(has=page.get_by_text(tag, exact=True)).first
    lines = card.locator("vz-line-chart2 svg path.line")

    def drawn() -> int:
        ds = lines.evaluate_all("ps => ps.map(p => p.getAttribute('d') || '')")
        return max((len(path_points(d)) for d in ds if "L" in d), default=0)

    return int(wait_until(drawn, TIMEOUT_MS / 1000, f"a line drawn for {tag}", every=0.2))


def _scalar_drawing(page: Any, base: str, tags: list[str]) -> dict[str, int]:
    """Vertices drawn per tag on the SCALARS dashboard of the TensorBoard at ``base``, with
    "Ignore outliers in chart scaling" off (with it on, whether a point at the very edge of the
    range is drawn can change from one page load to the next)."""
    page.goto(
        f"{base}/?forceSVG=true#scalars&_smoothingWeight=0&tagFilter={_filter(tags)}",
        wait_until="commit",
    )
    dash = page.locator("tf-scalar-dashboard")
    lines = dash.locator("tf-scalar-card vz-line-chart2 svg path.line[d*='L']")
    wait_rendered(lines, dash, "scalars")
    outliers = dash.locator("paper-checkbox", has_text="Ignore outliers").first
    if outliers.get_attribute("aria-checked") == "true":
        outliers.click()
        wait_until(
            lambda: outliers.get_attribute("aria-checked") == "false", 10, "outliers unticked"
        )

    def settled() -> dict[str, int] | None:  # the same counts twice: the charts have redrawn
        first = {tag: _scalar_vertices(page, dash, tag) for tag in tags}
        page.wait_for_timeout(300)
        return first if first == {tag: _scalar_vertices(page, dash, tag) for tag in tags} else None

    return dict(wait_until(settled, TIMEOUT_MS / 1000, "scalar charts settled"))


def _check_scalars(page: Any, b: Any, reference: dict[str, int]) -> None:
    drawn = _scalar_drawing(page, b.tb.base, list(SCALARS))
    check(drawn == reference, f"scalars: {drawn} vertices, over event files {reference}")
    for tag, (run, points) in SCALARS.items():
        check(drawn[tag] == points, f"scalars {tag} ({run}): {drawn[tag]} vertices of {points}")


def _check_images(page: Any, b: Any, tags: dict[str, str]) -> None:
    from playwright.sync_api import expect

    goto(page, b.tb.base, "images&tagFilter=" + _filter(list(tags)))
    dash = page.locator("tf-image-dashboard")
    imgs = matching(dash).locator("tf-image-loader img")
    expect(imgs).to_have_count(len(tags))
    page.wait_for_function(
        "els => els.every(i => i.complete && i.naturalWidth > 0)", arg=imgs.element_handles()
    )
    sizes = imgs.evaluate_all("is => is.map(i => i.naturalWidth + 'x' + i.naturalHeight)")
    check(sizes == ["24x16"] * len(tags), f"images: sizes {sizes}")


def _check_histograms(page: Any, b: Any, tags: dict[str, str]) -> None:
    from playwright.sync_api import expect

    goto(page, b.tb.base, "histograms&tagFilter=" + _filter(list(tags)))
    dash = page.locator("tf-histogram-dashboard")
    charts = matching(dash).locator("vz-histogram-timeseries")
    expect(charts).to_have_count(len(tags))
    steps = {"weights": 3, "jsonl_weights": 2, "ms_weights": 3}
    for i in range(len(tags)):
        n = charts.nth(i).locator("g.histogram path.outline")
        n.first.wait_for(state="attached")
        check(n.count() in steps.values(), f"histograms: {n.count()} outlines")
    total = sum(charts.nth(i).locator("g.histogram path.outline").count() for i in range(len(tags)))
    check(total == sum(steps[t] for t in tags), f"histograms: {total} outlines in all")


def _check_audio(page: Any, b: Any, durations: list[float]) -> None:
    from playwright.sync_api import expect

    goto(page, b.tb.base, "audio")
    dash = page.locator("tf-audio-dashboard")
    audios = dash.locator("tf-audio-loader audio")
    expect(audios).to_have_count(len(durations))
    page.wait_for_function("els => els.every(a => a.readyState >= 1)", arg=audios.element_handles())
    got = sorted(audios.evaluate_all("as => as.map(a => a.duration)"))
    check(all(abs(a - b) < 0.01 for a, b in zip(got, durations)), f"audio: durations {got}")


def _check_text(page: Any, b: Any) -> None:
    from playwright.sync_api import expect

    goto(page, b.tb.base, "text")
    dash = page.locator("tf-text-dashboard")
    expect(dash.locator("tf-text-loader strong", has_text="board").first).to_be_visible()
    expect(dash.locator("tf-text-loader em", has_text="jsonl").first).to_be_visible()


# ------------------------------------------------------------------ local log dir, every format


def test_scalars_of_every_format_as_over_event_files(
    page: Any, local: Any, reference: dict[str, int], tmp_path: Path
) -> None:
    run_check(page, "scalars", tmp_path, lambda: _check_scalars(page, local, reference))


def test_timeseries_cards(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "timeseries")
        dash = page.locator("metrics-dashboard")
        dash.locator("metrics-card-group-toolbar").first.wait_for()
        for tag, what in [
            ("ms_loss", "line-chart svg path"),
            ("picture", "img"),
            ("weights", "histogram-card svg path"),
        ]:
            flt = dash.locator("metrics-tag-filter input")
            flt.fill(f"^{tag}$")
            flt.press("Escape")
            card = dash.locator("metrics-card-grid card-view").filter(
                has=page.locator(f'tb-truncated-path[title="{tag}"]')
            )
            card.first.locator(what).first.wait_for(state="attached")

    run_check(page, "timeseries", tmp_path, body)


def test_custom_scalars(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "custom_scalars")
        dash = page.locator("tf-custom-scalar-dashboard")
        card = dash.locator("tf-custom-scalar-multi-line-chart-card").filter(
            has_text="loss and acc"
        )
        lines = card.locator("vz-line-chart2 svg path.line[d*='L']")
        wait_rendered(lines, dash, "custom_scalars")

    run_check(page, "custom_scalars", tmp_path, body)


def test_images_of_every_format(page: Any, local: Any, tmp_path: Path) -> None:
    run_check(page, "images", tmp_path, lambda: _check_images(page, local, IMAGES))


def test_audio_of_every_format(page: Any, local: Any, tmp_path: Path) -> None:
    run_check(page, "audio", tmp_path, lambda: _check_audio(page, local, [0.5, 1.0]))


def test_histograms_of_every_format(page: Any, local: Any, tmp_path: Path) -> None:
    run_check(page, "histograms", tmp_path, lambda: _check_histograms(page, local, HISTOGRAMS))


def test_distributions_of_every_format(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "distributions&tagFilter=" + _filter(list(HISTOGRAMS)))
        dash = page.locator("tf-distribution-dashboard")
        charts = matching(dash).locator("vz-distribution-chart")
        wait_rendered(charts.locator("path.area[d*='L']"), dash, "distributions")
        check(charts.count() == len(HISTOGRAMS), f"distributions: {charts.count()} charts")

    run_check(page, "distributions", tmp_path, body)


def test_text_of_every_format(page: Any, local: Any, tmp_path: Path) -> None:
    run_check(page, "text", tmp_path, lambda: _check_text(page, local))


def test_pr_curves(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "pr_curves")
        dash = page.locator("tf-pr-curve-dashboard")
        lines = dash.locator("tf-pr-curve-card").first.locator(
            "vz-line-chart2 svg path.line[d*='L']"
        )
        wait_rendered(lines, dash, "pr_curves")

    run_check(page, "pr_curves", tmp_path, body)


def test_hparams(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "hparams")
        dash = page.locator("tf-hparams-dashboard")
        grid = dash.locator("tf-hparams-table-view vaadin-grid")
        wait_rendered(
            grid.locator("vaadin-grid-cell-content").filter(has_text="events/all/trial").first,
            dash,
            "hparams",
        )
        texts = grid.locator("vaadin-grid-cell-content").evaluate_all(
            "cs => cs.map(c => c.textContent.trim())"
        )
        for v in ["sgd", "0.10000", "0.75000"]:
            check(v in texts, f"hparams: {v} not in the table: {texts}")

    run_check(page, "hparams", tmp_path, body)


def test_graphs(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "graphs")
        dash = page.locator("tf-graph-dashboard")
        wait_rendered(dash.locator('tf-graph-scene g.node[data-name="Sequential"]'), dash, "graphs")

    run_check(page, "graphs", tmp_path, body)


def _is_live_data(response: Any) -> bool:
    """The frontend's request for the live tag's points (one POST per tag, its runs in a form)."""
    request = response.request
    return request.url.endswith("/data/plugin/scalars/scalars_multirun") and "live_loss" in (
        request.post_data or ""
    )


#: The state of the live card's data loader: whether it loads (only while it is on screen) and
#: what it holds per series (0 loading, 1 loaded), for a failure message.
_LOADER_STATE = """card => {
    const loader = card.shadowRoot && card.shadowRoot.querySelector('tf-line-chart-data-loader');
    return loader ? JSON.stringify({active: loader.active, loading: loader.dataLoading,
                                    series: [...loader._dataLoadState.entries()]}) : 'no loader';
}"""


def test_values_appended_while_open_appear(
    page: Any, local: Any, logs: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    def body() -> None:
        goto(page, local.tb.base, "scalars&_smoothingWeight=0&tagFilter=^live_loss$")
        dash = page.locator("tf-scalar-dashboard")
        before = _scalar_vertices(page, dash, "live_loss")
        check(before == 5, f"live: {before} points drawn of 5")
        _live_lines(logs[0] / LIVE / "scalars.csv", range(5, 12))

        def served() -> bool:
            points = local.tb.get_json("/data/plugin/scalars/scalars", run=LIVE, tag="live_loss")
            return len(points) == 12

        wait_until(served, 30, "the appended values served")  # the provider's next reload
        reload = page.locator("app-header-reload button").first  # TensorBoard's own button
        card = dash.locator("tf-scalar-card").filter(has=page.get_by_text("live_loss", exact=True))
        tries: list[str] = []  # what each reload got and drew, for the failure message

        def redrawn() -> bool:
            # One reload at a time: click, wait for the frontend to ask for the points and get
            # them, then for the drawing (TensorBoard draws in the next animation frames).
            try:
                with page.expect_response(_is_live_data, timeout=15_000) as answer:
                    reload.click()
                got = (
                    f"{len(answer.value.json().get(LIVE, []))} points received"
                    if answer.value.ok
                    else f"HTTP {answer.value.status} for the points"
                )
            except PlaywrightTimeout:
                got = "no request for the points within 15 s"
            drawn = 0
            for _ in range(10):
                drawn = _scalar_vertices(page, dash, "live_loss")
                if drawn == 12:
                    return True
                page.wait_for_timeout(200)
            tries.append(f"{got}, {drawn} drawn, loader {card.first.evaluate(_LOADER_STATE)}")
            return False

        try:
            wait_until(redrawn, 60, "the 7 new points drawn after a reload")
        except TimeoutError as e:
            raise AssertionError(f"{e}; each reload: {' | '.join(tries)}") from e

    run_check(page, "live", tmp_path, body)


# ------------------------------------------------------------------ the same runs on S3


def test_s3_every_format_draws(
    page: Any, on_s3: Any, reference: dict[str, int], tmp_path: Path
) -> None:
    def body() -> None:
        _check_scalars(page, on_s3, reference)
        _check_images(page, on_s3, IMAGES)
        _check_histograms(page, on_s3, HISTOGRAMS)
        _check_audio(page, on_s3, [0.5, 1.0])
        _check_text(page, on_s3)

    run_check(page, "s3", tmp_path, body)


# Last: the projector and mesh draw with three.js, which keeps animating after their tab is
# left and slows every page loaded after them on a busy machine.


def test_projector_reads_the_local_files(page: Any, local: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    def body() -> None:
        goto(page, local.tb.base, "projector")
        proj = page.frame_locator("iframe").frame_locator("iframe")
        expect(
            proj.locator("vz-projector-data-panel").get_by_text("1 tensor found")
        ).to_be_visible()
        expect(proj.locator("vz-projector .dim")).to_have_text("4")

    run_check(page, "projector", tmp_path, body)


def test_mesh(page: Any, local: Any, tmp_path: Path) -> None:
    def body() -> None:
        goto(page, local.tb.base, "mesh")
        dash = page.locator("mesh-dashboard")
        canvas = dash.locator("tf-mesh-loader canvas[data-engine^='three.js']")
        wait_rendered(canvas, dash, "mesh")
        wait_colours(page, canvas.first, 20, "mesh")

    run_check(page, "mesh", tmp_path, body)
