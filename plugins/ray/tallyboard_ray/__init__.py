"""Ray Data through tallyboard: a log dir as a Ray ``Dataset``, and exports run on a cluster.

``tallyboard_ray.read(logdir, ...)`` takes :func:`tallyboard.read`'s selection and gives a
``ray.data.Dataset`` read by a datasource (:class:`TallyboardDatasource`) in one read task per
share of runs; ``tallyboard export --dataset DIR --on ray`` (or ``--on ray://HOST:PORT``) writes
the dataset's parts from Ray tasks. Needs ``pip install tallyboard[ray]``. Importing tallyboard
never imports this package (it registers no hooks), so Ray is imported only by code that uses it.
"""

from __future__ import annotations

from .datasource import TallyboardDatasource, read

__all__ = ["TallyboardDatasource", "read"]
