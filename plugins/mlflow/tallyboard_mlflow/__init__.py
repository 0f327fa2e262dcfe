"""The ``mlflow`` sink: scalars as MLflow metrics, hparams as params, text/images/audio as artifacts.

``SummaryWriter("runs/exp1", sinks=["tfevents", "mlflow"])`` keeps an MLflow tracking store
inside the log dir (``runs/exp1/mlflow/mlflow.db``, artifacts in ``runs/exp1/mlflow/artifacts``),
so nothing is written elsewhere; ``sinks=["tfevents", "mlflow+http://127.0.0.1:5000"]`` (any
MLflow tracking URI after ``mlflow+``) logs to that tracking server or store instead (a
``sqlite:///`` store keeps new experiments' artifacts in ``artifacts/`` beside it). The
experiment is named after the log dir's parent directory (``runs``) unless
``MLFLOW_EXPERIMENT_NAME`` names one, the run after the log dir (``exp1``), with the tags
``mlflow.start_run`` sets (``mlflow.user``, ``mlflow.source.*``). The log dir's
``.tallyboard-mlflow.json`` names the run, so a writer that opens the log dir again (in any
process) continues it, and ``tallyboard sync`` finds it. Sub-runs of the writer (``add_scalars``
keys, ``add_hparams`` trials) become nested runs named by their relative path.

Logging never waits for MLflow: the sink is a :class:`tallyboard.plugin.network.NetworkSink`,
values are queued and a background thread sends them in ``log_batch`` calls every
``flush_secs`` (10 s at most) or as soon as 1000 are waiting. ``flush()`` and ``close()`` wait
for MLflow at most the ``deadline`` setting
(``sinks=[("mlflow+http://host:5000", {"deadline": 60})]``, ``tallyboard sync ... -s
deadline=60``), else ``TALLYBOARD_MLFLOW_DEADLINE`` seconds, else 30, whatever the network
does: each request to a tracking server is sent once under a timeout within that deadline, never
retried by MLflow's HTTP layer (:mod:`tallyboard_mlflow.calls`), so none is still being
retried after ``close()``; the other :class:`~tallyboard.plugin.network.NetworkSettings` apply
too. While MLflow does not answer, values stay queued and are sent when it answers; a
``flush()`` that returns with values unsent says so in a ``SinkWarning`` (once per outage), and
what is still unsent at ``close()`` is said in one ``SinkWarning`` with its count (the local
files keep it: ``tallyboard sync`` sends it). A
value MLflow refuses is raised as ``OSError`` by the next ``write``, ``flush`` or ``close``. The
run ends ``FAILED`` when the process ends with an exception (or a value was refused), else
``FINISHED``. Kinds other than scalar, hparams (given as values, not as ready
``HParamsPluginData``), text, image (figures are images) and audio get the writer's once-only
"cannot encode" warning.
Needs ``pip install tallyboard[mlflow]``; mlflow is imported when a writer opens this sink.
"""

from __future__ import annotations

from typing import Any

from tallyboard import SinkSpec, hookimpl
from tallyboard.plugin.network import NetworkSettings

from .encode import ENCODERS, artifact_path, metric_key
from .sink import DEADLINE_ENV, DEFAULT_DEADLINE, SINK, MlflowSink, deadline

__all__ = [
    "DEADLINE_ENV",
    "DEFAULT_DEADLINE",
    "SINK",
    "MlflowSink",
    "artifact_path",
    "deadline",
    "metric_key",
]


@hookimpl
def register_sinks(register: Any) -> None:
    register(
        SinkSpec(
            name=SINK,
            open=MlflowSink,
            settings=NetworkSettings,
            description="MLflow runs: metrics, params, artifacts (local store or tracking URI)",
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    for kind, encode in ENCODERS.items():
        register(kind, SINK, encode)
