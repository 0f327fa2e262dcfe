"""The shared checks behind issue 19's writing fixes: text, flags, sub-run paths."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from tallyboard import paths
from tallyboard.values import check_flag, check_tag, check_text, check_utf8_array


def test_check_text_takes_any_writable_str_and_names_the_argument() -> None:
    assert check_text("h\u00e9 \U0001f600", "title") == "h\u00e9 \U0001f600"
    with pytest.raises(ValueError, match=r"title 'a\\udfffb' cannot be written as UTF-8.*index 1"):
        check_text("a\udfffb", "title")
    with pytest.raises(TypeError, match="title must be a str, got bytes"):
        check_text(b"x", "title")
    assert check_tag("loss") == "loss"


def test_check_utf8_array_names_the_first_bad_element() -> None:
    ok = np.array([["a", "\u00e9"], ["\U0001f600", ""]])
    assert check_utf8_array(ok, "tensor") is ok
    bad = np.array([["a", "b"], ["c", "x\ud800"]])
    with pytest.raises(ValueError, match=r"tensor\[1\]\[1\] 'x\\ud800'"):
        check_utf8_array(bad, "tensor")
    with pytest.raises(ValueError, match=r"tensor 'x\\udc80'"):
        check_utf8_array(np.array("x\udc80"), "tensor")  # 0-d
    strided = np.array(["ok", "x\ud800", "ok", "ok"])[::2]  # a view that skips the bad one
    assert check_utf8_array(strided, "tensor") is strided
    assert check_utf8_array(np.array([b"\xff"]), "tensor").dtype.kind == "S"  # bytes are bytes


def test_check_flag_takes_what_torch_takes_and_refuses_what_has_no_truth_value() -> None:
    assert check_flag(True, "close") is True
    assert check_flag(0, "close") is False
    assert check_flag(np.bool_(True), "close") is True
    with pytest.raises(TypeError, match="close must be a bool"):
        check_flag(np.zeros(3), "close")


@pytest.mark.parametrize("rel", ["a\ud800", "a/\udcff/b"])
def test_safe_relpath_refuses_names_no_file_system_can_hold_as_utf8(rel: str) -> None:
    with pytest.raises(ValueError, match="run_name .* lone surrogate"):
        paths.safe_relpath(rel, "run_name")


def test_resolve_inside(tmp_path: Path) -> None:
    base = tmp_path / "log"
    (base / "in").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", base / "out_link")
    os.symlink(base / "in", base / "in_link")
    os.symlink("..", base / "up")
    assert paths.resolve_inside(str(base), "new/run", "run") == str(base / "new" / "run")
    assert paths.resolve_inside(str(base), "in_link/x", "run") == str(base / "in_link" / "x")
    for rel in ("out_link", "out_link/deeper", "up/log_sibling"):
        with pytest.raises(ValueError, match="leads outside the log dir"):
            paths.resolve_inside(str(base), rel, "run")
    link = tmp_path / "log_link"
    os.symlink(base, link)  # the log dir itself behind a link
    assert paths.resolve_inside(str(link), "in_link", "run") == str(link / "in_link")
    assert paths.resolve_inside("memory://bucket/run", "a/b", "run") == "memory://bucket/run/a/b"
