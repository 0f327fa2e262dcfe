"""MindSpore, which :class:`~tallyboard.faces.summary_collector.SummaryCollector` and its parts
need: imported here once, with a message that says what to do when it is missing."""

from __future__ import annotations

try:
    import mindspore
    import mindspore.dataset
    from mindspore.train import Callback
except ImportError as exc:  # pragma: no cover - exercised in a child without MindSpore
    raise ImportError(
        "tallyboard.SummaryCollector is a callback for MindSpore's Model.train and needs MindSpore "
        "(pip install mindspore); without MindSpore, log with tallyboard.SummaryRecord or "
        f"tallyboard.SummaryWriter. ({exc})"
    ) from exc

__all__ = ["mindspore", "Callback"]
