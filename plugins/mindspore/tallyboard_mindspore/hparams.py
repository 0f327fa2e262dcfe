"""A run's lineage as its hyper-parameters: TensorBoard's HPARAMS dashboard and ``read(kind="hparams")``.

MindSpore keeps what a run was trained with in its lineage file: the train lineage (learning
rate, batch size, epochs, optimizer, loss function, network, dataset size, ...) at the end of
``Model.train``, and the custom lineage (``SummaryCollector(custom_lineage_data=...)``) at its
first step. TensorBoard takes one ``session_start_info`` per run, from its first value, so the
two are joined here into one row of the ``hparams`` kind, made when the train lineage is read,
holding the train lineage's fields and ``custom/<key>`` for each custom value written before it
in the same file. The board and ``convert --to tfevents`` then write it with the hparams kind's
own encoder, before the train lineage's own hyper-parameters (which its ``tfevents`` encoder
writes for the mirror of ``tensorboard=True``, where no lineage file is read), so TensorBoard
keeps these; ``tallyboard.read(logdir, kind="hparams")`` lists it with the run's last scalars. The names (:data:`TRAIN_FIELDS`) are documented field by field in docs/mindspore.md.

:class:`LineageHParams` wraps a lineage file's reader and adds that row to what it reads; the
rows and scalars of the file are left as the reader gives them.
"""

from __future__ import annotations

from typing import Any

#: The kind and tag of the rows made here (the ``hparams`` plugin's session start).
HPARAMS_KIND = "hparams"
SESSION_START_TAG = "_hparams_/session_start_info"
CUSTOM_PREFIX = "custom/"
#: hparam name -> (``TrainLineage`` sub-message, field) it is read from, in the table's order.
TRAIN_FIELDS = {
    "learning_rate": ("hyper_parameters", "learning_rate"),
    "batch_size": ("hyper_parameters", "batch_size"),
    "epoch": ("hyper_parameters", "epoch"),
    "optimizer": ("hyper_parameters", "optimizer"),
    "loss_function": ("hyper_parameters", "loss_function"),
    "network": ("algorithm", "network"),
    "train_dataset_size": ("train_dataset", "train_dataset_size"),
    "train_dataset_path": ("train_dataset", "train_dataset_path"),
    "parallel_mode": ("hyper_parameters", "parallel_mode"),
    "device_num": ("hyper_parameters", "device_num"),
    "model_size": ("model", "size"),
}
TRAIN_KIND, CUSTOM_KIND = "train_lineage", "custom_lineage_data"

HParam = bool | float | str


def train_hparams(message: bytes) -> dict[str, HParam]:
    """The hyper-parameters of a serialized ``TrainLineage``: each field of
    :data:`TRAIN_FIELDS` it holds (numbers as floats, the learning rate as the float32 it is
    stored as, printed short)."""
    from tallyboard_lineage.messages import TrainLineage

    lineage = TrainLineage.FromString(message)
    out: dict[str, HParam] = {}
    for name, (part, field) in TRAIN_FIELDS.items():
        sub = getattr(lineage, part)
        if not sub.HasField(field):
            continue
        value = getattr(sub, field)
        if isinstance(value, str):
            out[name] = value
        elif name == "learning_rate":
            out[name] = float(f"{value:.7g}")  # the float32 as written, not 0.009999999776
        else:
            out[name] = float(value)
    return out


def custom_hparams(message: bytes) -> dict[str, HParam]:
    """The values of a serialized ``UserDefinedInfo`` (every map, nested ``user_info`` too)
    as ``custom/<key>``."""
    from tallyboard_lineage.messages import UserDefinedInfo

    out: dict[str, HParam] = {}

    def walk(info: Any) -> None:
        for inner in info.user_info:
            walk(inner)
        for field in ("map_int32", "map_double"):
            for key, value in getattr(info, field).items():
                out[CUSTOM_PREFIX + key] = float(value)
        for key, text in info.map_str.items():
            out[CUSTOM_PREFIX + key] = text
        for inner in info.map_dict.values():
            walk(inner)

    walk(UserDefinedInfo.FromString(message))
    return out


def _data(row: dict[str, Any]) -> bytes:
    """The serialized lineage message of a row (its ``data``)."""
    return bytes(row["data"])


class LineageHParams:
    """A lineage file's reader that also gives, for each train lineage it reads, one row of
    the ``hparams`` kind: the train lineage's fields and the custom lineage read before it in
    the file (module docs). Everything else is the wrapped reader's."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        #: the custom lineage read so far in this file, as hparams
        self.custom: dict[str, HParam] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("reader", "custom"):
            raise AttributeError(name)
        return getattr(self.reader, name)

    def read_new(self) -> Any:
        """What the wrapped reader reads, with the hparams rows added."""
        batch = self.reader.read_new()
        rows = batch.rows
        found = [(TRAIN_KIND, r) for r in rows.get(TRAIN_KIND, ())]
        found += [(CUSTOM_KIND, r) for r in rows.get(CUSTOM_KIND, ())]
        found.sort(key=lambda kr: (kr[1]["wall_time"], kr[0] == TRAIN_KIND))
        for kind, row in found:
            try:
                if kind == CUSTOM_KIND:
                    self.custom.update(custom_hparams(_data(row)))
                    continue
                hparams = {**train_hparams(_data(row)), **self.custom}
            except Exception as exc:  # a damaged message: said, and no row made of it
                from tallyboard.warn import ReadWarning, warn

                warn(
                    f"{getattr(self.reader, 'path', '?')}: a {kind} message is not parsable "
                    f"({type(exc).__name__}: {exc}); no hparams are made of it",
                    ReadWarning,
                )
                continue
            batch.add_row(
                HPARAMS_KIND,
                {
                    "tag": SESSION_START_TAG,
                    "step": row["step"],
                    "wall_time": row["wall_time"],
                    "part": "session_start_info",
                    "hparams": hparams,
                },
            )
        if HPARAMS_KIND in batch.rows:
            # first: the board and convert write kinds in this order, and TensorBoard keeps a
            # run's first hyper-parameters, so these (custom lineage joined) come before the
            # train lineage's own (its tfevents encoder writes those, for the mirror)
            batch.rows = {HPARAMS_KIND: batch.rows.pop(HPARAMS_KIND), **batch.rows}
        return batch
