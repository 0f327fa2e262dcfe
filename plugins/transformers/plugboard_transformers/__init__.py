"""Hugging Face transformers through plugboard: ``Trainer(callbacks=[PlugboardCallback()])``.

Needs ``pip install plugboard[transformers]``. Importing plugboard never imports this package
(it registers no hooks), so transformers is imported only by code that uses it.
"""

from __future__ import annotations

from .callback import PlugboardCallback

__all__ = ["PlugboardCallback"]
