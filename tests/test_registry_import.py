"""``import tallyboard`` is cheap: nothing heavy imported, well under 60 ms."""

from __future__ import annotations

import re
import subprocess
import sys

HEAVY = ("PIL", "matplotlib", "torch", "soundfile", "numpy", "google.protobuf.pyext", "tensorboard")


def test_import_tallyboard_loads_nothing_heavy() -> None:
    code = (
        "import sys, tallyboard\n"
        f"heavy = [m for m in sys.modules if m.startswith('google.protobuf') or m.split('.')[0] in {HEAVY!r}]\n"
        "print(','.join(sorted(heavy)))\n"
        "print('tallyboard.plugin.registry' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    heavy, registry_loaded = out.stdout.splitlines()
    assert heavy == ""
    assert registry_loaded == "False"  # the registry is built on first use, not at import


def test_import_tallyboard_under_60_ms() -> None:
    times = []
    for _ in range(3):  # best of three: the machine is shared
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import tallyboard"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| tallyboard$", out.stderr, re.M)
        assert match, out.stderr[-2000:]
        times.append(int(match.group(1)) / 1000)
    assert min(times) < 60, times
