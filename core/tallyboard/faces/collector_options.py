"""What a :class:`~tallyboard.faces.summary_collector.SummaryCollector` is made with, checked
as MindSpore 2.10's collector checks it (its messages, its defaults)."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tallyboard.faces import summary_record

logger = logging.getLogger("tallyboard.faces.summary_collector")

#: What is collected unless ``collect_specified_data`` says otherwise (MindSpore 2.10's defaults).
_DEFAULT_SPECIFIED_DATA: dict[str, Any] = {
    "collect_metric": True,
    "collect_graph": True,
    "collect_train_lineage": True,
    "collect_eval_lineage": True,
    "collect_input_data": True,
    "collect_dataset_graph": True,
    "histogram_regular": None,
    "collect_landscape": {
        "landscape_size": 40,
        "unit": "step",
        "num_samples": 2048,
        "create_landscape": {"train": True, "result": True},
        "intervals": [[1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]],
    },
}
_BOOL_ITEMS = set(_DEFAULT_SPECIFIED_DATA) - {"histogram_regular", "collect_landscape"}
#: The environment variable MindSpore's hyper-parameter tools put custom lineage in.
HYPER_CONFIG_ENV_NAME = "MINDINSIGHT_HYPER_CONFIG"
_HYPER_CONFIG_LEN_LIMIT = 100000
#: At most this many steps collect TensorSummary values unless ``collect_tensor_freq`` is set.
_TENSOR_SUMMARY_LIMIT = 20
_HISTOGRAMS_BY_DEFAULT = 5


def _check_type(name: str, value: Any, types: Iterable[type]) -> None:
    """MindSpore's type check (``bool`` is no ``int``), with its message."""
    valid = tuple(types)
    if not isinstance(value, valid) or (isinstance(value, bool) and bool not in valid):
        raise TypeError(
            f"For `{name}` the type should be a valid type of {[t.__name__ for t in valid]}, "
            f"but got {type(value).__name__}."
        )


def _check_export_options(options: Any) -> dict[str, str | None] | None:
    """``export_options`` checked as MindSpore's ``SummaryCollector`` checks it: its own type
    messages, then the keys and values as ``SummaryRecord`` checks them."""
    if options is None:
        return None
    _check_type("export_options", options, [dict, type(None)])
    for key, value in options.items():
        _check_type("export_option", key, [str])
        _check_type("export_format", value, [str, type(None)])
    return summary_record.check_export_options(options)


def check_positive(name: str, value: Any, allow_none: bool = False) -> None:
    if allow_none and value is None:
        return
    _check_type(name, value, [int])
    if value <= 0:
        raise ValueError(
            f'For "SummaryCollector", the value of `{name}` should be greater than 0, '
            f"but got `{value}`."
        )


def specified_data(specified: Any, keep_default: bool) -> dict[str, Any]:
    _check_type("collect_specified_data", specified, [dict, type(None)])
    if specified is None:
        return dict(_DEFAULT_SPECIFIED_DATA) if keep_default else {}
    for name in specified:
        _check_type(name, name, [str])
    unexpected = set(specified) - set(_DEFAULT_SPECIFIED_DATA)
    if unexpected:
        raise ValueError(
            f'For "SummaryCollector", the keys {unexpected} of `collect_specified_data` are '
            f"unsupported, expect the follow keys: {list(_DEFAULT_SPECIFIED_DATA)}"
        )
    if "histogram_regular" in specified:
        regular = specified["histogram_regular"]
        _check_type("histogram_regular", regular, (str, type(None)))
        if isinstance(regular, str):
            try:
                re.compile(regular)
            except re.error as exc:
                raise ValueError(
                    "For `collect_specified_data`, the value of `histogram_regular` is not a "
                    f"valid regular expression. Detail: {exc}."
                ) from exc
    for item in _BOOL_ITEMS:
        if item in specified:
            _check_type(item, specified[item], [bool])
    if keep_default:
        return {**_DEFAULT_SPECIFIED_DATA, **specified}
    return dict(specified)


