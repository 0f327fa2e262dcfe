"""The documentation site (docs/, Sphinx + MyST) builds with warnings as errors, and what it
promises is in the pages it makes: an API reference entry for every public name, the CLI's help
for every command, links into the Python, NumPy and PyTorch docs from the committed inventories
(no network), the theme and the copy buttons. A page that is in no table of contents, a broken
link between pages, a directive or docstring that does not render: each is a warning, so each
fails the build here.

The site is built once, for every test here, exactly as CONTRIBUTING.md says (its command, read
from the page), in a virtual environment holding only what ``pip install -e ".[docs]"`` installs:
tallyboard, its dependencies and the docs extra's, followed transitively, no MindSpore, torch or
anything else of the test extra. That environment links those distributions from the one running
the tests instead of installing them again (pip from an index: 23-52 s a run on the 2-core
machine; linking: about 1 s), and the command runs in a copy of the working tree, so its
``docs/_build`` is the test's own."""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zlib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from tallyboard.cli import build_parser
from test_public_docstrings import AWAITING, NAMES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: What CONTRIBUTING.md says builds the site, and what it says to install for that alone.
BUILD_LINE = re.compile(r"`(python -m sphinx [^`]+)`")
INSTALL_LINE = re.compile(r'`pip install -e "\.\[(\w+)\]"` is enough for this alone')


def contributing_build() -> tuple[str, str]:
    """The site's build command and the extra CONTRIBUTING.md names for it."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("## The documentation") :]
    command, extra = BUILD_LINE.search(section), INSTALL_LINE.search(section)
    assert command and extra, "CONTRIBUTING.md no longer says how to build the site"
    return command.group(1), extra.group(1)


def _closure(extra: str) -> dict[str, md.Distribution]:
    """Every distribution ``pip install -e ".[extra]"`` installs, as installed here: tallyboard's
    requirements and the extra's, followed through each one's own (and their extras), markers
    evaluated for this interpreter."""
    site = sysconfig.get_paths()["purelib"]
    installed = {canonicalize_name(d.metadata["Name"]): d for d in md.distributions(path=[site])}
    found: dict[str, md.Distribution] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [("tallyboard", frozenset({extra}))]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in done:
            continue
        done.add((key, extras))
        found[key] = installed[key]
        for text in installed[key].requires or ():
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((req.name, frozenset(req.extras)))
    return found


def docs_only_venv(dest: Path, extra: str) -> Path:
    """A virtual environment at ``dest`` whose site-packages holds exactly the distributions of
    :func:`_closure` (each one's files linked from here: a top-level folder that holds only its
    distribution's files is linked whole, compiled modules included); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    here = Path(sysconfig.get_paths()["purelib"])
    there = dest / here.relative_to(sys.prefix)
    for dist in _closure(extra).values():
        files = [f for f in (dist.files or ()) if not str(f).startswith("..")]
        mine = {str(f) for f in files}
        whole_tops = {t for t in {f.parts[0] for f in files} if _only(here, t, mine)}
        for f in files:
            top = f.parts[0]
            whole = top in whole_tops
            src, dst = here / (top if whole else f), there / (top if whole else f)
            if os.path.lexists(dst) or not os.path.lexists(src):
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src)
    return dest / "bin" / "python"


def _only(site: Path, top: str, files: set[str]) -> bool:
    """Whether the folder ``top`` of ``site`` holds no file but ``files`` (and compiled
    modules): no other distribution shares it (a namespace package such as ``sphinxcontrib``)."""
    if not (site / top).is_dir():
        return False
    for folder, dirs, names in os.walk(site / top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = Path(folder).relative_to(site)
        if any(str(rel / n) not in files for n in names):
            return False
    return True


@pytest.fixture(scope="module")
def docs_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a virtual environment with only tallyboard and the docs extra."""
    return docs_only_venv(tmp_path_factory.mktemp("docs-venv") / "venv", contributing_build()[1])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, docs_venv: Path) -> Path:
    """The site built by CONTRIBUTING.md's command, in ``docs_venv``, in a copy of the tree."""
    tree = tmp_path_factory.mktemp("tree")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        if (ROOT / rel).is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, tree / rel)
    command = shlex.split(contributing_build()[0])
    assert command[:2] == ["python", "-m"], command
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{docs_venv.parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [str(docs_venv), *command[1:]],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tree,
        env=env,
    )
    assert proc.returncode == 0, f"{' '.join(command)} failed:\n{proc.stderr[-6000:]}"
    return tree / command[-1]


