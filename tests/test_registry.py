"""The registry: real entry points from throw-away distributions on sys.path, env vars, contract."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from tallyboard.plugin import registry
from tallyboard.plugin.registry import PluginWarning, get_registry, reset_registry


def make_dist(
    root: Path,
    dist: str,
    module: str,
    source: str,
    version: str = "1.2.3",
    ep_name: str | None = None,
) -> Path:
    """A minimal installed distribution (dist-info + module) under ``root``, found on sys.path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[tallyboard]\n{ep_name or module} = {module}\n")
    return root


GOOD = """
    from tallyboard import Kind, hookimpl

    def add_tally(writer, tag, count, global_step=None):
        writer.emit("tally", tag, float(count), global_step)

    @hookimpl
    def register_kinds(register):
        register(Kind(name="tally", convert=float, methods={"add_tally": add_tally}))

    @hookimpl
    def register_encoders(register):
        from tallyboard_scalar.tfevents import encode
        register("tally", "tfevents", encode)
"""

BROKEN_IMPORT = """
    raise RuntimeError("this plugin is broken on purpose")
"""

BROKEN_HOOK = """
    from tallyboard import Kind, hookimpl

    @hookimpl
    def register_kinds(register):
        register(Kind(name="first_ok", convert=float))
        raise ValueError("boom in a hook")
"""

WRONG_CONTRACT = """
    from tallyboard import hookimpl
    TALLYBOARD_CONTRACT = 99

    @hookimpl
    def register_kinds(register):
        raise AssertionError("never called")
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path where tests drop distributions; the registry is rebuilt after."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for var in (registry.AUTOLOAD_ENV, registry.BLOCK_ENV, registry.TRACE_ENV):
        monkeypatch.delenv(var, raising=False)
    reset_registry()
    yield root
    for name in ("pb_good", "pb_broken", "pb_hook", "pb_contract"):
        sys.modules.pop(name, None)
    reset_registry()


def build() -> tuple[registry.Registry, list[str]]:
    reset_registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = get_registry()
    return reg, [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


def info(reg: registry.Registry, name: str) -> registry.PluginInfo:
    return next(p for p in reg.plugins if p.name == name)


def test_third_party_plugin_is_discovered(site: Path, logdir: Path) -> None:
    make_dist(site, "pb-good", "pb_good", GOOD)
    reg, msgs = build()
    assert not [m for m in msgs if "pb_good" in m]
    p = info(reg, "pb_good")
    assert (p.distribution, p.version, p.status, p.kinds) == (
        "pb-good",
        "1.2.3",
        "loaded",
        ["tally"],
    )
    from tallyboard import SummaryWriter

    with SummaryWriter(logdir) as w:
        w.add_tally("t", 3, 1)
        w.add_value("tally", "t", 4, 2)
    from conftest import load_run

    assert [(e.step, e.value) for e in load_run(logdir).Scalars("t")] == [(1, 3.0), (2, 4.0)]


def test_plugin_raising_at_import_is_reported_and_skipped(site: Path) -> None:
    make_dist(site, "pb-broken", "pb_broken", BROKEN_IMPORT, version="0.0.1")
    reg, msgs = build()
    [msg] = [m for m in msgs if "pb_broken" in m]
    assert "'pb-broken'" in msg and "RuntimeError: this plugin is broken on purpose" in msg
    assert "TALLYBOARD_BLOCK_PLUGINS=pb_broken" in msg
    assert info(reg, "pb_broken").status == "failed"
    assert "scalar" in reg.kinds and "tfevents" in reg.sinks  # the host is fine


def test_plugin_raising_in_a_hook_is_reported(site: Path) -> None:
    make_dist(site, "pb-hook", "pb_hook", BROKEN_HOOK)
    reg, msgs = build()
    [msg] = [m for m in msgs if "pb_hook" in m]
    assert "failed in register_kinds (ValueError: boom in a hook)" in msg
    p = info(reg, "pb_hook")
    assert p.status == "failed" and p.kinds == ["first_ok"]  # what it registered before is kept
    assert "scalar" in reg.kinds


def test_plugin_for_another_contract_is_refused(site: Path) -> None:
    make_dist(site, "pb-contract", "pb_contract", WRONG_CONTRACT)
    reg, msgs = build()
    [msg] = [m for m in msgs if "pb_contract" in m]
    assert "built for tallyboard hook contract 99" in msg and "provides contract 1" in msg
    assert info(reg, "pb_contract").status == "failed"


def test_autoload_can_be_disabled(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(site, "pb-good", "pb_good", GOOD)
    monkeypatch.setenv(registry.AUTOLOAD_ENV, "1")
    reg, _ = build()
    assert info(reg, "pb_good").status == "not autoloaded"
    assert "tally" not in reg.kinds and "pb_good" not in sys.modules
    assert {"scalar", "text"} <= set(reg.kinds)  # tallyboard's own plugins still load


def test_plugins_can_be_blocked_but_not_essential_ones(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_dist(site, "pb-good", "pb_good", GOOD)
    monkeypatch.setenv(registry.BLOCK_ENV, "pb_good, text,scalar,tfevents")
    reg, msgs = build()
    assert info(reg, "pb_good").status == "blocked" and info(reg, "text").status == "blocked"
    assert "text" not in reg.kinds and "tally" not in reg.kinds
    assert [m for m in msgs if "essential plugin(s) scalar, tfevents" in m]
    assert "scalar" in reg.kinds and "tfevents" in reg.sinks


def test_trace_env_prints_hook_calls(tmp_path: Path) -> None:
    env = {**os.environ, registry.TRACE_ENV: "1"}
    code = "from tallyboard.plugin.registry import get_registry; get_registry()"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert (
        "[tallyboard]" in out.stderr
        and "register_kinds" in out.stderr
        and "register_sinks" in out.stderr
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != registry.TRACE_ENV},
    )
    assert "register_kinds" not in quiet.stderr


def test_in_process_registration_and_removal(logdir: Path) -> None:
    from tallyboard import Kind, hookimpl

    class Plugin:
        @hookimpl
        def register_kinds(self, register):  # type: ignore[no-untyped-def]
            register(Kind(name="probe", convert=float))

    registry.add_plugin(Plugin(), "probe-plugin")
    try:
        assert "probe" in get_registry().kinds
        assert info(get_registry(), "probe-plugin").distribution == "(registered in process)"
    finally:
        registry.remove_plugin("probe-plugin")
    assert "probe" not in get_registry().kinds
