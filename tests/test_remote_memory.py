"""log_dir as an fsspec ``memory://`` URL: part objects, blobs, and reading everything back."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import numpy as np
import pytest
from conftest import load_run
from tallyboard import SummaryWriter
from tallyboard.records.remote import RemoteAppendFile, part_name, read_parts


def test_tfevents_and_jsonl_on_memory_fs(tmp_path: Path) -> None:
    url = "memory://tallyboard-tests/run1"
    with SummaryWriter(url, sinks=["tfevents", "jsonl"]) as w:
        for i in range(30):
            w.add_scalar("x", float(i), i)
            if i % 10 == 9:
                w.flush()
        w.add_image("img", np.full((3, 4, 4), 255, dtype=np.uint8), 1)
    fs = fsspec.filesystem("memory")
    names = sorted(
        p.rsplit("/", 1)[1] for p in fs.find("/tallyboard-tests/run1") if "tfevents" in p
    )
    assert len(names) == 4 and names[1:] == [part_name(names[0], i) for i in (1, 2, 3)]
    local = tmp_path / "run"
    local.mkdir()
    for n in names:
        (local / n).write_bytes(fs.cat_file(f"/tallyboard-tests/run1/{n}"))
    assert [e.step for e in load_run(local).Scalars("x")] == list(range(30))
    lines = [json.loads(x) for x in read_parts(f"{url}/records.jsonl").splitlines()]
    image = lines[-1]["value"]
    assert image["file"]["path"] == "blobs/00000001.png"
    assert (
        fs.cat_file(f"/tallyboard-tests/run1/{image['file']['path']}")[:8] == b"\x89PNG\r\n\x1a\n"
    )


def test_remote_append_file_rules() -> None:
    f = RemoteAppendFile("memory://tallyboard-tests/rules.bin")
    f.write(b"abc")
    f.flush()
    with pytest.raises(FileExistsError):
        RemoteAppendFile("memory://tallyboard-tests/rules.bin")  # never shares or truncates
    f.write(b"defgh")
    f.truncate(5)  # only bytes not uploaded yet can go
    with pytest.raises(OSError, match="below its 3 uploaded bytes"):
        f.truncate(2)
    f.close()
    f.close()
    with pytest.raises(ValueError, match="closed"):
        f.write(b"x")
    assert (f.parts, f.bytes_uploaded) == (2, 5)
    assert read_parts("memory://tallyboard-tests/rules.bin") == b"abcde"
