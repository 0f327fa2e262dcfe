"""``Aggregation``: how a :class:`~tallyboard.monitor.Stat` summarises a window of values."""

from __future__ import annotations

import enum


class Aggregation(enum.Enum):
    """An aggregation a :class:`~tallyboard.monitor.Stat` computes over each window.

    Same names, order and ``.value`` numbers as ``torch.monitor.Aggregation``. Unlike torch,
    ``VALUE`` works: it is the last value added in the window (event key ``"<name>.value"``).
    """

    VALUE = 0
    MEAN = 2
    COUNT = 3
    SUM = 4
    MAX = 5
    MIN = 6


VALUE = Aggregation.VALUE
MEAN = Aggregation.MEAN
COUNT = Aggregation.COUNT
SUM = Aggregation.SUM
MAX = Aggregation.MAX
MIN = Aggregation.MIN

#: Every member in declaration order: the order of ``Stat.get()`` keys and event data.
ORDER: tuple[Aggregation, ...] = tuple(Aggregation)
