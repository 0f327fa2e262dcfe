"""Every code block of README.md and of docs/ (every ``*.md`` in it and its subfolders, the pages
of the documentation site) runs, so the documentation cannot rot.

The convention (also in docs/plugins.md, "Code blocks in these docs are tested"):

- A fence whose language is ``python``, ``bash``, ``sh`` or ``console`` is code and is run;
  ``text``, ``toml``, ``json``, ``yaml``, ``ini`` or none (e.g. the layout tree) is not code; any
  other language fails (so a ``py`` or ``shell`` block cannot slip through unrun). A MyST
  directive fence (``{toctree}``, ``{eval-rst}`` holding autodoc directives, ``{include}``, ...)
  is not code when its directive is one of ``DIRECTIVES``; a code directive (``{code-block}``)
  or an ``eval-rst`` block holding one fails, as would a page included whole that holds code
  blocks this test does not already run.
- A python block runs in its own ``python`` subprocess (this interpreter) with a fresh temporary
  working directory, so relative paths (``runs/...``) land there; ``examples`` in that directory
  links to the repository's ``examples/`` and ``TALLYBOARD_REPO`` names the repository root. A
  bash/sh block runs with ``bash -euo pipefail`` in the same kind of directory; within a line,
  ``pip install ...`` steps are checked, not re-run (the package and its test extra are installed
  here: a path must be a distribution, ``tallyboard[x]``/``.[x]`` must name real extras, anything
  else must be installed), and ``tensorboard --logdir D`` is started on a free 127.0.0.1 port,
  probed over HTTP for the runs under D, and stopped (``tallyboard board D`` likewise: started,
  its runs and scalars checked through TensorBoard, stopped with Ctrl-C). ``console`` blocks run each ``$ `` line the
  same way and the lines shown after it must appear in its output.
- An HTML comment on the line right before the fence changes how the block runs; words combine:
  ``<!-- docs-test: continue -->``  runs this block after the previous code block of the file, in
  one process (the pair is one test, named after the first block's line); a python block and a
  shell block so joined run one after the other in the same directory;
  ``<!-- docs-test: s3 -->``  runs against a moto S3 server on 127.0.0.1 with bucket ``bucket``
  (credentials and endpoint in the environment), which must hold objects afterwards;
  ``<!-- docs-test: example -->``  the example plugin (examples/tallyboard-example) is importable
  and registered as the installed plugin ``example`` (console blocks: it is pip-installed);
  ``<!-- docs-test: fragment -->``  a piece of the example plugin: runs after
  ``from tallyboard_example import *`` (the names it uses but does not define are the tested
  example's), so it must still execute;
  ``<!-- docs-test: pytest -->``  the block is a pytest module, run with ``python -m pytest``;
  ``<!-- docs-test: ci -->``  the README's test command: what .ci/run executes (checked to be exactly
  this line; running the suite inside itself would recurse).
- A code block with no way to run it fails here with a message saying how to mark it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from ray_support import GCS_PORT_WAIT_S
from tb_server import tensorboard_server
from test_example_plugin import EXAMPLE, example_installed  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "CHANGELOG.md",
    *sorted(
        p
        for p in (ROOT / "docs").rglob("*.md")
        if not any(part.startswith("_") for part in p.relative_to(ROOT / "docs").parts)
    ),
]
CODE = {"python", "bash", "sh", "console"}
NOT_CODE = {"", "text", "toml", "json", "yaml", "ini"}  # any other fence language fails
MARKS = {"continue", "s3", "example", "fragment", "pytest", "ci"}
# MyST directives that show no code: the site's structure, the API reference, notes.
DIRECTIVES = {
    "toctree",
    "eval-rst",
    "include",
    "tallyboard-cli",
    "note",
    "tip",
    "warning",
    "important",
    "seealso",
    "admonition",
}
CODE_IN_RST = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode|literalinclude)::", re.M)
TIMEOUT = 180
MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)(?:[ \t]+(\S.*?))?\s*$")  # indent, language, argument


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marks: set[str] = field(default_factory=set)
    arg: str = ""  # what follows the language on the fence line (a directive's argument)

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def parse(path: Path) -> list[Block]:
    """Every fenced block of ``path`` with the marker words on the line before its fence."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        marker = MARKER.match(lines[i - 1].strip()) if i else None
        marks = set(marker.group(1).split()) if marker else set()
        j = i + 1
        while j < len(lines) and not re.match(rf"^{re.escape(m.group(1))}```\s*$", lines[j]):
            j += 1
        body = "\n".join(ln[len(m.group(1)) :] for ln in lines[i + 1 : j]) + "\n"
        blocks.append(Block(path, i + 1, m.group(2).lower(), body, marks, m.group(3) or ""))
        i = j + 1
    return blocks


