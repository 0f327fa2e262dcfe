"""``python -m build`` makes an sdist and, from it, a wheel that ``twine check`` accepts, holding
every package pyproject.toml declares (core and each plugin folder) with its ``py.typed``, the
entry points of the built-in plugins, and the Apache-2.0 license.

The build runs on a copy of the repository without build isolation (``setuptools>=77`` comes
with the test extra), so it needs no network and writes nothing into the checkout."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JUNK = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", "_build", "runs", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".venv",
)  # fmt: skip


def _run(cmd: list[str], cwd: Path) -> str:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd[:4]} failed:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src") / "tallyboard"
    shutil.copytree(ROOT, src, ignore=JUNK, symlinks=True)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)], src)
    return out


def _declared() -> tuple[list[str], dict[str, str]]:
    """Package folders and entry points as pyproject.toml declares them (read as text)."""
    text = (ROOT / "pyproject.toml").read_text()
    where = text.split("[tool.setuptools.packages.find]", 1)[1].split("]", 1)[0]
    folders = re.findall(r'"([\w/]+)"', where)
    eps = text.split("[project.entry-points.tallyboard]", 1)[1].split("\n[", 1)[0]
    return folders, dict(re.findall(r'^(\w+) = "(\w+)"', eps, re.M))


def test_twine_accepts_the_sdist_and_the_wheel(dist: Path) -> None:
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"], files
    out = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], dist)
    assert out.count("PASSED") == 2, out


def test_the_wheel_holds_every_package_its_types_entry_points_and_license(dist: Path) -> None:
    [wheel] = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    folders, entry_points = _declared()
    packages = [next((ROOT / f).glob("tallyboard*/__init__.py")).parent.name for f in folders]
    assert "tallyboard" in packages and len(packages) == len(folders)
    for package in packages:
        assert f"{package}/__init__.py" in names, package
        assert f"{package}/py.typed" in names, package
    [info] = {n.split("/")[0] for n in names if ".dist-info/" in n}
    archive = zipfile.ZipFile(wheel)
    assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    metadata = archive.read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    eps = archive.read(f"{info}/entry_points.txt").decode()
    for name, module in entry_points.items():
        assert f"{name} = {module}" in eps, name
    assert "tallyboard = tallyboard.cli:main" in eps


def test_the_sdist_holds_the_license_readme_and_changelog(dist: Path) -> None:
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml"} <= names, names
