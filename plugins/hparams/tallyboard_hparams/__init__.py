"""The ``hparams`` kind: ``add_hparams`` and ``add_value("hparams", ...)`` for the HPARAMS tab."""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl

from .methods import HParamsSummary, add_hparams, convert
from .table import per_run

__all__ = ["HParamsSummary", "add_hparams"]


def _from_row(row: dict[str, Any]) -> tuple[str, HParamsSummary]:
    """A decoded session-start row (``{"hparams": {name: value}}``) as the same summary, which
    TensorBoard's HPARAMS tab reads on its own (it infers the experiment from the sessions); an
    experiment or session-end row as its plugin data, unchanged."""
    if row.get("part", "session_start_info") != "session_start_info":
        return row["tag"], HParamsSummary("raw", content=bytes(row["content"]))
    values = row["hparams"]
    bad = {k: v for k, v in values.items() if not isinstance(v, (bool, float, int, str))}
    if bad:
        raise ValueError(f"hparams {sorted(bad)} hold no bool, number or str: {bad!r}")
    hparams = {k: v if isinstance(v, (bool, str)) else float(v) for k, v in values.items()}
    return row["tag"], HParamsSummary("session_start_info", hparams)


def _row(summary: HParamsSummary) -> dict[str, Any]:
    from .tfevents import row

    return row(summary)


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="hparams",
            convert=convert,
            methods={"add_hparams": add_hparams},
            read_table=per_run,
            payload=HParamsSummary,
            to_row=_row,
            from_row=_from_row,
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