def units() -> list[list[Block]]:
    """Code blocks grouped into what runs together (``continue`` joins the previous group)."""
    out: list[list[Block]] = []
    for path in DOCS:
        start = len(out)
        for b in parse(path):
            if b.lang not in CODE:
                continue
            if "continue" in b.marks and len(out) > start:
                out[-1].append(b)
            else:
                out.append([b])
    return out


UNITS = units()


def check_directive(b: Block) -> None:
    """A MyST directive fence shows no code that this test does not run."""
    name = b.lang[1:-1]
    assert b.lang.startswith("{") and b.lang.endswith("}") and name in DIRECTIVES, (
        f"{b.where}: directive {b.lang} is not one known to show no code ({sorted(DIRECTIVES)}); "
        "show code in a python/bash/console fence, which this test runs"
    )
    if name == "eval-rst":
        assert not CODE_IN_RST.search(b.text), f"{b.where}: code inside an eval-rst block"
    if name == "include":
        included = (b.path.parent / b.arg).resolve()
        assert included.is_file(), f"{b.where}: {{include}} of a missing file {b.arg!r}"
        if included not in DOCS:
            code = [x for x in parse(included) if x.lang in CODE]
            assert not code, f"{b.where}: includes {included.name}, whose code blocks no test runs"


def test_every_fence_is_runnable_code_or_plain_text_with_known_markers() -> None:
    assert sum(len(u) for u in UNITS) >= 20
    for path in DOCS:
        for b in parse(path):
            if b.lang.startswith("{"):
                check_directive(b)
                assert not b.marks, f"{b.where}: a docs-test marker on a directive"
                continue
            assert b.lang in CODE | NOT_CODE, (
                f"{b.where}: fence language {b.lang!r} is neither code this test runs ({CODE}) "
                f"nor plain text ({NOT_CODE - {''}}); use one of those"
            )
            unknown = b.marks - MARKS
            assert not unknown, f"{b.where}: unknown docs-test marker {unknown}; known: {MARKS}"
            assert not b.marks or b.lang in CODE, f"{b.where}: a marker on a non-code block"


# ---------------------------------------------------------------- environment of a block


@pytest.fixture(scope="module")
def s3_server() -> Iterator[dict[str, str]]:
    """moto's S3 server on 127.0.0.1 with the bucket the docs use; the environment to reach it."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "FSSPEC_S3_ENDPOINT_URL": url,
        "FSSPEC_S3_KEY": "testing",
        "FSSPEC_S3_SECRET": "testing",
    }
    client = boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="bucket")
    try:
        yield env
    finally:
        server.stop()


def _s3_keys(env: dict[str, str]) -> list[str]:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="bucket").get("Contents", [])]
    for key in keys:
        client.delete_object(Bucket="bucket", Key=key)
    return keys


EXAMPLE_PRELUDE = (
    "import tallyboard_example as _ex\n"
    "from tallyboard.plugin.registry import add_plugin as _add\n"
    "_add(_ex, 'example')\n"
)


def _env(cwd: Path, marks: set[str], extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, TALLYBOARD_REPO=str(ROOT), **extra)
    # a block that starts Ray (docs/sweeps-beyond-one-machine.md): as tests/ray_support starts it
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_gcs_server_port_wait_time_s=GCS_PORT_WAIT_S)
    env.pop("PYTHONWARNINGS", None)
    if marks & {"example", "fragment", "pytest"}:
        paths = [str(EXAMPLE), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], where: str) -> str:
    out = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert out.returncode == 0, (
        f"{where}: {shlex.join(cmd[:3])}... exited {out.returncode}\n"
        f"--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"
    )
    return out.stdout + out.stderr


# ---------------------------------------------------------------- python blocks


def run_python(unit: list[Block], cwd: Path, env: dict[str, str]) -> None:
    marks = set().union(*(b.marks for b in unit))
    code = "\n".join(b.text for b in unit)
    where = unit[0].where
    if "pytest" in marks:
        (cwd / "test_docs_block.py").write_text(code)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_docs_block.py"]
        _run(cmd, cwd, env, where)
        return
    if "fragment" in marks:
        code = "from tallyboard_example import *  # noqa\n" + code
    elif "example" in marks:
        code = EXAMPLE_PRELUDE + code
    _run([sys.executable, "-c", code], cwd, env, where)


# ---------------------------------------------------------------- shell blocks


def _extras() -> set[str]:
    """The extras pyproject.toml declares (read as text: tomllib is 3.11+)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+)\s*=", section, re.M))


