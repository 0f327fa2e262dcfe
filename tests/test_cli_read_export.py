"""``tallyboard export`` writes through the sinks that declare ``SinkSpec.export``: the built-in
csv, jsonl and parquet sinks, and a third-party sink registered the way a plugin is."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest
from tallyboard import SinkSpec, SummaryWriter, hookimpl
from tallyboard.plugin.tables import TableExport, TableOptions, text_cell

pytest_plugins = ["tallyboard.testing"]

T = 1_700_000_000.0  # a fixed wall time, so the files below are exact


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export") / "runs"
    for seed in range(2):
        with SummaryWriter(str(root / f"seed{seed}")) as w:
            for step in range(3):
                w.add_scalar("loss", 0.25 * step + seed, step, walltime=T + step)  # float32-exact
                w.add_histogram("h", np.array([0.0, 0.5, 1.0, 1.0]), step, bins=2, walltime=T)
    return root


def export(*args: str) -> tuple[int, str]:
    """``tallyboard export ARGS`` in this process: its exit status and what it wrote to stderr."""
    from tallyboard.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(["export", *args])
        except SystemExit as stop:  # argparse's usage errors
            status = stop.code if isinstance(stop.code, int) else 1
    return status, err.getvalue()


class TsvTable:
    """A third-party export target: tab-separated lines, the header first; every call kept."""

    calls: list[tuple[str, Any]] = []

    def __init__(self, file: BinaryIO, options: TableOptions) -> None:
        self.file, self.header = file, False
        self.calls.append(("open", (options.kind, options.columns, options.types)))

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.calls.append(("write", (tuple(columns), len(rows))))
        lines = [] if self.header else ["\t".join(columns)]
        self.header = True
        lines += ["\t".join(map(str, row)) for row in rows]
        self.file.write("".join(line + "\n" for line in lines).encode())

    def close(self) -> None:
        self.calls.append(("close", None))


def _refuse(options: Any) -> Any:
    raise ValueError("the tsv sink exports only")


class TsvPlugin:
    """Registers the ``tsv`` sink, an export target for ``.tsv`` files."""

    def __init__(self, name: str = "tsv", export: TableExport | None = None) -> None:
        self.name = name
        self.export = export or TableExport(formats=("tsv",), open=TsvTable, cell=text_cell)

    @hookimpl
    def register_sinks(self, register: Any) -> None:
        register(SinkSpec(name=self.name, open=_refuse, export=self.export))


def test_a_third_party_sink_is_an_export_target_chosen_by_suffix_and_format(
    logdir: Path, tmp_path: Path, register_plugin: Any
) -> None:
    register_plugin(TsvPlugin(), "tsv-test")
    TsvTable.calls.clear()
    out = tmp_path / "scalars.tsv"
    status, err = export(str(logdir), "-o", str(out))
    assert status == 0, err
    assert err == f"wrote 6 scalars to {out}\n"
    assert out.read_text().splitlines() == [
        "run\ttag\tstep\twall_time\tvalue",
        *(f"seed{s}\tloss\t{i}\t{T + i}\t{0.25 * i + s}" for s in range(2) for i in range(3)),
    ]
    assert TsvTable.calls[0] == (
        "open",
        ("scalar", ("run", "tag", "step", "wall_time", "value"), (str, str, int, float, float)),
    )
    assert TsvTable.calls[-1] == ("close", None)
    # another kind: the columns are the first rows', each field a text cell (lists as JSON)
    odd = tmp_path / "histograms.txt"
    status, err = export(str(logdir), "-o", str(odd), "--kind", "histogram", "--format", "tsv")
    assert status == 0, err
    header, *lines = odd.read_text().splitlines()
    assert header.split("\t")[:4] == ["run", "tag", "step", "wall_time"]
    first = dict(zip(header.split("\t"), lines[0].split("\t")))
    assert json.loads(first["bucket_limit"]) == [0.0, 0.5, 1.0]
    assert len(lines) == 6
    # and it is one of the choices --format offers
    status, err = export(str(logdir), "-o", str(odd), "--format", "xml")
    assert status == 2 and "'tsv'" in err and "'csv'" in err and "'parquet'" in err
    from tallyboard.cli.read import CliError, cmd_export

    with pytest.raises(CliError, match=r"--format xml: no installed sink exports it; formats: "):
        cmd_export(str(logdir), str(odd), "xml", None, None, True)
    with pytest.raises(CliError, match=r"use a \.csv, \.jsonl, \.parquet or \.tsv name"):
        cmd_export(str(logdir), str(tmp_path / "x.dat"), None, None, None, True)


def test_a_format_two_sinks_claim_is_written_by_the_first_by_name(
    logdir: Path, tmp_path: Path, register_plugin: Any
) -> None:
    class Upper(TsvTable):
        def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
            self.file.write(b"UPPER\n")

    register_plugin(TsvPlugin("tsv_b"), "tsv-b")
    register_plugin(
        TsvPlugin("tsv_a", TableExport(formats=("tsv",), open=Upper, cell=str)), "tsv-a"
    )
    out = tmp_path / "x.tsv"
    status, err = export(str(logdir), "-o", str(out), "--runs", "seed0")
    assert status == 0, err
    assert out.read_text() == "UPPER\n"


def test_a_target_that_refuses_rows_is_one_line_and_leaves_no_file(
    logdir: Path, tmp_path: Path, register_plugin: Any
) -> None:
    class Refuses(TsvTable):
        def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
            raise ValueError("the step column must not hold 0")

    register_plugin(
        TsvPlugin("tsv", TableExport(formats=("tsv",), open=Refuses, cell=str)), "tsv-refuses"
    )
    status, err = export(str(logdir), "-o", str(tmp_path / "x.tsv"))
    assert status == 1
    assert err == "tallyboard export: the step column must not hold 0\n"
    assert list(tmp_path.iterdir()) == []  # neither the output nor its .partial


def test_rows_of_a_target_without_fixed_columns_keep_their_own_fields(
    tmp_path: Path, register_plugin: Any
) -> None:
    # an event-file run (image rows without a path) and a jsonl run (with the blob's path)
    with SummaryWriter(str(tmp_path / "runs" / "a")) as w:
        w.add_image("img", np.zeros((3, 2, 2)), 0, walltime=T)
    with SummaryWriter(str(tmp_path / "runs" / "b"), sinks=["jsonl"]) as w:
        w.add_image("img", np.zeros((3, 2, 2)), 0, walltime=T)
    free = TableExport(formats=("tsv",), open=TsvTable, cell=text_cell, fixed_columns=False)
    register_plugin(TsvPlugin("tsv", free), "tsv-free")
    TsvTable.calls.clear()
    status, err = export(str(tmp_path / "runs"), "-o", str(tmp_path / "x.tsv"), "--kind", "image")
    assert status == 0, err
    assert "left out" not in err
    writes = [cols for what, (cols, _) in TsvTable.calls[1:-1] if what == "write"]
    assert len(writes) == 2 and "path" not in writes[0] and "path" in writes[1]
    # the same rows to csv (fixed columns): the later field is left out, with one note
    status, err = export(str(tmp_path / "runs"), "-o", str(tmp_path / "x.csv"), "--kind", "image")
    assert status == 0, err
    assert "columns ['path'] appear after the first file and are left out" in err
    assert "(export as jsonl to keep every field)" in err


def test_the_builtin_targets_write_the_documented_cells(logdir: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    status, err = export(str(logdir), "-o", str(tmp_path / "s.parquet"))
    assert status == 0, err
    assert pq.read_schema(tmp_path / "s.parquet") == pa.schema(
        [
            ("run", pa.string()),
            ("tag", pa.string()),
            ("step", pa.int64()),
            ("wall_time", pa.float64()),
            ("value", pa.float64()),
        ]
    )
    status, err = export(str(logdir), "-o", str(tmp_path / "s.csv"), "--runs", "seed1")
    assert status == 0, err
    assert (tmp_path / "s.csv").read_text() == (
        "run,tag,step,wall_time,value\n"
        "seed1,loss,0,1700000000.0,1.0\n"
        "seed1,loss,1,1700000001.0,1.25\n"
        "seed1,loss,2,1700000002.0,1.5\n"
    )
    for fmt in ("csv", "jsonl", "parquet"):
        path = tmp_path / f"h.{fmt}"
        status, err = export(str(logdir), "-o", str(path), "--kind", "histogram", "--runs", "seed0")
        assert status == 0, err
        if fmt == "parquet":
            row = pq.read_table(path).to_pylist()[0]
        elif fmt == "jsonl":
            row = json.loads(path.read_text().splitlines()[0])
        else:
            with open(path, newline="") as fh:
                row = next(csv.DictReader(fh))
            row["bucket"] = json.loads(row["bucket"])  # a list is its JSON text in csv
        assert row["bucket"] == [0.0, 1.0, 3.0]


def test_the_parquet_sink_refuses_a_writers_values_and_says_where_they_go(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match=r"tallyboard export LOGDIR -o out.parquet"):
        SummaryWriter(str(tmp_path / "run"), sinks=["parquet"])


def test_a_table_export_is_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="lowercase identifiers"):
        TableExport(formats=(".csv",), open=TsvTable, cell=str)
    with pytest.raises(ValueError, match="lowercase identifiers"):
        TableExport(formats="tsv", open=TsvTable, cell=str)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="open must be callable"):
        TableExport(formats=("tsv",), open=None, cell=str)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cell must be callable"):
        TableExport(formats=("tsv",), open=TsvTable, cell="text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fixed_columns must be a bool"):
        TableExport(formats=("tsv",), open=TsvTable, cell=str, fixed_columns=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="export must be a tallyboard.plugin.tables.TableExport"):
        SinkSpec(name="tsv", open=_refuse, export=("tsv",))  # type: ignore[arg-type]


def test_convert_and_sync_refuse_a_sink_that_only_exports(logdir: Path, tmp_path: Path) -> None:
    """``--to parquet`` converted or synced nothing and said it succeeded: every value was one
    the target 'cannot hold'. Now it is refused, naming the sinks that hold values."""
    from tallyboard import convert
    from tallyboard.cli import main
    from tallyboard.reading.sync import sync

    with pytest.raises(ValueError, match=r"sink 'parquet' holds no logged values.*: csv, jsonl"):
        convert(str(logdir), str(tmp_path / "out"), to="parquet")
    with pytest.raises(ValueError, match=r"sink 'parquet' holds no logged values"):
        sync(str(logdir), "parquet")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["convert", str(logdir), str(tmp_path / "out2"), "--to", "parquet"]) == 1
    assert "holds no logged values" in err.getvalue()
    assert not (tmp_path / "out").exists() and not (tmp_path / "out2").exists()
    assert not list(logdir.glob(".tallyboard-sync*"))  # sync remembered nothing
