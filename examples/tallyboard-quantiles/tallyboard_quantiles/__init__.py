"""An example tallyboard plugin (see docs/plugins.md): a kind shown as scalars and read back,
and a network sink that does not speak JSON.

- :mod:`.kind`: ``quantiles``, the count, min, p25, p50, p75, p95 and max of an array, logged
  with ``writer.add_quantiles(tag, values, step)``; TensorBoard draws a scalar chart per
  statistic, and ``tallyboard.read(logdir, kind="quantiles")`` gives a row per tag and step.
- :mod:`.influx`: ``influx``, InfluxDB 2's line protocol over HTTP with settings:
  ``sinks=[("influx", {"url": "http://host:8086", "token": "...", "bucket": "train",
  "batch_size": 500, "timeout": 2})]``; it takes scalars and quantiles.
"""

from typing import Any

from tallyboard.plugin import hookimpl

from . import influx, kind

TALLYBOARD_CONTRACT = 1


@hookimpl
def register_kinds(register: Any) -> None:
    register(kind.KIND)


@hookimpl
def register_sinks(register: Any) -> None:
    register(influx.SPEC)


@hookimpl
def register_encoders(register: Any) -> None:
    register("quantiles", "tfevents", kind.encode_tfevents)  # new kind -> built-in sink
    register("quantiles", "influx", influx.encode_quantiles)  # new kind -> new sink
    register("scalar", "influx", influx.encode_scalar)  # built-in kind -> new sink


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "quantiles", kind.decode_tfevents)