def check_pip_install(args: list[str], where: str) -> None:
    """A ``pip install`` step, checked against what is installed here instead of re-run."""
    reqs = [a for a in args if not a.startswith("-")]
    assert reqs, f"{where}: pip install of nothing"
    for req in reqs:
        m = re.fullmatch(r"(\.|tallyboard|\./[\w./-]+)(?:\[([\w,-]+)\])?", req)
        if m and m.group(1).startswith("./"):
            path = ROOT / m.group(1)
            assert (path / "pyproject.toml").is_file(), f"{where}: {req} is not a distribution"
            continue
        if m:
            extras = set(filter(None, (m.group(2) or "").split(",")))
            assert extras <= _extras(), f"{where}: no extra {extras - _extras()} in pyproject"
            assert metadata.version("tallyboard")
            for extra in extras:
                needed = metadata.metadata("tallyboard").get_all("Requires-Dist") or []
                assert any(f'extra == "{extra}"' in r for r in needed), (where, extra)
            continue
        assert metadata.version(req), f"{where}: {req} is not installed"


def _tensorboard_probe(args: list[str], cwd: Path, where: str) -> None:
    assert args[:1] == ["--logdir"] and len(args) == 2, f"{where}: tensorboard {args}"
    logdir = cwd / args[1]
    expected = {p.relative_to(logdir).as_posix() for p in logdir.rglob("events.out.tfevents.*")}
    expected = {str(Path(e).parent) for e in expected}
    assert expected, f"{where}: nothing for tensorboard under {logdir}"
    with tensorboard_server(logdir) as tb:
        runs = set(tb.get_json("/data/runs"))
        assert expected <= runs, (where, expected, runs)
        tags = tb.get_json("/data/plugin/scalars/tags")
        assert any(tags.get(run) for run in runs), f"{where}: TensorBoard shows no scalars"


def _board_probe(args: list[str], cwd: Path, env: dict[str, str], where: str) -> None:
    """``tallyboard board D [options]``: started on a free port, its runs checked, stopped."""
    from board_support import board

    logdir = args[0] if "://" in args[0] else str(cwd / args[0])
    with board(logdir, *args[1:], env=env) as b:
        runs = b.tb.get_json("/data/runs")
        assert runs, f"{where}: tallyboard board shows no runs"
        tags = b.tb.get_json("/data/plugin/scalars/tags")
        assert any(tags.get(run) for run in runs), f"{where}: tallyboard board shows no scalars"


def run_command_line(line: str, cwd: Path, env: dict[str, str], where: str) -> str:
    """One shell line: ``&&`` steps, pip and tensorboard handled as the module doc says."""
    line = re.sub(r"\s+#.*$", "", line).strip()
    output = ""
    for step in line.split("&&"):
        words = shlex.split(step)
        if words[:2] == ["pip", "install"]:
            check_pip_install(words[2:], where)
        elif words[:1] == ["tensorboard"]:
            _tensorboard_probe(words[1:], cwd, where)
        elif words[:2] == ["tallyboard", "board"]:
            _board_probe(words[2:], cwd, env, where)
        else:
            output += _run(["bash", "-euo", "pipefail", "-c", step], cwd, env, where)
    return output


