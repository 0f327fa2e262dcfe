"""The ``hparams`` kind: ``add_hparams`` and ``add_value("hparams", ...)`` for the HPARAMS tab."""

from __future__ import annotations

from typing import Any

from plugboard import Kind, hookimpl

from .methods import HParamsSummary, add_hparams, convert
from .table import per_run

__all__ = ["HParamsSummary", "add_hparams"]


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="hparams",
            convert=convert,
            methods={"add_hparams": add_hparams},
            read_table=per_run,
            description="hyper-parameters and metrics of a trial",
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("hparams", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "hparams", decode)
