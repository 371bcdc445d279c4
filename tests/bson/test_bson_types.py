"""The BSON value types: construction, validation, ordering, equality, hashing."""

from __future__ import annotations

import copy
import pickle
import re
from datetime import UTC, datetime

import pytest

from asyncmongo.bson import (
    Code,
    DatetimeMS,
    Int64,
    InvalidDocument,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)


def test_int64_is_an_int() -> None:
    assert Int64(5) == 5 and isinstance(Int64(5), int)
    assert repr(Int64(5)) == "Int64(5)"


def test_timestamp_orders_by_time_then_inc() -> None:
    assert Timestamp(1, 2) < Timestamp(1, 3) < Timestamp(2, 0)
    assert Timestamp(1, 2) == Timestamp(1, 2)
    assert hash(Timestamp(1, 2)) == hash(Timestamp(1, 2))
    assert Timestamp(0, 0).as_datetime() == datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("time", "inc"), [(-1, 0), (0, 2**32), (2**32, 0)])
def test_timestamp_range(time: int, inc: int) -> None:
    with pytest.raises(InvalidDocument):
        Timestamp(time, inc)


def test_timestamp_types() -> None:
    with pytest.raises(TypeError):
        Timestamp(1.5, 0)  # type: ignore[arg-type]


def test_regex_keeps_flags_and_compares_them_unordered() -> None:
    assert Regex("a", "mi").flags == "mi"
    assert Regex("a", "mi") == Regex("a", "im")
    assert hash(Regex("a", "mi")) == hash(Regex("a", "im"))
    assert Regex("a", "i") != Regex("a", "m")
    assert Regex("a", re.IGNORECASE | re.MULTILINE).flags == "im"  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Regex(b"a")  # type: ignore[arg-type]


def test_code_and_scope() -> None:
    assert Code("x").scope is None
    assert Code("x", {"a": 1}).scope == {"a": 1}
    assert Code("x", a=1) == Code("x", {"a": 1})
    assert Code("x") != Code("x", {})
    assert Code("x") != "x"
    assert Code(Code("x", {"a": 1})).scope == {"a": 1}
    with pytest.raises(TypeError):
        Code(1)  # type: ignore[arg-type]


def test_symbol_is_a_str() -> None:
    assert Symbol("s") == "s" and repr(Symbol("s")) == "Symbol('s')"


def test_min_max_key_order_and_identity() -> None:
    assert MinKey() is MinKey() and MaxKey() is MaxKey()
    for other in (0, "a", None, datetime(2000, 1, 1), MaxKey()):
        assert MinKey() < other
        assert not MinKey() > other
    for other in (0, "a", None, MinKey()):
        assert MaxKey() > other
        assert not MaxKey() < other
    assert MinKey() <= MinKey() and MaxKey() >= MaxKey()
    assert MinKey() == MinKey() != MaxKey()
    assert copy.deepcopy(MinKey()) is MinKey()
    assert pickle.loads(pickle.dumps(MaxKey())) is MaxKey()


def test_undefined() -> None:
    assert Undefined() is Undefined() and Undefined() == Undefined() and not Undefined()
    assert repr(Undefined()) == "Undefined()"


def test_datetime_ms() -> None:
    assert DatetimeMS(datetime(1970, 1, 1, 0, 0, 1)) == DatetimeMS(1000)
    assert repr(DatetimeMS(5)) == "DatetimeMS(5)"
    with pytest.raises(InvalidDocument):
        DatetimeMS(2**63)
    with pytest.raises(TypeError):
        DatetimeMS("5")  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        DatetimeMS(2**62).to_datetime()
