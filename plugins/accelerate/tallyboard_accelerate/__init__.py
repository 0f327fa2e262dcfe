"""Hugging Face Accelerate through tallyboard: ``Accelerator(log_with=TallyboardTracker(...))``.

Needs ``pip install tallyboard[accelerate]``. Importing tallyboard never imports this package (it
registers no hooks), so Accelerate is imported only by code that uses it.
"""

from __future__ import annotations

from .tracker import TallyboardTracker

__all__ = ["TallyboardTracker"]
