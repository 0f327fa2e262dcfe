"""Rows as the writer thread hands them to a batch encoder: a sequence of 5-tuples over the
flat fields they were queued as, whose columns come without a tuple per row."""

from __future__ import annotations

from itertools import chain

import numpy as np
import pytest
from tallyboard.records.rows import QueuedRows, columns

ROWS = [(7, f"tag{i % 3}", i, 1.7e9 + i, float(i) / 3) for i in range(10)]


def queued(rows=ROWS):
    return QueuedRows(list(chain(*rows)))


def test_queued_rows_read_as_the_tuples_that_were_queued():
    rows = queued()
    assert len(rows) == 10
    assert list(rows) == ROWS
    assert [rows[i] for i in range(10)] == ROWS
    assert rows[-1] == ROWS[-1] and rows[-10] == ROWS[0]
    assert rows[0][0] == 7


@pytest.mark.parametrize(
    "index", [slice(3, 7), slice(None, 4), slice(8, None), slice(-3, None), slice(6, 2)]
)
def test_a_slice_of_queued_rows_is_the_slice_of_the_tuples(index):
    part = queued()[index]
    assert type(part) is QueuedRows
    assert list(part) == ROWS[index]
    assert columns(part) == columns(ROWS[index])


def test_a_stepped_slice_gives_the_tuples():
    assert queued()[::3] == ROWS[::3]
    assert queued()[::-1] == ROWS[::-1]


def test_columns_are_the_same_for_queued_rows_and_tuples():
    keys, tags, steps, walls, payloads = columns(queued())
    assert (keys, tags, steps, walls, payloads) == columns(ROWS)
    assert tags == [row[1] for row in ROWS]
    assert payloads == [row[4] for row in ROWS]
    assert columns([]) == ([], [], [], [], [])
    assert columns(QueuedRows([])) == ([], [], [], [], [])


def test_array_payloads_stay_the_same_objects():
    arrays = [np.arange(4) + i for i in range(3)]
    rows = queued([(1, "img", i, 0.0, a) for i, a in enumerate(arrays)])
    assert all(got is want for got, want in zip(columns(rows)[4], arrays))
    assert rows[2][4] is arrays[2]


def test_a_row_index_out_of_range_says_which_and_of_how_many():
    with pytest.raises(IndexError, match="row 10 of 10"):
        queued()[10]
    with pytest.raises(IndexError, match="row -11 of 10"):
        queued()[-11]
    with pytest.raises(IndexError, match="field 5: a row has fields 0 to 4"):
        queued().column(5)


def test_fields_that_are_not_whole_rows_are_refused():
    with pytest.raises(ValueError, match="7 fields are not whole rows of 5"):
        QueuedRows(list(range(7)))


def test_tuples_of_other_lengths_are_refused_by_columns():
    with pytest.raises(ValueError):
        columns([(1, "a", 0, 0.0, 1.0), (1, "a", 0, 0.0)])
