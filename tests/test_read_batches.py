"""``Batches.batch(i)``: a file's share of a group read at once, naming only that file's tags
as the file read alone names them, whatever mix of tags the group's files have."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tallyboard import Reader, SummaryWriter
from tallyboard.plugin.readers import Batches


def _group(rng: np.random.Generator, files: int, names: int) -> Batches:
    counts = rng.integers(0, 6, files)
    rows = int(counts.sum())
    return Batches(
        [None] * files,
        names=[f"tag{k}" for k in range(names)],
        codes=rng.integers(0, names, rows).astype(np.int32),
        step=np.arange(rows, dtype=np.int64),
        wall_time=np.arange(rows, dtype=np.float64),
        value=rng.random(rows),
        counts=counts,
    )


@pytest.mark.parametrize(("files", "names"), [(50, 3), (40, 17), (3000, 2000)])
def test_each_file_names_its_own_tags_in_order_with_its_rows(files: int, names: int) -> None:
    """(3000 files x 2000 tags takes the path that sorts each file's codes.)"""
    group = _group(np.random.default_rng(files), files, names)
    start = 0
    for i, n in enumerate(group.counts.tolist()):
        codes = group.codes[start : start + n]
        tags, steps, _, values = group.batch(i).scalars()
        assert tags.tolist() == [group.names[c] for c in codes.tolist()]
        assert steps.tolist() == group.step[start : start + n].tolist()
        assert values.tolist() == group.value[start : start + n].tolist()
        if n:
            names_i, codes_i, *_ = group.batch(i).columns[0]
            assert names_i == sorted(set(names_i), key=group.names.index)  # its own, once each
            assert len(names_i) == len(set(codes.tolist())) and codes_i.max() < len(names_i)
        start += n


def test_runs_with_different_tags_read_in_one_group_keep_their_own(tmp_path: Path) -> None:
    tags = {"a": ["loss"], "b": ["acc", "loss"], "c": ["acc"], "d": ["lr", "loss", "acc"]}
    for run, names in tags.items():
        with SummaryWriter(str(tmp_path / run)) as w:
            for step in range(4):
                for k, name in enumerate(names):
                    w.add_scalar(name, step + k / 10, step)
    update = Reader(str(tmp_path)).poll()
    for run, names in tags.items():
        got, steps, _, values = update.batches[run].scalars()
        assert got.tolist() == names * 4
        assert steps.tolist() == [s for s in range(4) for _ in names]
        assert values.tolist() == pytest.approx(
            [s + k / 10 for s in range(4) for k in range(len(names))]
        )
        assert sorted(update.batches[run].columns[0][0]) == sorted(names)
