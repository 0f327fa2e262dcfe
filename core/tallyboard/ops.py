"""MindSpore-style summary operators, where MindSpore users look for them (``mindspore.ops``).

``from tallyboard import ops`` then ``ops.ScalarSummary()("loss", value)``: the value waits in a
process-wide cache until the next :meth:`tallyboard.SummaryRecord.record` in ``'train'`` mode
writes it with that step. The classes live in :mod:`tallyboard.faces.ops` (which keeps working);
this module only gives them MindSpore's import path.

Inside a MindSpore ``Cell``, keep MindSpore's own operators (``mindspore.ops.ScalarSummary``
and friends): ``tallyboard.SummaryRecord`` collects their values as MindSpore's record does.
"""

from __future__ import annotations

from tallyboard.faces.ops import HistogramSummary, ImageSummary, ScalarSummary, TensorSummary

__all__ = ["ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary"]
