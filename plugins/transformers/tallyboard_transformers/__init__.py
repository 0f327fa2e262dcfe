"""Hugging Face transformers through tallyboard: ``Trainer(callbacks=[TallyboardCallback()])``.

Needs ``pip install tallyboard[transformers]``. Importing tallyboard never imports this package
(it registers no hooks), so transformers is imported only by code that uses it.
"""

from __future__ import annotations

from .callback import TallyboardCallback

__all__ = ["TallyboardCallback"]
