"""``tallyboard plugins`` and ``python -m tallyboard plugins``, run as real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_registry import BROKEN_IMPORT, GOOD, make_dist

COMMANDS = {
    "console script": [shutil.which("tallyboard") or "tallyboard", "plugins"],
    "python -m": [sys.executable, "-m", "tallyboard", "plugins"],
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    make_dist(site, "pb-good", "pb_good", GOOD, version="2.0.1")
    make_dist(site, "pb-broken", "pb_broken", BROKEN_IMPORT, version="0.0.1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALLYBOARD_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out


@pytest.mark.parametrize("how", sorted(COMMANDS))
def test_plugins_lists_distribution_version_kinds_and_sinks(how: str, env: dict[str, str]) -> None:
    out = run(COMMANDS[how], env)
    lines = out.stdout.splitlines()
    version = __import__("tallyboard").__version__
    assert f"scalar  (tallyboard {version})  [loaded]" in lines
    assert f"tfevents  (tallyboard {version})  [loaded]" in lines
    assert "    kinds: scalar" in lines and "    sinks: tfevents" in lines
    assert "    sinks: csv" in lines and "    sinks: jsonl" in lines
    i = lines.index(f"parquet  (tallyboard {version})  [loaded]")  # an export target only
    assert lines[i + 1 : i + 3] == [
        "    sinks: parquet",
        "    exports (tallyboard export): parquet",
    ]
    i = lines.index("pb_good  (pb-good 2.0.1)  [loaded]")
    assert lines[i + 1] == "    kinds: tally" and lines[i + 2] == "    encoders: tally->tfevents"
    assert "pb_broken  (pb-broken 0.0.1)  [failed]" in lines
    assert "    error: RuntimeError: this plugin is broken on purpose" in lines
    assert "warning: tallyboard plugin 'pb_broken'" in out.stderr  # reported, never fatal


def test_plugins_json_and_env_vars(env: dict[str, str]) -> None:
    rows = json.loads(run([sys.executable, "-m", "tallyboard", "plugins", "--json"], env).stdout)
    by_name = {r["name"]: r for r in rows}
    assert by_name["pb_good"]["distribution"] == "pb-good" and by_name["pb_good"]["kinds"] == [
        "tally"
    ]
    assert by_name["csv"]["sinks"] == ["csv"] and "scalar->csv" in by_name["csv"]["encoders"]
    assert by_name["csv"]["exports"] == ["csv"] and by_name["parquet"]["encoders"] == []
    env = {
        **env,
        "TALLYBOARD_BLOCK_PLUGINS": "pb_broken",
        "TALLYBOARD_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    out = run([sys.executable, "-m", "tallyboard", "plugins", "--json"], env)
    by_name = {r["name"]: r for r in json.loads(out.stdout)}
    assert by_name["pb_broken"]["status"] == "blocked"
    assert by_name["pb_good"]["status"] == "not autoloaded"
    assert "pb_broken" not in out.stderr


def test_unknown_command_fails_cleanly(env: dict[str, str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "invalid choice" in out.stderr