def check_landscape(landscape: dict[str, Any]) -> None:
    defaults = _DEFAULT_SPECIFIED_DATA["collect_landscape"]
    unexpected = set(landscape) - set(defaults)
    if unexpected:
        raise ValueError(
            f'For "SummaryCollector", the keys {unexpected} of `collect_landscape` are '
            f"unsupported, expect the follow keys: {list(defaults)}"
        )
    size = landscape.get("landscape_size", 40)
    _check_type("landscape_size", size, [int])
    if size < 3 or size > 256:
        raise ValueError(
            'For "SummaryCollector", the "landscape_size" in collect_specified_data should be '
            f"less than 256 and more than 3, but got the: {size}"
        )
    unit = landscape.get("unit", "step")
    _check_type("unit", unit, [str])
    if unit not in ("step", "epoch"):
        raise ValueError(
            'For "SummaryCollector", unit in collect_specified_data should be step or epoch, '
            f"but got the: {unit}."
        )
    _check_type("num_samples", landscape.get("num_samples", 2048), [int])
    create = landscape.get("create_landscape", {"train": True, "result": True})
    _check_type("create_landscape", create, [dict])
    for key, value in create.items():
        if key not in ("train", "result"):
            raise ValueError(
                'For "SummaryCollector", the key to create landscape should be in '
                f'["train", "result"], but got the: {key}.'
            )
        _check_type(key, value, [bool])
    intervals: Any = landscape.get("intervals")
    _check_type("intervals", intervals, [list])
    for interval in intervals:
        _check_type("each interval inintervals", interval, [list])
        if len(interval) < 3:
            raise ValueError(
                'For "SummaryCollector", the length of each list in "intervals" should not be '
                f"less than three, but got the: {interval}"
            )
        for epoch in interval:
            if not isinstance(epoch, int):
                raise TypeError(
                    'For "SummaryCollector", the value of each list in "intervals" should be '
                    f"int, but got the: {type(epoch)}"
                )


def custom_lineage(custom: Any) -> dict[str, Any]:
    """The user's custom lineage over what ``MINDINSIGHT_HYPER_CONFIG`` holds, checked."""
    if custom is None:
        custom = {}
    _check_custom_lineage("custom_lineage_data", custom)
    merged = _hyper_config_lineage()
    _check_custom_lineage("auto_custom_lineage_data", merged)
    merged.update(custom)
    return merged


def _check_custom_lineage(name: str, custom: Any) -> None:
    _check_type(name, custom, [dict, type(None)])
    for key, value in custom.items():
        _check_type(f"{name} -> {key}", key, [str])
        _check_type(f"the value of {name} -> {key}", value, (int, str, float))


def _hyper_config_lineage() -> dict[str, Any]:
    config = os.environ.get(HYPER_CONFIG_ENV_NAME)
    if config is None:
        return {}
    if len(config) > _HYPER_CONFIG_LEN_LIMIT:
        logger.warning(
            "The 'MINDINSIGHT_HYPER_CONFIG' of environment variable is too long. The length "
            "limit is %s, the length of hyper_config is %s.",
            _HYPER_CONFIG_LEN_LIMIT,
            len(config),
        )
        return {}
    try:
        custom = json.loads(config).get("custom_lineage_data")
    except (TypeError, ValueError, AttributeError) as exc:
        logger.warning(
            "The 'MINDINSIGHT_HYPER_CONFIG' of environment variable decode error. Detail: %s.",
            exc,
        )
        return {}
    return dict(custom) if isinstance(custom, dict) else {}


class CollectorState:
    """What the parts of a collector share: set by ``SummaryCollector.__init__`` and its
    callbacks, or defined by another part (declared here for type checkers)."""

    if TYPE_CHECKING:
        _ckpt_dir: Any
        _collect_freq: Any
        _collect_specified_data: Any
        _collect_tensor_freq: Any
        _dataset_sink_mode: Any
        _epoch_group: Any
        _first_step: Any
        _get_loss: Any
        _get_loss_fn: Any
        _get_optimizer: Any
        _is_parse_loss_success: Any
        _model_params_file_map: Any
        _open_record: Any
        _optimizer: Any
        _tensor_collect_range: Any
