"""An example distribution of examples/ pip-installed for a test session, without touching the
shared environment."""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def installed_example(example: Path, root: Path, package: str) -> Iterator[Path]:
    """``pip install`` ``example`` into ``root/site`` (``--target``), put first on ``sys.path``
    and on ``PYTHONPATH`` for the processes a test starts: its entry point is then found as an
    installed distribution's, while the shared environment stays untouched, so tests running in
    other processes at the same time (pytest-xdist) never see it appear or vanish. Built from a
    copy, so no build files land in the repository. The registry is rebuilt on entry and exit;
    ``package``'s modules are forgotten on exit. Yields the folder installed into."""
    from tallyboard.plugin.registry import reset_registry

    src, target = root / example.name, root / "site"
    shutil.copytree(
        example, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    out = subprocess.run(
        [*cmd, "--target", str(target), str(src)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    old_path = os.environ.get("PYTHONPATH")
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), old_path) if p)
    importlib.invalidate_caches()
    reset_registry()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        if old_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_path
        for name in [m for m in sys.modules if m.split(".")[0] == package]:
            sys.modules.pop(name)
        importlib.invalidate_caches()
        reset_registry()
