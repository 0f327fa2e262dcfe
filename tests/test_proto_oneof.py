"""A field inside a oneof has presence: its zero value is written and read back (protobuild).

Every message built with ``tallyboard.records.protobuild`` is checked: each oneof member, set to its zero
value, survives serialization and parsing by TensorBoard's own protobuf classes, and the built
messages declare exactly the oneofs of those classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tallyboard_custom_scalars.tfevents as cs
import tallyboard_graph.proto as graph
import tallyboard_hparams.proto as hparams
import tallyboard_lineage.messages as lineage
import tallyboard_tfevents.proto as tf
from conftest import load_run
from google.protobuf.descriptor import FieldDescriptor
from tallyboard.records.protobuild import build
from tensorboard.compat.proto import attr_value_pb2, event_pb2, summary_pb2
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

# every built message that has a TensorBoard counterpart, with that counterpart
PAIRS: list[tuple[Any, Any]] = [
    (tf.Event, event_pb2.Event),
    (tf.SummaryValue, summary_pb2.Summary.Value),
    (hparams.HParamsPluginData, plugin_data_pb2.HParamsPluginData),
    (hparams.HParamInfo, api_pb2.HParamInfo),
    (cs._m["Chart"], layout_pb2.Chart),
    (graph.AttrValue, attr_value_pb2.AttrValue),
]


def _built_modules() -> list[dict[str, Any]]:
    return [tf._m, hparams._m, cs._m, graph._m, lineage._m]


def _oneof_fields(cls: Any) -> list[FieldDescriptor]:
    return [f for o in cls.DESCRIPTOR.oneofs for f in o.fields]


def _set_zero(msg: Any, field: FieldDescriptor) -> None:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        getattr(msg, field.name).SetInParent()
    else:
        zero = {
            FieldDescriptor.TYPE_STRING: "",
            FieldDescriptor.TYPE_BYTES: b"",
            FieldDescriptor.TYPE_BOOL: False,
            FieldDescriptor.TYPE_FLOAT: 0.0,
            FieldDescriptor.TYPE_DOUBLE: 0.0,
        }.get(field.type, 0)
        setattr(msg, field.name, zero)


CASES = [
    (built, real, f)
    for built, real in PAIRS
    for f in _oneof_fields(built)
    if f.containing_oneof  # all of them
]


def test_every_built_message_with_a_oneof_is_checked_against_tensorboard() -> None:
    paired = {built.DESCRIPTOR.full_name for built, _ in PAIRS}
    for module in _built_modules():
        for cls in module.values():
            if hasattr(cls, "DESCRIPTOR") and cls.DESCRIPTOR.oneofs and cls is not None:
                name = cls.DESCRIPTOR.full_name
                assert name in paired or name.startswith("mindspore."), name
    assert len(CASES) >= 20


@pytest.mark.parametrize("built, real", PAIRS, ids=[r.DESCRIPTOR.full_name for _, r in PAIRS])
def test_built_messages_declare_tensorboards_oneofs(built: Any, real: Any) -> None:
    def members(cls: Any) -> dict[str, str]:
        return {f.name: f.containing_oneof.name for f in _oneof_fields(cls)}

    have = members(built)
    want = {
        name: group
        for name, group in members(real).items()
        if name in built.DESCRIPTOR.fields_by_name
    }
    assert have == want


@pytest.mark.parametrize(
    "built, real, field", CASES, ids=[f"{b.DESCRIPTOR.name}.{f.name}" for b, _, f in CASES]
)
def test_zero_value_of_a_oneof_member_survives(
    built: Any, real: Any, field: FieldDescriptor
) -> None:
    msg = built()
    _set_zero(msg, field)
    data = msg.SerializeToString()
    assert data, f"{field.full_name} = zero was not written"
    parsed = real.FromString(data)
    assert parsed.WhichOneof(field.containing_oneof.name) == field.name


def test_zero_values_of_mindspore_oneof_members_survive() -> None:
    for cls in lineage._m.values():
        for field in _oneof_fields(cls) if hasattr(cls, "DESCRIPTOR") else []:
            msg = cls()
            _set_zero(msg, field)
            assert cls.FromString(msg.SerializeToString()).HasField(field.name)


def test_event_accumulator_sees_a_zero_scalar(tmp_path: Path) -> None:
    from tallyboard import SummaryWriter

    with SummaryWriter(tmp_path) as w:
        w.add_summary(
            tf.Summary(value=[tf.SummaryValue(tag="gauge", simple_value=0.0)]).SerializeToString(),
            global_step=3,
        )
        w.add_scalar("zero", 0.0, 4)
    acc = load_run(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("gauge")] == [(3, 0.0)]
    assert [(e.step, e.value) for e in acc.Scalars("zero")] == [(4, 0.0)]


def test_oneof_label_in_the_builder() -> None:
    m = build("t.oneof", {"M": [("a", 1, "int32", "oneof:g"), ("b", 2, "string", "oneof:g")]})["M"]
    assert m(a=0).SerializeToString() == b"\x08\x00"
    assert m(b="").WhichOneof("g") == "b"
    assert m().SerializeToString() == b""
    with pytest.raises(ValueError, match="unknown label 'optional'"):
        build("t.bad", {"M": [("a", 1, "int32", "optional")]})
