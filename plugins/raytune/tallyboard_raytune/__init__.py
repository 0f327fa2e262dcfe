"""Ray Tune through tallyboard: ``RunConfig(callbacks=[TallyboardLoggerCallback()])``.

Every trial writes a run of its own: its config as the hyper-parameters of an HPARAMS session
(written when the trial starts, ended with how it ended) and every number it reports as a
scalar, so ``tallyboard.read(experiment_dir, kind="hparams")`` gives the sweep as one table.
Needs ``pip install tallyboard[raytune]``. Importing tallyboard never imports this package (it
registers no hooks), so Ray is imported only by code that uses it.
"""

from __future__ import annotations

from .callback import TallyboardLoggerCallback

__all__ = ["TallyboardLoggerCallback"]