def test_the_docs_venv_holds_the_docs_extra_and_nothing_of_the_test_extra(
    docs_venv: Path,
) -> None:
    probe = (
        "import importlib.util as u, sphinx, myst_parser, furo, sphinx_copybutton, tallyboard;"
        "print(sorted(m for m in ('mindspore', 'torch', 'tensorboard', 'pandas', 'pytest')"
        " if u.find_spec(m)))"
    )
    proc = subprocess.run([str(docs_venv), "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"the docs venv holds {proc.stdout.strip()}"


def test_the_mindspore_collector_is_documented_without_mindspore(site: Path) -> None:
    html = _page(site, "api/summary-record.html")
    for name in ("SummaryCollector", "SummaryCollector.step_end", "SummaryCollector.end"):
        assert f'id="tallyboard.{name}"' in html, name


def _page(site: Path, name: str) -> str:
    return (site / name).read_text()


def test_every_page_of_docs_is_built(site: Path) -> None:
    pages = [
        p.relative_to(DOCS).with_suffix(".html")
        for p in DOCS.rglob("*.md")
        if not any(part.startswith("_") for part in p.relative_to(DOCS).parts)
    ]
    assert len(pages) >= 25
    for page in pages:
        assert (site / page).is_file(), page


def test_the_api_reference_has_an_entry_for_every_public_name(site: Path) -> None:
    html = "".join(p.read_text() for p in (site / "api").glob("*.html"))
    ids = set(re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', html))
    missing = []
    for name in NAMES:
        short = name.replace("tallyboard.reading.read.read", "tallyboard.read")
        short = short.replace("tallyboard.reading.convert.convert", "tallyboard.convert")
        short = re.sub(r"^tallyboard\.plugin\.(kinds|sinks)\.", "tallyboard.", short)
        if short not in ids and name not in ids and name not in AWAITING:
            missing.append(name)
    assert not missing, f"no API reference entry for {missing}"
    assert "tallyboard.SummaryWriter.add_scalar" in ids


def test_the_cli_page_holds_the_help_of_every_command(site: Path) -> None:
    html = _page(site, "api/cli.html")
    assert "usage: tallyboard [-h] [--version] COMMAND" in html, "the main help is missing"
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= 7
    for command in sub.choices:
        assert f'id="tallyboard-{command}"' in html, command
        assert f"usage: tallyboard {command}" in html, command


def test_links_reach_python_numpy_and_torch_docs_without_network(site: Path) -> None:
    html = "".join(p.read_text() for p in site.rglob("*.html"))
    for url in (
        "https://docs.pytorch.org/docs/stable/tensorboard.html#torch.utils.tensorboard.writer.SummaryWriter",
        "https://docs.pytorch.org/docs/stable/monitor.html#module-torch.monitor",
        "https://numpy.org/doc/stable/reference/generated/numpy.ndarray.html#numpy.ndarray",
        "https://docs.python.org/3/library/stdtypes.html#str",
    ):
        assert f'href="{url}"' in html, url


def test_the_theme_and_copy_buttons_are_there(site: Path) -> None:
    index = _page(site, "index.html")
    assert "furo" in index
    assert (site / "_static" / "copybutton.js").is_file()


def test_committed_inventories_are_sphinx_inventories() -> None:
    for name in ("python", "numpy", "torch"):
        data = (DOCS / "_inv" / f"{name}.inv").read_bytes()
        header, _, body = data.partition(b"zlib.\n")
        assert header.startswith(b"# Sphinx inventory version 2\n"), name
        lines = zlib.decompress(body).decode().splitlines()
        assert lines and all(len(line.split(" ", 4)) == 5 for line in lines), name


def test_code_blocks_wrap_rather_than_run_past_the_edge_at_1280_px(site: Path) -> None:
    """In a 1280 px window no code block of any page holds text beyond its right edge (a line
    longer than the column wraps), and a 100-column line, the project's, is not wrapped (but
    in the API reference, whose examples are indented under their entry)."""
    from browser_support import open_page

    measure = """() => [...document.querySelectorAll('article div.highlight pre')].map(p => {
        const one = (text) => {
            const q = p.cloneNode(false);
            q.textContent = text;
            p.parentElement.appendChild(q);
            const h = q.getBoundingClientRect().height;
            q.remove();
            return h;
        };
        const r = p.getBoundingClientRect();
        return [p.scrollWidth <= p.clientWidth, r.right <= document.documentElement.clientWidth,
                p.closest('dl') !== null || one('x'.repeat(100)) === one('x')];
    })"""
    pages = sorted(
        p.relative_to(site)
        for p in site.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
    )
    bad, blocks = [], 0
    with open_page() as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        for rel in pages:
            page.goto((site / rel).as_uri(), wait_until="domcontentloaded")  # styles are in
            for i, (inside, in_view, fits) in enumerate(page.evaluate(measure)):
                blocks += 1
                if not (inside and in_view and fits):
                    bad.append(f"{rel} block {i}: inside={inside} in_view={in_view} fits={fits}")
    assert blocks >= 100, blocks
    assert not bad, bad
