"""What a :class:`~tallyboard.faces.summary_record.SummaryRecord` is made with, checked as
MindSpore's ``SummaryRecord`` checks it (the same types, messages and error classes)."""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any

from tallyboard import paths
from tallyboard.ranks import discovery as ranks

#: The face's logger (MindSpore logs its warnings; so does the face, under its module's name).
logger = logging.getLogger("tallyboard.faces.summary_record")
_NAME_RE = re.compile(r"^\w+[0-9a-zA-Z\_\.]*$", re.ASCII)
_EXPORT_OPTIONS = {"tensor_format": {"npy", None}}


def _type_error(arg: str, value: Any, expected: str) -> TypeError:
    return TypeError(
        f"The type of '{arg}' should be {expected}, but got type '{type(value).__name__}'."
    )


def _make_dir(log_dir: Any, arg: str = "log_dir") -> str:
    """The real path of directory ``log_dir`` (the argument named ``arg``), created (0o700) if
    missing, checked as MindSpore checks it."""
    if isinstance(log_dir, os.PathLike):
        log_dir = os.fspath(log_dir)
    if not isinstance(log_dir, str):
        raise TypeError(f"The {arg} is invalid, the type should be string.")
    if not log_dir.strip():
        raise ValueError(f"The {arg} is invalid, it should be non-blank.")
    path = os.path.realpath(log_dir)
    if len(path) > 1024:
        raise ValueError(f"The {arg} length is too long, it should be limited in 1024.")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise NotADirectoryError(
                f"The path({path}) is a file path, it should be a directory path."
            )
        return path
    paths.check_log_dir(path, arg)  # a file on the way to it
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except PermissionError:
        raise TypeError("No write permission on the directory.") from None
    return path


def check_export_options(options: Any) -> dict[str, str | None] | None:
    """``export_options`` checked as MindSpore's ``SummaryRecord`` checks it (types, keys, values)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise _type_error("export_options", options, "one of '['dict', 'NoneType']'")
    for key, value in options.items():
        if not isinstance(key, str):
            raise _type_error("export_option", key, "'str'")
        if value is not None and not isinstance(value, str):
            raise _type_error("export_format", value, "one of '['str', 'NoneType']'")
    unexpected = set(options) - set(_EXPORT_OPTIONS)
    if unexpected:
        raise ValueError(
            f'For "SummaryRecord", the keys {unexpected} of "export_options" are unsupported, '
            f"expect the follow keys: {list(_EXPORT_OPTIONS)}"
        )
    for key, value in options.items():
        if value not in _EXPORT_OPTIONS[key]:
            raise ValueError(
                f'For "SummaryRecord", the export_format {{{value!r}}} of "export_options" are unsupported '
                f"for {key}, expect the follow values: {list(_EXPORT_OPTIONS[key])}"
            )
    return dict(options)


def _device_id() -> dict[str, int]:
    """MindSpore's file-name ``device_id`` is the rank when the job has more than one."""
    info = ranks.current()
    return {"device_id": info.rank} if info.world_size > 1 else {}


def _mindspore() -> Any:
    """The mindspore module if the program already imported it (a Cell implies it did)."""
    return sys.modules.get("mindspore")


def _is_cell(value: Any) -> bool:
    ms = _mindspore()
    if ms is None:
        return False
    try:
        return isinstance(value, ms.nn.Cell)
    except AttributeError:
        return False


def check_arguments(
    file_prefix: Any,
    file_suffix: Any,
    max_file_size: Any,
    raise_exception: Any,
    tensorboard: Any,
    export_options: Any,
    network: Any,
) -> tuple[int | None, dict[str, str | None] | None]:
    """The constructor's arguments checked as MindSpore checks them, in its order; returns
    ``max_file_size`` (None for a negative one, after MindSpore's warning) and the export
    options."""
    if not isinstance(max_file_size, (int, type(None))):
        raise TypeError(
            f"For 'SummaryRecord', the 'max_file_size' should be int type, but got type {type(max_file_size)}"
        )
    if not isinstance(file_prefix, str) or not isinstance(file_suffix, str):
        raise TypeError(
            f"For 'SummaryRecord', `file_prefix` and `file_suffix`  should be str, but got type {type(file_prefix)}"
        )
    for target in (file_prefix, file_suffix):
        if _NAME_RE.match(target) is None:
            raise ValueError(
                f"The '{target}' is illegal, it must be match regular'{_NAME_RE.pattern}' by flags'{re.ASCII}.'"
            )
    if max_file_size is not None and max_file_size < 0:
        logger.warning(
            "For 'SummaryRecord', the 'max_file_size' should be greater than 0. but got value %s.",
            max_file_size,
        )
        max_file_size = None
    if not isinstance(raise_exception, bool):
        raise _type_error("raise_exception", raise_exception, "'bool'")
    if not isinstance(tensorboard, bool):
        raise _type_error("tensorboard", tensorboard, "'bool'")
    checked_export_options = check_export_options(export_options)
    if network is not None and _mindspore() is None:
        raise TypeError(
            "The 'network' argument needs MindSpore (a mindspore.nn.Cell); without MindSpore pass "
            "network=None and add graphs with add_value('graph', name, model_proto_bytes)."
        )
    if network is not None and not _is_cell(network):  # MindSpore would fail at record()
        raise _type_error("network", network, "one of '['Cell', 'NoneType']'")
    return max_file_size, checked_export_options
