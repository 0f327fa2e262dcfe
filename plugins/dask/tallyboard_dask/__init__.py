"""Dask through tallyboard: a log dir as a lazy Dask DataFrame, and exports run on a cluster.

``tallyboard_dask.read(logdir, ...)`` takes :func:`tallyboard.read`'s selection and gives a
``dask.dataframe.DataFrame`` of one partition per share of runs, read by the workers;
``tallyboard export --dataset DIR --on dask://HOST:PORT`` writes the dataset's parts from the
workers. Needs ``pip install tallyboard[dask]``. Importing tallyboard never imports this package
(it registers no hooks), so Dask is imported only by code that uses it.
"""

from __future__ import annotations

from .frame import read

__all__ = ["read"]
