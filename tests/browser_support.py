"""Headless Chromium (Debian's ``chromium`` driven by Playwright) on a TensorBoard page.

What the browser suite needs besides the checks themselves: the browser, readiness of the server
(every plugin enabled), the visible text of a page walking open shadow roots (for error text), a
wait that fails fast on error text, and a count of colours in a screenshot of a WebGL canvas
(canvases drawn by WebGL cannot be read back from the DOM).

Playwright CSS selectors pierce open shadow roots, which is what TensorBoard's Polymer dashboards
need; selectors are scoped to the active dashboard's element because dashboards visited before stay
in the DOM, hidden.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The browser binary; Debian's package puts it here (CI installs it with apt, never a download).
CHROMIUM = os.environ.get("TALLYBOARD_CHROMIUM", "/usr/bin/chromium")
#: Longest single wait (ms). A loaded 2-core machine needed about 20 s for the first dashboard.
TIMEOUT_MS = int(os.environ.get("TALLYBOARD_BROWSER_TIMEOUT_MS", "45000"))

#: Text that means a dashboard failed, matched against the visible text of every frame.
ERROR_PATTERNS = [
    r"No dashboards are active",
    r"Malformed GraphDef",
    r"Graph visualization failed",
    r"\bError\b",
    r"\bfailed\b",
    r"No \w+ data was found",
    r"Data could not be loaded",
    r"not found",
]
ERROR_RE = re.compile("|".join(ERROR_PATTERNS))

# Visible text of a document through open shadow roots; hidden subtrees (inactive dashboards are
# visibility:hidden, which plain checkVisibility() ignores) are pruned.
_DEEP_TEXT_JS = r"""
() => {
  const out = [];
  const walk = (node) => {
    for (let c = node.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === Node.TEXT_NODE) {
        const s = c.textContent.trim();
        if (s) out.push(s);
      } else if (c.nodeType === Node.ELEMENT_NODE) {
        if (['STYLE', 'SCRIPT', 'TEMPLATE', 'TITLE'].includes(c.tagName)) continue;
        if (!c.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
        if (c.shadowRoot) walk(c.shadowRoot);
        walk(c);
      }
    }
  };
  walk(document.body);
  return out.join(' | ');
}
"""

# Distinct colours (5 bits per channel) of a PNG given as base64, decoded by the browser itself.
# TensorBoard's Content-Security-Policy blocks fetch('data:...'), hence the Blob from atob.
_DISTINCT_COLOURS_JS = r"""
async (b64) => {
  const bin = atob(b64), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const bmp = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
  const c = new OffscreenCanvas(bmp.width, bmp.height);
  const ctx = c.getContext('2d'); ctx.drawImage(bmp, 0, 0);
  const d = ctx.getImageData(0, 0, bmp.width, bmp.height).data;
  const seen = new Set();
  for (let i = 0; i < d.length; i += 4) seen.add((d[i] >> 3) << 10 | (d[i+1] >> 3) << 5 | (d[i+2] >> 3));
  return seen.size;
}
"""


class DashboardError(AssertionError):
    """A dashboard did not render what it should (the message says what the page shows)."""


def check(cond: bool, msg: str) -> None:
    """Raise :class:`DashboardError` with ``msg`` unless ``cond``."""
    if not cond:
        raise DashboardError(msg)


def shots_dir(default: Path) -> Path:
    """Where failure screenshots go: ``$TALLYBOARD_BROWSER_SHOTS`` or ``default``."""
    path = Path(os.environ.get("TALLYBOARD_BROWSER_SHOTS") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Launch Debian's Chromium headless through Playwright; fail (never skip) when missing.

    Playwright's defaults already pass --headless, --no-sandbox (needed as root),
    --disable-dev-shm-usage and --enable-unsafe-swiftshader (software WebGL for mesh, projector).
    """
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        raise RuntimeError(
            f"no browser at {CHROMIUM}: install Debian's chromium "
            "(apt-get install -y --no-install-recommends chromium) or set TALLYBOARD_CHROMIUM"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-quic"])
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def open_page() -> Iterator[Any]:
    """A Chromium page 1400 px wide whose ``problems`` list collects uncaught page errors and
    failed ``/data/`` requests (what :func:`run_check` requires to stay empty)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.set_default_timeout(TIMEOUT_MS)
        problems: list[str] = []
        pg.on("pageerror", lambda e: problems.append(f"uncaught page error: {e}"))
        pg.on(
            "response",
            lambda r: (
                r.status >= 400
                and "/data/" in r.url
                and problems.append(f"HTTP {r.status} {r.url}")
            ),
        )
        pg.problems = problems
        yield pg
        pg.close()


def goto(page: Any, base: str, hash_: str) -> None:
    """Switch dashboard by the URL hash only: the app stays loaded (same query every time).

    ``forceSVG=true`` makes Time Series draw plain SVG instead of a worker's WebGL canvas, so its
    lines can be checked in the DOM.
    """
    page.goto(f"{base}/?forceSVG=true#{hash_}", wait_until="commit")


def matching(dash: Any) -> Any:
    """The "Tags matching" category a ``tagFilter`` opens (other categories stay below it)."""
    return dash.locator("tf-category-paginated-view").first


def run_check(
    page: Any,
    name: str,
    tmp_path: Path,
    body: Callable[[], None],
    height: int = 1000,
    shot_prefix: str = "",
) -> None:
    """Run one dashboard's check on a page ``height`` px tall; on failure save a screenshot and
    name it in the message."""
    page.set_viewport_size({"width": 1400, "height": height})
    page.problems.clear()
    try:
        body()
        assert_no_error_text(page, name)
        check(not page.problems, f"{name}: {page.problems}")
    except Exception as e:
        shot = shots_dir(tmp_path) / f"{shot_prefix}{name}.png"
        try:
            page.screenshot(path=str(shot), full_page=True)
        except Exception as shot_error:  # the assertion matters more than the picture
            shot = Path(f"(screenshot failed: {shot_error})")
        raise DashboardError(f"{name}: {e}\nscreenshot: {shot}") from e


def wait_plugins_enabled(tb: Any, plugins: list[str], timeout: float = 90.0) -> None:
    """Poll ``/data/plugins_listing`` until every plugin is enabled.

    TensorBoard answers before it has read the whole logdir; a page loaded then may say
    "No dashboards are active".
    """
    deadline = time.monotonic() + timeout
    missing = plugins
    while time.monotonic() < deadline:
        listing = tb.get_json("/data/plugins_listing")
        missing = [p for p in plugins if not listing.get(p, {}).get("enabled")]
        if not missing:
            return
        time.sleep(0.3)
    raise TimeoutError(f"TensorBoard plugins still disabled after {timeout} s: {missing}")


def visible_text(page: Any) -> str:
    """The visible text of every frame of ``page``, shadow roots included."""
    return " | ".join(frame.evaluate(_DEEP_TEXT_JS) for frame in page.frames)


def assert_no_error_text(page: Any, name: str) -> None:
    """Fail with the surrounding text when an :data:`ERROR_PATTERNS` text is visible."""
    text = visible_text(page)
    m = ERROR_RE.search(text)
    if m:
        ctx = text[max(0, m.start() - 120) : m.end() + 120]
        raise DashboardError(f"{name}: error text {m.group(0)!r} visible: ...{ctx}...")


def wait_rendered(ok: Any, scope: Any, what: str) -> None:
    """Wait until locator ``ok`` is visible; fail at once if error text shows in ``scope`` first."""
    err = scope.get_by_text(ERROR_RE)
    ok.or_(err).filter(visible=True).first.wait_for(timeout=TIMEOUT_MS)
    if not ok.filter(visible=True).count():
        raise DashboardError(f"{what}: {err.filter(visible=True).first.inner_text()[:300]!r}")


def distinct_colours(page: Any, locator: Any) -> int:
    """Colours in a screenshot of ``locator``'s box (a WebGL canvas cannot be read directly)."""
    box = locator.bounding_box()
    check(box is not None and box["width"] > 0 and box["height"] > 0, "canvas has no box")
    png = page.screenshot(clip=box)
    return int(page.evaluate(_DISTINCT_COLOURS_JS, base64.b64encode(png).decode()))


def wait_colours(page: Any, locator: Any, at_least: int, what: str) -> int:
    """Poll the colours of a WebGL canvas until it has drawn ``at_least`` of them."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while (n := distinct_colours(page, locator)) < at_least and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    check(n >= at_least, f"{what}: WebGL canvas looks blank ({n} colours)")
    return n


def path_points(d: str) -> list[tuple[float, float]]:
    """The vertices of an SVG path's ``d`` made of M/L commands (what TensorBoard's charts draw)."""
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
    return list(zip(nums[0::2], nums[1::2], strict=False))
