"""Aggregation: an enum.Enum with torch's names, order and numbers; the module surface."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
import tallyboard
import tallyboard.monitor as mon
from tallyboard.monitor import COUNT, MAX, MEAN, MIN, SUM, VALUE, Aggregation


def test_members_order_and_values_match_torch():
    import torch.monitor as tm

    assert list(Aggregation.__members__) == list(tm.Aggregation.__members__)
    assert list(Aggregation.__members__) == ["VALUE", "MEAN", "COUNT", "SUM", "MAX", "MIN"]
    for name, member in Aggregation.__members__.items():
        assert member.value == tm.Aggregation.__members__[name].value
        assert repr(member) == repr(tm.Aggregation.__members__[name])
        assert str(member) == str(tm.Aggregation.__members__[name])
        assert member.name == name


def test_module_constants_are_the_members():
    assert tuple(Aggregation) == (VALUE, MEAN, COUNT, SUM, MAX, MIN)
    assert SUM is Aggregation.SUM and mon.SUM is Aggregation.SUM
    assert tallyboard.SUM is Aggregation.SUM


def test_enum_semantics():
    assert repr(SUM) == "<Aggregation.SUM: 4>"
    assert str(SUM) == "Aggregation.SUM"
    assert SUM != 4 and not (SUM == 4)  # noqa: SIM201
    assert SUM is not None
    assert SUM == Aggregation.SUM
    with pytest.raises(TypeError):
        _ = SUM < MAX  # type: ignore[operator]
    assert Aggregation(4) is SUM
    assert Aggregation["SUM"] is SUM
    for bad in (1, 7):
        with pytest.raises(ValueError):
            Aggregation(bad)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(MIN, proto)) is MIN


def test_public_names():
    expected = {
        "Aggregation",
        "Stat",
        "Event",
        "EventHandlerHandle",
        "data_value_t",
        "log_event",
        "register_event_handler",
        "unregister_event_handler",
        "TensorboardEventHandler",
        "STAT_EVENT",
        "VALUE",
        "MEAN",
        "COUNT",
        "SUM",
        "MAX",
        "MIN",
    }
    assert expected <= set(mon.__all__)
    for name in expected:
        assert getattr(tallyboard, name) is getattr(mon, name)
    assert mon.STAT_EVENT == "torch.monitor.Stat"
    assert "str" in (mon.data_value_t.__doc__ or "")


def test_import_is_cheap():
    code = (
        "import sys, tallyboard.monitor, tallyboard\n"
        "tallyboard.Stat, tallyboard.log_event\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'numpy', 'google', 'tensorboard', 'PIL', 'matplotlib'))\n"
        "assert not bad, bad\n"
        "assert 'tallyboard.plugin.registry' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
