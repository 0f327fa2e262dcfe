"""PyTorch Lightning through tallyboard: ``Trainer(logger=TallyboardLogger("runs"))``.

Needs ``pip install tallyboard[lightning]``. Importing tallyboard never imports this package (it
registers no hooks), so Lightning is imported only by code that uses it.
"""

from __future__ import annotations

from .logger import TallyboardLogger

__all__ = ["TallyboardLogger"]
