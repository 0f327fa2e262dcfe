"""Reading the csv and jsonl sinks' files back: round trips checked against TensorBoard's reader of
the event file the same writer wrote, live and damaged files, chunk edges, remote parts."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pytest
from conftest import load_run
from tallyboard import SummaryWriter, read
from tallyboard.plugin.readers import Batch, ReadWarning
from tallyboard.reading.runs import RunReader

TAGS = ("loss", "a,b", 'say "hi"', "two\nlines", "ünï")


def _split_sinks(
    tmp_path: Path, log: Any, sinks: tuple[str, ...] = ("tfevents", "csv", "jsonl")
) -> tuple[Path, Path, Path]:
    """Log through several sinks at once, then give each format its own directory."""
    src = tmp_path / "src"
    with SummaryWriter(str(src), sinks=list(sinks)) as w:
        log(w)
    dirs = tfe, csv, jsonl = tmp_path / "events", tmp_path / "csv", tmp_path / "jsonl"
    for d in dirs:
        d.mkdir()
    for p in src.iterdir():
        if "tfevents" in p.name:
            shutil.move(p, tfe / p.name)
        elif p.suffix == ".csv":
            shutil.move(p, csv / p.name)
        else:  # records.jsonl and blobs/
            shutil.move(p, jsonl / p.name)
    return tfe, csv, jsonl


def _log_scalars(w: Any) -> None:
    for i in range(40):
        for k, tag in enumerate(TAGS):
            w.add_scalar(tag, i / 3 + k, i)
    w.add_scalar("special", math.inf, 40)
    w.add_scalar("special", -math.inf, 41)
    w.add_scalar("big", 0.25, 2**40)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_scalars_match_event_accumulator_of_the_same_writer(tmp_path: Path, fmt: str) -> None:
    tfe, csv, jsonl = _split_sinks(tmp_path, _log_scalars)
    df = read(str(csv if fmt == "csv" else jsonl))
    acc = load_run(tfe)
    assert (
        sorted(set(df["tag"])) == sorted(acc.Tags()["scalars"]) == sorted([*TAGS, "special", "big"])
    )
    for tag in acc.Tags()["scalars"]:
        got, want = df[df.tag == tag], acc.Scalars(tag)
        assert got["step"].tolist() == [e.step for e in want], tag
        assert got["wall_time"].tolist() == [e.wall_time for e in want], tag
        # event files hold float32; the text formats hold the float64 that was logged
        assert np.array_equal(got["value"].astype(np.float32), [e.value for e in want]), tag
    assert df[df.tag == "loss"]["value"].tolist() == [i / 3 for i in range(40)]


def test_csv_reads_what_pandas_reads(tmp_path: Path) -> None:
    _, csv, _ = _split_sinks(tmp_path, _log_scalars)
    df = read(str(csv))
    want = pd.read_csv(csv / "scalars.csv")
    assert df["tag"].tolist() == want["tag"].tolist()
    assert df["step"].tolist() == want["step"].tolist()
    assert df["wall_time"].tolist() == want["wall_time"].tolist()
    assert np.array_equal(df["value"], want["value"])


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_missing_step_reads_as_zero_and_subruns_are_runs(tmp_path: Path, fmt: str) -> None:
    with SummaryWriter(str(tmp_path), sinks=[fmt]) as w:
        w.add_scalar("nostep", 2.0)
        w.add_scalars("main", {"x": 1.0, "y": 2.0}, 6)
    df = read(str(tmp_path))
    assert df[df.run == "."]["step"].tolist() == [0]
    assert sorted(df["run"].unique()) == [".", "main_x", "main_y"]
    assert df[df.run == "main_y"][["tag", "step", "value"]].values.tolist() == [["main", 6, 2.0]]


def test_jsonl_kinds_match_event_accumulator_of_the_same_writer(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (3, 6, 5), dtype=np.uint8)
    sound = np.sin(np.linspace(0, 60, 800))

    def log(w: Any) -> None:
        w.add_text("note", "hello **world**\nünï", 1)
        for step in range(3):
            w.add_histogram("h", rng.normal(size=100) + step, step)
        w.add_image("pic", img, 4)
        w.add_audio("au", sound, 5, sample_rate=8000)

    tfe, _, jsonl = _split_sinks(tmp_path, log, ("tfevents", "jsonl"))
    acc = load_run(tfe)
    text = read(str(jsonl), kind="text")
    assert text["value"].tolist() == ["hello **world**\nünï"]
    # the jsonl tag is the tag logged; event files add torch's /text_summary
    assert [t + "/text_summary" for t in text["tag"]] == acc.Tags()["tensors"]
    hist = read(str(jsonl), kind="histogram")
    assert list(hist.columns) == list(read(str(tfe), kind="histogram").columns)
    for (_, row), ev in zip(hist.iterrows(), acc.Histograms("h")):
        h = ev.histogram_value
        assert (row["step"], row["wall_time"]) == (ev.step, ev.wall_time)
        assert (row["min"], row["max"], row["num"], row["sum"]) == (h.min, h.max, h.num, h.sum)
        assert row["sum_squares"] == h.sum_squares
        assert row["bucket_limit"] == list(h.bucket_limit) and row["bucket"] == list(h.bucket)
    (image,) = [r for _, r in read(str(jsonl), kind="image").iterrows()]
    (want_img,) = acc.Images("pic")
    assert (image["width"], image["height"], image["colorspace"]) == (5, 6, 3)
    assert (want_img.width, want_img.height) == (5, 6)
    assert image["data"] == want_img.encoded_image_string
    assert image["path"].endswith("blobs/00000001.png")
    (audio,) = [r for _, r in read(str(jsonl), kind="audio").iterrows()]
    (want_au,) = acc.Audio("au")
    assert audio["data"] == want_au.encoded_audio_string
    assert (audio["sample_rate"], audio["length"]) == (want_au.sample_rate, want_au.length_frames)
    assert (audio["num_channels"], audio["content_type"]) == (1, want_au.content_type)
    tfe_audio = read(str(tfe), kind="audio")
    assert set(tfe_audio.columns) == set(read(str(jsonl), kind="audio").columns) - {"path"}


def _steps(batch: Batch) -> list[int]:
    return [int(s) for s in batch.scalars()[1]]


def _live(path: Path, fmt: str) -> tuple[Path, bytes, bytes]:
    """A run whose file ends in a torn line; returns the file, the torn piece, its completion."""
    with SummaryWriter(str(path), sinks=[fmt]) as w:
        for i in range(3):
            w.add_scalar("x", float(i), i)
    f = path / ("scalars.csv" if fmt == "csv" else "records.jsonl")
    if fmt == "csv":
        line = b"1.5,3,x,7.25\n"
    else:
        line = b'{"wall_time":1.5,"step":3,"tag":"x","kind":"scalar","value":7.25}\n'
    return f, line[:9], line[9:]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_torn_last_line_is_left_for_the_next_read_and_reads_yield_only_new(
    tmp_path: Path, fmt: str
) -> None:
    f, head, tail = _live(tmp_path, fmt)
    with f.open("ab") as out:
        out.write(head)
    reader = RunReader(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a torn line is not damage
        ((_, first),) = reader.read()
        assert _steps(first) == [0, 1, 2]
        ((_, again),) = reader.read()
        assert _steps(again) == []
        with f.open("ab") as out:
            out.write(tail)
        ((_, second),) = reader.read()
    _, steps, walls, values = second.scalars()
    assert (steps.tolist(), values.tolist(), walls.tolist()) == ([3], [7.25], [1.5])
    ((_, third),) = reader.read()
    assert _steps(third) == []


@pytest.mark.filterwarnings("ignore:sink 'csv' cannot encode kind 'text'")
def test_live_writer_flushes_are_read_incrementally(tmp_path: Path) -> None:
    w = SummaryWriter(str(tmp_path), sinks=["csv", "jsonl"])
    reader = RunReader(str(tmp_path))
    seen: list[list[int]] = []
    for start in (0, 5):
        for i in range(start, start + 5):
            w.add_scalar("x", float(i), i)
            w.add_text("t", f"note {i}", i)
        w.flush()
        batches = reader.read()
        seen.append(sorted(s for _, b in batches for s in _steps(b)))
        texts = [r["value"] for _, b in batches for r in b.rows.get("text", [])]
        assert texts == [f"note {i}" for i in range(start, start + 5)]
    w.close()
    assert seen == [[*range(5)], [*range(5, 10)]]  # the csv mirror is not read a second time


def test_csv_malformed_rows_warn_with_offset_and_reading_goes_on(tmp_path: Path) -> None:
    rows = [b"wall_time,step,tag,value\n", b"1.0,1,x,1.5\n", b"1.0,2,x\n", b"1.0,3,x,oops\n"]
    rows += [b'1.0,4,"un"closed,2\n', b"1.0,5,x,2.5\n", b'1.0,6,"q,""t""",3.5\n']
    (tmp_path / "scalars.csv").write_bytes(b"".join(rows))
    offsets = [sum(len(r) for r in rows[:i]) for i in range(len(rows))]
    with pytest.warns(ReadWarning) as rec:
        df = read(str(tmp_path))
    messages = [str(r.message) for r in rec]
    assert len(messages) == 3
    for msg, i in zip(messages, (2, 3, 4)):
        assert "scalars.csv" in msg and msg.endswith(f"at offset {offsets[i]}"), msg
    assert df["step"].tolist() == [1, 5, 6]
    assert df["tag"].tolist() == ["x", "x", 'q,"t"']


