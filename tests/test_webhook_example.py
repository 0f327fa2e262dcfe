"""The second example distribution, examples/tallyboard-webhook: a kind, its TensorBoard encoder
and a network sink with settings built on ``NetworkSink``, in under 60 lines of code. It is
pip-installed and found by its entry point, and used through every face: SummaryWriter,
SummaryRecord, ``sync`` and the command line, against a real HTTP server and a real TensorBoard."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tallyboard import SummaryRecord, SummaryWriter, read
from tallyboard.cli import main as cli_main
from tallyboard.plugin.registry import get_registry, reset_registry
from tallyboard.warn import SinkWarning
from tb_server import tensorboard_server

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tallyboard-webhook"
DIST = "tallyboard-webhook"
pytest_plugins = ["tallyboard.testing"]

if TYPE_CHECKING:  # imported by pytest_plugins, not before it (assertion rewriting)
    from tallyboard.testing import IngestServer
MODULE = EXAMPLE / "tallyboard_webhook" / "__init__.py"


def code_lines(source: str) -> int:
    """Lines of code: not blank, not a comment, not a docstring."""
    tree = ast.parse(source)
    docs: set[int] = set()
    for node in ast.walk(tree):
        documented = isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        if documented and ast.get_docstring(node) is not None:
            doc = node.body[0]
            docs.update(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docs
    )


def test_the_example_is_a_kind_an_encoder_and_a_network_sink_in_under_60_lines() -> None:
    assert code_lines('"""doc\n\nmore"""\n\n# note\nx = 1  # set\n') == 1
    source = MODULE.read_text()
    lines = code_lines(source)
    print(f"examples/tallyboard-webhook: {lines} lines of code, {len(source.splitlines())} in all")
    assert lines < 60, lines
    assert "class WebhookSink(NetworkSink)" in source and "Kind(name=" in source


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``pip install`` the example (from a copy, so no build files land in the repository)."""
    was = (
        subprocess.run(
            [sys.executable, "-m", "pip", "show", "-q", DIST], capture_output=True, timeout=120
        ).returncode
        == 0
    )
    src = tmp_path_factory.mktemp("webhook") / EXAMPLE.name
    shutil.copytree(
        EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        str(src),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    importlib.invalidate_caches()
    reset_registry()
    yield
    if not was:
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "-y", "-q", DIST],
            capture_output=True,
            timeout=120,
        )
        sys.modules.pop("tallyboard_webhook", None)
        importlib.invalidate_caches()
    reset_registry()


@pytest.fixture
def server(ingest_server: IngestServer) -> IngestServer:
    return ingest_server


def test_the_installed_example_is_found_and_listed(installed: None) -> None:
    info = next(p for p in get_registry().plugins if p.name == "webhook")
    assert (info.distribution, info.status, info.kinds, info.sinks) == (
        DIST,
        "loaded",
        ["confusion"],
        ["webhook"],
    )
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "plugins"], capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    i = out.index("webhook  (tallyboard-webhook 0.1.0)  [loaded]")
    assert out[i + 1 : i + 4] == [
        "    kinds: confusion",
        "    sinks: webhook",
        "    encoders: confusion->tfevents, confusion->webhook, scalar->webhook",
    ]


def test_a_confusion_matrix_reaches_the_server_and_tensorboard_draws_it_as_a_table(
    installed: None, server: IngestServer, tmp_path: Path
) -> None:
    with SummaryWriter(
        tmp_path, sinks=["tfevents", (f"webhook+{server.url}", {"token": "t"})]
    ) as w:
        w.add_confusion("cm", np.array([[5, 1], [2, 7]]), 3)
        w.add_scalar("loss", 0.25, 3)
        for bad in ([[1, 2, 3]], [[1.5, 0], [0, 1]], [[-1, 0], [0, 1]], [[float("nan")]]):
            with pytest.raises(ValueError, match="matrix must be a square array of whole counts"):
                w.add_confusion("cm", bad, 4)
    assert [(run, r["kind"], r["value"]) for run, r in server.records()] == [
        (".", "confusion", [[5, 1], [2, 7]]),
        (".", "scalar", 0.25),
    ]
    with tensorboard_server(tmp_path) as tb:
        [shown] = tb.get_json("/data/plugin/text/text", run=".", tag="cm")
    assert shown["step"] == 3 and shown["text"].count("<tr>") == 2
    assert [cell in shown["text"] for cell in ("<td><p>5</p></td>", "<td><p>7</p></td>")] == [
        True,
        True,
    ]


def test_summary_record_and_sync_take_the_same_entry_with_settings(
    installed: None,
    server: IngestServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warnings

    from tallyboard import warn

    monkeypatch.setattr(warn, "_once", set())  # a mindspore sink's warning would be said afresh
    entry = (f"webhook+{server.url}", {"token": "from-record"})
    with warnings.catch_warnings(), SummaryRecord(tmp_path / "ms", sinks=[entry]) as record:
        # the webhook takes 'confusion': the mindspore sink is not handed it, and says nothing
        warnings.simplefilter("error", SinkWarning)
        record.add_value("confusion", "cm", [[1, 0], [0, 1]])
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(2)
    logdir = tmp_path / "runs"
    with SummaryWriter(logdir / "exp") as w:
        w.add_scalar("loss", 1.5, 1)
    argv = ["sync", str(logdir), "--to", f"webhook+{server.url}", "-s", "token=from-cli"]
    assert cli_main(argv) == 0
    assert capsys.readouterr().out.startswith("sent 1 new values (scalar 1) of 1 run")
    tokens = [h["Authorization"] for h in server.headers]
    assert tokens[0] == "Bearer from-record" and tokens[-1] == "Bearer from-cli"
    records = [(run, r["tag"], r["value"]) for run, r in server.records()]
    assert records == [(".", "cm", [[1, 0], [0, 1]]), (".", "loss", 0.5), ("exp", "loss", 1.5)]
    assert list(read(str(logdir))["run"]) == ["exp"]  # the name sync sent


def test_the_guide_shows_the_example_s_sink_as_it_is() -> None:
    """docs/plugins.md prints the webhook sink; every line of it is the example's own."""
    guide = (EXAMPLE.parents[1] / "docs" / "plugins.md").read_text()
    section = guide.split("### Network sinks", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    source = MODULE.read_text().splitlines()
    shown = [line for line in block.splitlines() if line.strip()]
    assert len(shown) > 20 and [line for line in shown if line not in source] == [
        "from tallyboard.plugin import NetworkSettings, NetworkSink"  # the example imports more
    ]
