"""Optuna through tallyboard: ``study.optimize(objective, callbacks=[TallyboardCallback("runs")])``.

Each finished trial is a run ``<dirname>/trial-<number>`` with its params as the hyper-parameters
of an HPARAMS session, its value as a scalar and the values it reported as a curve, so
``tallyboard.read(dirname, kind="hparams")`` gives the study as one table. Needs ``pip install
tallyboard[optuna]``. Importing tallyboard never imports this package (it registers no hooks).
"""

from __future__ import annotations

from .callback import TallyboardCallback

__all__ = ["TallyboardCallback"]