def test_csv_with_another_header_is_reported_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "scalars.csv").write_text("run,tag,step,wall_time,value\n.,x,1,1.0,2.0\n")
    with pytest.warns(ReadWarning, match="not a tallyboard scalars CSV.*at offset 0"):
        assert read(str(tmp_path)).empty


def test_jsonl_malformed_lines_warn_with_offset_and_reading_goes_on(tmp_path: Path) -> None:
    good = {"wall_time": 1.0, "step": 1, "tag": "x", "kind": "scalar", "value": 1.5}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({**good, "step": "two"}),
        json.dumps({k: v for k, v in good.items() if k != "tag"}),
        json.dumps({**good, "value": "high"}),
        json.dumps({**good, "kind": "histogram", "value": {"min": 1}}),
        json.dumps(
            {
                **good,
                "kind": "image",
                "value": {
                    "file": {"path": "blobs/9.png", "content_type": "image/png", "bytes": 3},
                    "height": 1,
                    "width": 1,
                    "channels": 3,
                },
            }
        ),
        json.dumps([1, 2]),
        json.dumps({**good, "step": 2}),
    ]
    data = [(line + "\n").encode() for line in lines]
    (tmp_path / "records.jsonl").write_bytes(b"".join(data))
    offsets = [sum(len(d) for d in data[:i]) for i in range(len(data))]
    with pytest.warns(ReadWarning) as rec:
        reader = RunReader(str(tmp_path))
        ((_, batch),) = reader.read()
    messages = [str(r.message) for r in rec]
    for msg, i in zip(messages, (1, 2, 3, 4, 5, 6, 7), strict=True):
        assert "records.jsonl" in msg and msg.endswith(f"at offset {offsets[i]}"), msg
    assert "side file blobs/9.png is missing" in messages[5]
    assert _steps(batch) == [1, 2]
    (image,) = batch.rows["image"]  # the metadata of an image whose file is gone is still read
    assert (image["width"], image["data"]) == (1, None)
    assert "histogram" not in batch.rows


