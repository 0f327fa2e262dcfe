"""``add_hparams``: torch's hyper-parameter summaries, plus the option to attach them to the run."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tallyboard.values import check_flag, check_step, check_text, to_float

from .proto import EXPERIMENT_TAG, SESSION_END_INFO_TAG, SESSION_START_INFO_TAG

HParamValue = float | str | bool


@dataclass(frozen=True)
class HParamsSummary:
    """One of the three hparams summaries, format-neutral.

    ``part`` is ``"experiment"`` (``hparams`` holds the values whose names and types declare the
    hyper-parameters, ``metrics`` the metric tags, ``domains`` the discrete domains),
    ``"session_start_info"`` (``hparams`` holds the values) or ``"session_end_info"``;
    ``"raw"`` carries a ready serialized ``HParamsPluginData`` in ``content``; a summary read
    from a file carries the file's there too (its row shows it), whatever its part.
    """

    part: str
    hparams: Mapping[str, HParamValue] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    domains: Mapping[str, tuple[HParamValue, ...]] = field(default_factory=dict)
    content: bytes = b""
    #: each hparam as ``str()`` of the value given (``"3"`` for 3), as MLflow logs params.
    texts: Mapping[str, str] = field(default_factory=dict)


def _hparam_value(key: str, value: Any, where: str = "hparam_dict") -> HParamValue | None:
    """A bool, float or str for hparam ``key``; None means "skip it" (as torch)."""
    if isinstance(value, str):
        return check_text(value, f"{where}[{key!r}]")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, int) and abs(value) > 2**53:
            raise ValueError(
                f"hparam_dict[{key!r}] = {value} cannot be stored exactly as a float64"
            )
        return float(value)
    if isinstance(value, np.generic) or (
        type(value).__module__.startswith("torch") and hasattr(value, "detach")
    ):
        if hasattr(value, "detach"):
            flat = value.detach().cpu().reshape(-1)
            if flat.numel() == 0:
                raise ValueError(f"hparam_dict[{key!r}] is an empty tensor")
            item = flat[0].item()
        else:
            item = value.item()
        if isinstance(item, (bool, int, float, str)):
            return _hparam_value(key, item, where)
    raise TypeError(
        f"hparam_dict[{key!r}] must be a bool, int, float, str, NumPy scalar or tensor, "
        f"got {type(value).__name__}: {value!r}"
    )


def _kind_of(value: HParamValue) -> type:
    return bool if isinstance(value, bool) else str if isinstance(value, str) else float


def _domains(raw: Any, values: Mapping[str, HParamValue]) -> dict[str, tuple[HParamValue, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TypeError(
            f"hparam_domain_discrete must be a dict of name -> list, got {type(raw).__name__}"
        )
    out: dict[str, tuple[HParamValue, ...]] = {}
    for key, domain in raw.items():
        if key not in values:
            raise ValueError(
                f"hparam_domain_discrete[{key!r}] names no hparam in hparam_dict (or its value is None)"
            )
        if not isinstance(domain, (list, tuple)) or not domain:
            raise TypeError(f"hparam_domain_discrete[{key!r}] must be a non-empty list of values")
        want = _kind_of(values[key])
        items = []
        for item in domain:
            converted = _hparam_value(key, item, "hparam_domain_discrete")
            if converted is None or _kind_of(converted) is not want:
                raise TypeError(
                    f"hparam_domain_discrete[{key!r}] holds {item!r}, not a {want.__name__} like hparam_dict[{key!r}]"
                )
            items.append(converted)
        out[key] = tuple(items)
    return out


def add_hparams(
    writer: Any,
    hparam_dict: dict[str, Any],
    metric_dict: dict[str, Any],
    hparam_domain_discrete: dict[str, list[Any]] | None = None,
    run_name: str | None = None,
    global_step: Any = None,
    *,
    own_run: bool = False,
    name: str | None = None,
) -> None:
    """Log one trial's hyper-parameters and results, a row of the HPARAMS tab.

    As torch does, a child run ``<log_dir>/<run_name>`` (``run_name`` defaults to
    ``str(time.time())``) gets the three hparams summaries (the experiment's columns, this
    session's values, its end) and one scalar per metric, and is closed at once; this writer's
    own run gets nothing. The HPARAMS tab lists the child run with its values and metrics. With
    ``own_run=True`` everything goes to this writer's run instead, so the tab links the
    hyper-parameters to the curves this run logs with :meth:`add_scalar` (torch cannot; metric
    tags then share the run's tag names). Unlike torch, bools are stored as booleans (torch
    stores 1.0/0.0), and NumPy scalars and tensors are read through their first element.

    Args:
        hparam_dict: ``{name: value}``; a value is a bool, int, float, str, NumPy scalar or
            torch tensor (its first element), or None (left out, as torch does). A plain
            ``dict`` (torch refuses subclasses too).
        metric_dict: ``{tag: number}``: each metric is written as a scalar under its tag. Use
            tags you do not log with :meth:`add_scalar` in the same run (such as
            ``"hparam/accuracy"``), or the tab shows those instead. A value may be None: the tag
            is declared as a metric column without a value (with ``own_run=True``, name a curve
            the run logs). A plain ``dict``.
        hparam_domain_discrete: ``{name: [values]}``: the values a hyper-parameter can take, of
            its type, shown as the tab's filter choices. A str here is read as tensorboardX's
            third argument, the run name. Default ``None``.
        run_name: The child run's name, a path relative to ``log_dir`` that must stay inside it.
            Default ``None``: ``str(time.time())``. Must be None with ``own_run=True``.
        global_step: The step of the summaries and metric values: an int within int64. Default
            ``None`` writes no step (read as 0).
        own_run: Write into this writer's run rather than a child run (keyword only). Default
            ``False``.
        name: tensorboardX's name for ``run_name`` (keyword, or tensorboardX's third argument).
            Default ``None``.

    Raises:
        TypeError: ``hparam_dict`` or ``metric_dict`` is not a dict; a key is not a str; a value
            of another type (a list, a dict); a metric that is not a number; a domain list whose
            values are not of their hyper-parameter's type.
        ValueError: ``run_name`` would leave ``log_dir`` (``".."``, an absolute path); both
            ``run_name`` and ``name``, or ``run_name`` with ``own_run=True``; a domain names no
            hyper-parameter; an int beyond 2**53 (not exact as float64).

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/hparams") as writer:
        ...     for i, lr in enumerate([0.1, 0.01, 0.001]):
        ...         accuracy = 0.9 - abs(lr - 0.01)  # your trial's result
        ...         writer.add_hparams(
        ...             {"lr": lr, "batch": 64, "augment": True},
        ...             {"hparam/accuracy": accuracy},
        ...             run_name=f"trial{i}",
        ...         )
    """
    if type(hparam_dict) is not dict:
        raise TypeError(f"hparam_dict must be a dict, got {type(hparam_dict).__name__}")
    if type(metric_dict) is not dict:
        raise TypeError(f"metric_dict must be a dict, got {type(metric_dict).__name__}")
    run_arg = "run_name"
    if isinstance(hparam_domain_discrete, str):  # tensorboardX: the third argument is the name
        if name is not None or run_name is not None:
            raise ValueError(
                "hparam_domain_discrete is a str, read as tensorboardX's name argument: "
                "give it, name= or run_name=, only one"
            )
        hparam_domain_discrete, name, run_arg = (
            None,
            hparam_domain_discrete,
            "hparam_domain_discrete",
        )
    elif name is not None:
        if run_name is not None:
            raise ValueError("give run_name or name (tensorboardX's word for it), not both")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        run_arg = "name"
    if name is not None:
        run_name = name
    step = check_step(global_step)
    values: dict[str, HParamValue] = {}
    texts: dict[str, str] = {}
    for key, raw in hparam_dict.items():
        if not isinstance(key, str):
            raise TypeError(f"hparam_dict keys must be str, got {type(key).__name__}: {key!r}")
        check_text(key, "hparam_dict key")
        value = _hparam_value(key, raw)
        if value is not None:
            values[key] = value
            texts[key] = str(raw) if isinstance(raw, (bool, int, float, str)) else str(value)
    metrics: dict[str, float | None] = {}
    for key, raw in metric_dict.items():
        if not isinstance(key, str) or not key:
            raise TypeError(
                f"metric_dict keys must be non-empty str, got {type(key).__name__}: {key!r}"
            )
        check_text(key, "metric_dict key")
        if raw is None:
            metrics[key] = None
            continue
        if isinstance(raw, (str, bytes, bool)):
            raise TypeError(
                f"metric_dict[{key!r}] must be a number, got {type(raw).__name__}: {raw!r}"
            )
        metrics[key] = to_float(raw, f"metric_dict[{key!r}]")
    domains = _domains(hparam_domain_discrete, values)
    if check_flag(own_run, "own_run"):
        if run_name is not None:
            raise ValueError(
                "run_name must be None when own_run=True (the hparams go to this writer's run)"
            )
        target = writer
    else:
        if run_name is None or (isinstance(run_name, str) and not run_name):
            run_name = repr(time.time())
        target = writer.child(run_name, arg=run_arg)
    summaries = (
        (EXPERIMENT_TAG, HParamsSummary("experiment", values, tuple(metrics), domains)),
        (SESSION_START_INFO_TAG, HParamsSummary("session_start_info", values, texts=texts)),
        (SESSION_END_INFO_TAG, HParamsSummary("session_end_info")),
    )
    for tag, summary in summaries:
        target.emit("hparams", tag, summary, step)
    for key, metric in metrics.items():
        if metric is not None:
            target.emit("scalar", key, metric, step)
    if target is not writer:
        target.close()  # torch closes the trial's writer at once


def convert(value: Any) -> HParamsSummary:
    """``add_value("hparams", tag, value)``: an HParamsSummary, or a ready HParamsPluginData."""
    if isinstance(value, HParamsSummary):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return HParamsSummary("raw", content=bytes(value))
    serialize = getattr(value, "SerializeToString", None)
    if (
        callable(serialize)
        and getattr(getattr(value, "DESCRIPTOR", None), "name", "") == "HParamsPluginData"
    ):
        return HParamsSummary("raw", content=serialize())
    raise TypeError(
        f"an hparams value must be an HParamsSummary, an HParamsPluginData message or its bytes, "
        f"got {type(value).__name__}"
    )
