"""ObjectId: parsing, ordering and generation per specs/bson-objectid (its test plan)."""

from __future__ import annotations

import copy
import itertools
import os
import pickle
import sys
from datetime import UTC, datetime, timedelta, timezone
from typing import cast

import pytest

import asyncmongo.bson
from asyncmongo.bson import InvalidId, ObjectId
from asyncmongo.bson import objectid as objectid_module


def test_new_ids_are_unique_and_increasing_within_a_second() -> None:
    ids = [ObjectId() for _ in range(1000)]
    assert len(set(ids)) == 1000
    counters = [int.from_bytes(o.binary[9:], "big") for o in ids]
    assert all((b - a) % 2**24 == 1 for a, b in itertools.pairwise(counters))
    # The 5-byte process value is the same for every id of this process.
    assert len({o.binary[4:9] for o in ids}) == 1


def test_generation_time_is_now() -> None:
    now = datetime.now(UTC)
    generated = ObjectId().generation_time
    assert generated.tzinfo is not None
    assert abs(generated - now) < timedelta(seconds=2)



@pytest.mark.parametrize("compiled", [True, False], ids=["compiled clock", "datetime clock"])
def test_the_clock_is_the_compiled_one_when_built_else_datetimes(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first id resolves the clock: the compiled codec's ``seconds`` when it imports,
    else ``_now_seconds``; either gives the same whole seconds as datetime."""
    if compiled:
        pytest.importorskip("asyncmongo.bson._cencode", reason="the C codec is not built")
    else:
        monkeypatch.setitem(sys.modules, "asyncmongo.bson._cencode", None)  # ImportError
        monkeypatch.delattr(asyncmongo.bson, "_cencode", raising=False)
    generator = objectid_module._Generator()
    before = int(datetime.now(UTC).timestamp())
    first = int.from_bytes(generator.next_oid()[:4], "big")
    after = int(datetime.now(UTC).timestamp())
    assert before <= first <= after
    assert (generator.clock is objectid_module._now_seconds) is not compiled
    assert before <= int.from_bytes(generator.next_oid()[:4], "big") <= after + 1

@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("00000000", datetime(1970, 1, 1, tzinfo=UTC)),
        ("7FFFFFFF", datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC)),
        ("80000000", datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC)),
        ("FFFFFFFF", datetime(2106, 2, 7, 6, 28, 15, tzinfo=UTC)),
    ],
)
def test_timestamp_is_unsigned(prefix: str, expected: datetime) -> None:
    oid = ObjectId(prefix.lower() + "0" * 16)
    assert oid.generation_time == expected
    assert ObjectId.from_datetime(expected).binary[:4] == bytes.fromhex(prefix)


def test_counter_wraps_from_ffffff_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = objectid_module._GENERATOR
    monkeypatch.setattr(generator, "counter", itertools.count(0xFFFFFE))
    tails = [ObjectId().binary[9:] for _ in range(3)]
    assert tails == [b"\xff\xff\xfe", b"\xff\xff\xff", b"\x00\x00\x00"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_process_value_changes_after_fork() -> None:
    parent_value = ObjectId().binary[4:9]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its process value and leave without cleanup
        os.close(read_fd)
        os.write(write_fd, ObjectId().binary[4:9])
        os._exit(0)
    os.close(write_fd)
    child_value = os.read(read_fd, 5)
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert len(child_value) == 5
    assert child_value != parent_value
    assert ObjectId().binary[4:9] == parent_value


def test_parse_forms_and_text() -> None:
    text = "5f1d7f8e9a0b1c2d3e4f5a6b"
    oid = ObjectId(text)
    assert str(oid) == text
    assert repr(oid) == f"ObjectId('{text}')"
    assert ObjectId(text.upper()) == oid
    assert ObjectId(oid.binary) == oid
    assert ObjectId(oid) == oid
    assert ObjectId(cast(bytes, bytearray(oid.binary))) == oid  # accepted at run time too


@pytest.mark.parametrize(
    "bad", ["", "123", "zz" * 12, "5f1d7f8e9a0b1c2d3e4f5a6b0", b"short", b"x" * 13, " " * 24]
)
def test_bad_values_raise_invalid_id(bad: str | bytes) -> None:
    with pytest.raises(InvalidId):
        ObjectId(bad)
    assert not ObjectId.is_valid(bad)


@pytest.mark.parametrize("bad", [12, 1.5, ["a"], {"a": 1}])
def test_wrong_types_raise_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        ObjectId(bad)  # type: ignore[arg-type]
    assert not ObjectId.is_valid(bad)


def test_is_valid() -> None:
    assert ObjectId.is_valid("5f1d7f8e9a0b1c2d3e4f5a6b")
    assert ObjectId.is_valid(b"x" * 12)
    assert not ObjectId.is_valid(None)


def test_ordering_and_hashing_by_bytes() -> None:
    low = ObjectId("000000000000000000000001")
    high = ObjectId("000000000000000000000002")
    assert low < high <= high and high > low >= low
    assert low != high
    assert hash(ObjectId(str(low))) == hash(low)
    assert {low, ObjectId(str(low))} == {low}
    assert (low == "000000000000000000000001") is False


def test_from_datetime_handles_naive_and_offset_times() -> None:
    naive = datetime(2020, 5, 17, 12, 0, 0)
    aware = datetime(2020, 5, 17, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert ObjectId.from_datetime(naive) == ObjectId.from_datetime(aware)
    assert ObjectId.from_datetime(naive).binary[4:] == bytes(8)
    with pytest.raises(InvalidId):
        ObjectId.from_datetime(datetime(1969, 12, 31))


def test_copy_and_pickle() -> None:
    oid = ObjectId()
    assert copy.copy(oid) == oid
    assert copy.deepcopy(oid) == oid
    assert pickle.loads(pickle.dumps(oid)) == oid