def test_jsonl_kind_without_a_decoder_reads_its_json_value(tmp_path: Path) -> None:
    line = {"wall_time": 2.0, "step": 3, "tag": "t", "kind": "lineage", "value": {"a": [1, 2]}}
    (tmp_path / "records.jsonl").write_text(json.dumps(line) + "\n")
    df = read(str(tmp_path), kind="lineage")
    assert df.to_dict("records") == [
        {"run": ".", "tag": "t", "step": 3, "wall_time": 2.0, "value": {"a": [1, 2]}}
    ]


def test_side_file_paths_outside_blobs_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("no")
    ref = {"path": "../secret.txt", "content_type": "text/plain", "bytes": 2}
    line = {"wall_time": 2.0, "step": 3, "tag": "t", "kind": "image"}
    line["value"] = {"file": ref, "height": 1, "width": 1, "channels": 1}
    (tmp_path / "records.jsonl").write_text(json.dumps(line) + "\n")
    (row,) = read(str(tmp_path), kind="image").to_dict("records")
    assert row["data"] is None and row["path"] is None


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_rows_straddling_tiny_chunks_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    _, csv, jsonl = _split_sinks(tmp_path, _log_scalars)
    path = str(csv if fmt == "csv" else jsonl)
    whole = read(path)
    from tallyboard.plugin.readers import ChunkedFileReader

    for chunk in (1, 7, 64):
        monkeypatch.setattr(ChunkedFileReader, "chunk_size", chunk)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert read(path).equals(whole), chunk


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_remote_part_objects_are_read_in_order(fmt: str) -> None:
    url = f"memory://tallyboard-read-tests-{fmt}/run"
    with SummaryWriter(url, sinks=[fmt]) as w:
        for i in range(30):
            w.add_scalar("x", float(i), i)
            if i % 10 == 9:
                w.flush()
    fs = fsspec.filesystem("memory")
    names = {p.rsplit("/", 1)[1] for p in fs.find(f"/tallyboard-read-tests-{fmt}/run")}
    name = "scalars.csv" if fmt == "csv" else "records.jsonl"
    assert {name, f"{name}.part00000001", f"{name}.part00000002"} <= names
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            df = read(url)
        assert df["step"].tolist() == list(range(30))
    finally:
        fs.rm(f"/tallyboard-read-tests-{fmt}", recursive=True)


def test_csv_unclosed_quote_is_damage_in_that_row_only(tmp_path: Path) -> None:
    from tallyboard_csv.reader import MAX_QUOTED

    head = b'wall_time,step,tag,value\n1.0,0,"open,1.0\n'
    rows = b"".join(b"1.0,%d,x,%d.5\n" % (i, i) for i in range(1, MAX_QUOTED // 8))
    (tmp_path / "scalars.csv").write_bytes(head + rows)
    with pytest.warns(ReadWarning, match="malformed CSV row.*at offset 25$"):
        df = read(str(tmp_path))
    assert df["step"].tolist() == list(range(1, MAX_QUOTED // 8))
