"""``Aggregation``: how a :class:`~tallyboard.monitor.Stat` summarises a window of values."""

from __future__ import annotations

import enum


class Aggregation(enum.Enum):
    """What a :class:`Stat` computes over each window: VALUE, MEAN, COUNT, SUM, MAX or MIN.

    The names, order and ``.value`` numbers are torch.monitor's (VALUE 0, MEAN 2, COUNT 3, SUM
    4, MAX 5, MIN 6), and so are ``repr``, ``str`` and equality. In event data each appears in
    lower case: ``"<stat name>.mean"``. ``VALUE`` is the last value added in the window; in
    torch it is silently ignored (it never appears in events). Being an ``enum.Enum``,
    ``Aggregation(4) is Aggregation.SUM`` and ``Aggregation["SUM"]`` work, and numbers without a
    member (1, 7) are a ValueError. The members are also the module's constants ``VALUE``,
    ``MEAN``, ... .

    Example:
        >>> from tallyboard.monitor import Aggregation
        >>> [a.name for a in Aggregation]
        ['VALUE', 'MEAN', 'COUNT', 'SUM', 'MAX', 'MIN']
        >>> Aggregation.SUM.value
        4
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