def check_ci_line(block: Block) -> None:
    """The README's test command is exactly the line .ci/run extracts and runs."""
    [line] = [ln for ln in block.text.splitlines() if ln.strip()]
    script = (ROOT / ".ci" / "run").read_text()
    [grep] = [ln for ln in script.splitlines() if ln.startswith("cmd=$(grep")]
    grep = grep.removeprefix("cmd=$(").split(")", 1)[0]
    out = subprocess.run(
        ["bash", "-c", grep], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == line.strip(), (block.where, out.stdout)
    # it runs the line in two parts (pytest once the browser is installed): together, the line
    split = [ln for ln in script.splitlines() if ln.startswith(("prep=${", "tests=${"))]
    assert len(split) == 2, split
    joined = subprocess.run(
        [
            "bash",
            "-c",
            "cmd=$1\n" + "\n".join(split) + '\nprintf "%s && %s" "$prep" "$tests"',
            "-",
            line.strip(),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert joined.stdout == line.strip(), joined.stdout
    assert 'eval "$prep"' in script and 'eval "$tests"' in script and "python3 -m venv" in script


def run_shell(unit: list[Block], cwd: Path, env: dict[str, str]) -> None:
    for b in unit:
        if "ci" in b.marks:
            check_ci_line(b)
        elif b.lang == "console":
            lines = b.text.splitlines()
            cmds = [i for i, ln in enumerate(lines) if ln.startswith("$ ")]
            assert cmds, f"{b.where}: a console block with no '$ ' line"
            for n, i in enumerate(cmds):
                out = run_command_line(lines[i][2:], cwd, env, b.where)
                end = cmds[n + 1] if n + 1 < len(cmds) else len(lines)
                got = [" ".join(x.split()) for x in out.splitlines()]
                for shown in lines[i + 1 : end]:
                    assert " ".join(shown.split()) in got, (b.where, shown, out)
        else:
            for ln in b.text.splitlines():
                if ln.strip() and not ln.lstrip().startswith("#"):
                    run_command_line(ln, cwd, env, b.where)


# ---------------------------------------------------------------- the test


def _runner(unit: list[Block]) -> Any:
    langs = {b.lang for b in unit}
    marks = set().union(*(b.marks for b in unit))
    if langs == {"python"} and not marks & {"ci"}:
        return run_python
    if langs <= {"bash", "sh", "console"} and not marks & {"fragment", "pytest"}:
        return run_shell
    if langs <= {"python", "bash", "sh", "console"} and marks <= {"continue"}:
        return run_in_turn
    return None


def run_in_turn(unit: list[Block], cwd: Path, env: dict[str, str]) -> None:
    """A python block continued by shell blocks (or the reverse): each in turn, in one directory."""
    for block in unit:
        (run_python if block.lang == "python" else run_shell)([block], cwd, env)


@pytest.mark.parametrize("unit", UNITS, ids=[u[0].where for u in UNITS])
def test_code_block_runs(unit: list[Block], tmp_path: Path, request: pytest.FixtureRequest) -> None:
    runner = _runner(unit)
    assert runner is not None, (
        f"{unit[0].where}: no way to run a {'+'.join(b.lang for b in unit)} block with markers "
        f"{sorted(set().union(*(b.marks for b in unit)))}; mark it (see tests/test_docs.py) with "
        "<!-- docs-test: continue|s3|example|fragment|pytest|ci --> or fence it as ```text"
    )
    marks = set().union(*(b.marks for b in unit))
    extra: dict[str, str] = {}
    if "s3" in marks:
        extra = request.getfixturevalue("s3_server")
    if "example" in marks and any(b.lang == "console" for b in unit):
        request.getfixturevalue("example_installed")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    runner(unit, tmp_path, _env(tmp_path, marks, extra))
    if "s3" in marks:
        assert _s3_keys(extra), f"{unit[0].where}: nothing was written to s3://bucket"


def test_an_unmarked_block_of_unknown_kind_fails_with_how_to_mark_it(tmp_path: Path) -> None:
    md = tmp_path / "x.md"
    md.write_text("text\n<!-- docs-test: pytest -->\n```bash\necho hi\n```\n")
    [block] = parse(md)
    assert block.marks == {"pytest"} and block.text == "echo hi\n"
    assert _runner([block]) is None


def test_directive_fences_show_no_code_that_escapes_this_test(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```{toctree}\nintro\n```\n"
        "```{include} other.md\n```\n"
        "```{code-block} python\nprint(1)\n```\n"
        "```{eval-rst}\n.. code-block:: python\n\n   print(1)\n```\n"
    )
    (tmp_path / "other.md").write_text("```python\nprint(2)\n```\n")
    toctree, include, code_block, rst = parse(page)
    assert (toctree.lang, include.arg, code_block.arg) == ("{toctree}", "other.md", "python")
    check_directive(toctree)
    for bad, why in ((include, "whose code blocks"), (code_block, "not one known"), (rst, "code")):
        with pytest.raises(AssertionError, match=why):
            check_directive(bad)
