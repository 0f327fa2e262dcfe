"""The ``quantiles`` kind: seven statistics of an array, shown in TensorBoard as scalars.

Each statistic is a ``simple_value`` tagged ``<tag>/<statistic>`` that carries this kind's
metadata (plugin name ``quantiles``, the statistic as content, the scalar data class), so
TensorBoard draws it as a scalar and the reader hands it to :func:`decode_tfevents`, not to the
scalar columns: ``read(logdir, kind="quantiles")``, ``tallyboard convert`` and ``tallyboard
board`` all see quantiles.
"""

from typing import Any, NamedTuple

import numpy as np
from tallyboard.plugin import Kind
from tallyboard.values import to_array

STATS = ("count", "min", "p25", "p50", "p75", "p95", "max")


class Quantiles(NamedTuple):
    """The payload: the statistics of one array, in the order of ``STATS``."""

    count: float
    min: float
    p25: float
    p50: float
    p75: float
    p95: float
    max: float


def to_quantiles(value: Any, arg: str = "value") -> Quantiles:
    """The statistics of ``value``, a non-empty array of finite numbers (NaN has no rank)."""
    a = to_array(value, arg).astype(np.float64).ravel()
    if not np.isfinite(a).all():
        raise ValueError(f"{arg} must hold finite numbers only, got {a[~np.isfinite(a)][:3]}")
    p25, p50, p75, p95 = np.percentile(a, [25, 50, 75, 95]).tolist()
    return Quantiles(float(a.size), float(a.min()), p25, p50, p75, p95, float(a.max()))


def add_quantiles(
    writer: Any, tag: str, values: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """Log the quantiles of ``values`` under ``tag``: scalar charts ``<tag>/p50`` and so on."""
    writer.emit("quantiles", tag, to_quantiles(values, "values"), global_step, walltime)


def encode_tfevents(tag: str, step: int | None, wall_time: float, q: Quantiles) -> bytes:
    """One Event holding a scalar per statistic, each with this kind's metadata."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DATA_CLASS_SCALAR, SummaryValue, metadata

    values = [
        SummaryValue(
            tag=f"{tag}/{stat}",
            simple_value=value,
            metadata=metadata("quantiles", stat.encode(), data_class=DATA_CLASS_SCALAR),
        )
        for stat, value in zip(STATS, q)
    ]
    return summary_event(step, wall_time, values)


def decode_tfevents(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """One statistic of a value :func:`encode_tfevents` wrote; None for any other value."""
    data = value.metadata.plugin_data
    if data.plugin_name != "quantiles":
        return None
    stat = data.content.decode()
    return {"tag": value.tag.removesuffix(f"/{stat}"), stat: value.simple_value}


def read_table(rows: list[dict[str, Any]], batches: Any) -> list[dict[str, Any]]:
    """The statistics of a run, tag and step (a row each as decoded) joined in one row."""
    joined: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        joined.setdefault((row["run"], row["tag"], row["step"]), {}).update(row)
    return list(joined.values())


def from_row(row: dict[str, Any]) -> tuple[str, Quantiles]:
    """A joined row back as its tag and payload (``tallyboard convert``, the board)."""
    return row["tag"], Quantiles(*(float(row[stat]) for stat in STATS))


KIND = Kind(
    name="quantiles",
    convert=to_quantiles,
    payload=Quantiles,
    methods={"add_quantiles": add_quantiles},
    read_table=read_table,
    from_row=from_row,
)
