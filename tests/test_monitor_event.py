"""Event: validation, copies, value equality, repr, pickle; data parity with torch.monitor."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict, UserDict
from datetime import date, datetime, time, timedelta, timezone
from types import MappingProxyType

import numpy as np
import pytest
from tallyboard.monitor import Event

TS = datetime(2024, 1, 2, 3, 4, 5)


def test_fields_and_keywords():
    e = Event(name="x", timestamp=TS, data={"a": 1, "b": 2.5, "c": "s", "d": True})
    assert e.name == "x"
    assert e.timestamp == TS
    assert e.data == {"a": 1, "b": 2.5, "c": "s", "d": True}
    assert type(e.data["d"]) is bool and type(e.data["a"]) is int


@pytest.mark.parametrize(
    "data", [{}, OrderedDict(a=1), MappingProxyType({"a": 1}), UserDict({"a": 1})]
)
def test_any_mapping_is_accepted(data):
    e = Event("x", TS, data)
    assert e.data == dict(data)
    assert type(e.data) is dict


def test_data_is_copied_in_and_out():
    src = {"a": 1}
    e = Event("x", TS, src)
    src["a"] = 2
    assert e.data == {"a": 1}
    out = e.data
    out["b"] = 3
    assert e.data == {"a": 1}
    assert e.data is not e.data


def test_timestamp_kept_as_given_with_tzinfo():
    aware = datetime(2024, 1, 2, 3, 4, tzinfo=timezone(timedelta(hours=-5)))
    e = Event("x", aware, {})
    assert e.timestamp is aware
    assert e.timestamp.tzinfo is not None


@pytest.mark.parametrize("bad", [date(2024, 1, 2), time(3, 4), 1.5, 0, "2024-01-02", None])
def test_timestamp_must_be_datetime(bad):
    with pytest.raises(TypeError, match="timestamp"):
        Event("x", bad, {})


@pytest.mark.parametrize("bad", [1, None, 2.0, ["x"]])
def test_name_must_be_str(bad):
    with pytest.raises(TypeError, match="name"):
        Event(bad, TS, {})


def test_bytes_name_and_keys_are_decoded_like_torch():
    e = Event(b"x", TS, {b"k": 1})
    assert e.name == "x" and e.data == {"k": 1}


@pytest.mark.parametrize("bad", [[("a", 1)], None, "a", 5])
def test_data_must_be_mapping(bad):
    with pytest.raises(TypeError, match="data"):
        Event("x", TS, bad)


def test_non_str_key_rejected():
    with pytest.raises(TypeError, match="key"):
        Event("x", TS, {1: 1})


@pytest.mark.parametrize("bad", [[1], (1,), {"a": 1}, None, 1j, b"x", bytearray(b"x"), object()])
def test_bad_values_name_the_key(bad):
    with pytest.raises(TypeError, match="'bad_key'"):
        Event("x", TS, {"bad_key": bad})


def test_tensor_values_rejected():
    import torch

    with pytest.raises(TypeError, match="'t'"):
        Event("x", TS, {"t": torch.tensor(1.0)})


def test_int_range():
    assert Event("x", TS, {"a": -(2**63), "b": 2**63 - 1}).data == {"a": -(2**63), "b": 2**63 - 1}
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError, match="'a'"):
            Event("x", TS, {"a": bad})
    with pytest.raises(ValueError, match="'u'"):
        Event("x", TS, {"u": np.uint64(2**64 - 1)})


def test_numpy_scalars_are_converted():
    d = Event(
        "x", TS, {"i": np.int32(3), "f": np.float32(0.5), "b": np.bool_(True), "d": np.float64(2)}
    ).data
    assert d == {"i": 3, "f": 0.5, "b": True, "d": 2.0}
    assert [type(d[k]) for k in "ifbd"] == [int, float, bool, float]
    with pytest.raises(TypeError, match="'a'"):
        Event("x", TS, {"a": np.array([1, 2])})


def test_setters_validate():
    e = Event("x", TS, {})
    e.name = "y"
    e.timestamp = datetime(2025, 1, 1)
    e.data = {"k": 1}
    assert (e.name, e.timestamp, e.data) == ("y", datetime(2025, 1, 1), {"k": 1})
    with pytest.raises(TypeError):
        e.name = 3  # type: ignore[assignment]
    with pytest.raises(TypeError):
        e.timestamp = date(2024, 1, 1)  # type: ignore[assignment]
    with pytest.raises(TypeError):
        e.data = {"k": None}
    assert (e.name, e.data) == ("y", {"k": 1})


def test_value_equality_unhashable_repr():
    a = Event("x", TS, {"a": 1})
    b = Event("x", TS, {"a": 1})
    assert a == b
    assert (a != b) is False
    assert a != Event("x", TS, {"a": 2})
    assert a != Event("y", TS, {"a": 1})
    assert a != Event("x", TS + timedelta(seconds=1), {"a": 1})
    assert a != "x"
    with pytest.raises(TypeError):
        hash(a)
    assert (
        repr(a)
        == "Event(name='x', timestamp=datetime.datetime(2024, 1, 2, 3, 4, 5), data={'a': 1})"
    )


class MyEvent(Event):
    pass


def test_pickle_and_copy_round_trip():
    e = Event("x", TS, {"a": 1, "b": "s", "c": True})
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(e, proto))
        assert back == e and type(back) is Event
    assert copy.copy(e) == e and copy.deepcopy(e) == e
    sub = MyEvent("x", TS, {})
    sub.extra = 5  # subclasses get a __dict__
    back = pickle.loads(pickle.dumps(sub))
    assert type(back) is MyEvent and back.extra == 5 and back == sub
    assert repr(sub).startswith("MyEvent(")


def test_data_parity_with_torch():
    import torch.monitor as tm

    data = {"f": 1.5, "i": 7, "s": "str", "neg": -(2**63)}
    ours = Event("n", TS, data)
    theirs = tm.Event("n", TS, data)
    assert ours.name == theirs.name
    assert ours.timestamp == theirs.timestamp
    assert ours.data == theirs.data
    assert {k: type(v) for k, v in ours.data.items()} == {
        k: type(v) for k, v in theirs.data.items()
    }
