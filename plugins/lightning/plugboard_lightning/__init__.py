"""PyTorch Lightning through plugboard: ``Trainer(logger=PlugboardLogger("runs"))``.

Needs ``pip install plugboard[lightning]``. Importing plugboard never imports this package (it
registers no hooks), so Lightning is imported only by code that uses it.
"""

from __future__ import annotations

from .logger import PlugboardLogger

__all__ = ["PlugboardLogger"]
