"""Update operators, replacements, positional paths, upsert seeding and the server's errors
(store.update)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.types import Int64, Timestamp
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.update import UpdateContext, apply_update, upsert_seed

NOW = datetime.datetime(2025, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)
BASE: dict[str, Any] = {"_id": 1, "n": 5, "f": 1.5, "s": "x", "l": [1, 2, 3],
                        "d": {"a": 1, "b": [{"k": 1, "v": 10}, {"k": 2, "v": 20}]}}


def run(update: Any, document: dict[str, Any] | None = None, **context: Any) -> dict[str, Any]:
    return apply_update(document if document is not None else BASE, update,
                        UpdateContext(now=NOW, **context))


@pytest.mark.parametrize(
    ("update", "field", "expected"),
    [
        ({"$set": {"n": 7}}, "n", 7),
        ({"$set": {"d.a": 2}}, "d", {"a": 2, "b": BASE["d"]["b"]}),
        ({"$set": {"new.deep": 1}}, "new", {"deep": 1}),
        ({"$set": {"l.1": 9}}, "l", [1, 9, 3]),
        ({"$set": {"l.4": 9}}, "l", [1, 2, 3, None, 9]),
        ({"$inc": {"n": 2}}, "n", 7),
        ({"$inc": {"n": 0.5}}, "n", 5.5),
        ({"$inc": {"n": Int64(1)}}, "n", Int64(6)),
        ({"$inc": {"n": Decimal128("1.5")}}, "n", Decimal128("6.5")),
        ({"$inc": {"missing": 3}}, "missing", 3),
        ({"$mul": {"n": 2}}, "n", 10),
        ({"$mul": {"missing": 2.0}}, "missing", 0.0),
        ({"$min": {"n": 3}}, "n", 3),
        ({"$min": {"n": 9}}, "n", 5),
        ({"$max": {"n": 9}}, "n", 9),
        ({"$max": {"missing": 1}}, "missing", 1),
        ({"$push": {"l": 4}}, "l", [1, 2, 3, 4]),
        ({"$push": {"new": 4}}, "new", [4]),
        ({"$push": {"l": {"$each": [5, 4]}}}, "l", [1, 2, 3, 5, 4]),
        ({"$push": {"l": {"$each": [0], "$position": 0}}}, "l", [0, 1, 2, 3]),
        ({"$push": {"l": {"$each": [9], "$position": -1}}}, "l", [1, 2, 9, 3]),
        ({"$push": {"l": {"$each": [0], "$sort": -1}}}, "l", [3, 2, 1, 0]),
        ({"$push": {"l": {"$each": [4, 5], "$slice": -2}}}, "l", [4, 5]),
        ({"$push": {"l": {"$each": [], "$slice": 1}}}, "l", [1]),
        ({"$push": {"d.b": {"$each": [{"k": 0, "v": 5}], "$sort": {"v": -1}}}}, "d",
         {"a": 1, "b": [{"k": 2, "v": 20}, {"k": 1, "v": 10}, {"k": 0, "v": 5}]}),
        ({"$addToSet": {"l": 2}}, "l", [1, 2, 3]),
        ({"$addToSet": {"l": 2.0}}, "l", [1, 2, 3]),
        ({"$addToSet": {"l": {"$each": [3, 4, 4]}}}, "l", [1, 2, 3, 4]),
        ({"$pop": {"l": 1}}, "l", [1, 2]),
        ({"$pop": {"l": -1}}, "l", [2, 3]),
        ({"$pull": {"l": 2}}, "l", [1, 3]),
        ({"$pull": {"l": {"$gte": 2}}}, "l", [1]),
        ({"$pull": {"d.b": {"k": 1}}}, "d", {"a": 1, "b": [{"k": 2, "v": 20}]}),
        ({"$pullAll": {"l": [1, 3]}}, "l", [2]),
        ({"$currentDate": {"t": True}}, "t", NOW),
        ({"$currentDate": {"t": {"$type": "date"}}}, "t", NOW),
        ({"$currentDate": {"t": {"$type": "timestamp"}}}, "t",
         Timestamp(int(NOW.timestamp()), 1)),
        ({"$set": {"d.b.$[].v": 0}}, "d", {"a": 1, "b": [{"k": 1, "v": 0}, {"k": 2, "v": 0}]}),
        ({"$bit": {"n": {"and": 4}}}, "n", 4),
        ({"$bit": {"n": {"or": 2, "xor": 1}}}, "n", 6),
        ({"$bit": {"n": {"or": Int64(8)}}}, "n", Int64(13)),
        ({"$bit": {"missing": {"or": 3}}}, "missing", 3),
    ],
)
def test_operators(update: dict[str, Any], field: str, expected: Any) -> None:
    result = run(update)
    assert result[field] == expected
    assert type(result[field]) is type(expected)


def test_unset_and_rename() -> None:
    assert "s" not in run({"$unset": {"s": ""}})
    assert run({"$unset": {"nope": ""}}) == BASE
    renamed = run({"$rename": {"s": "t"}})
    assert "s" not in renamed and renamed["t"] == "x"
    assert run({"$rename": {"d.a": "top"}})["top"] == 1
    assert run({"$rename": {"missing": "x"}}) == BASE


def test_new_fields_are_added_in_lexicographic_order() -> None:
    result = run({"$set": {"zz": 1, "aa": 2}, "$inc": {"mm": 1}}, {"_id": 1})
    assert list(result) == ["_id", "aa", "mm", "zz"]


def test_the_original_document_is_not_changed() -> None:
    document = {"_id": 1, "l": [1], "d": {"a": 1}}
    run({"$push": {"l": 2}, "$set": {"d.a": 2}}, document)
    assert document == {"_id": 1, "l": [1], "d": {"a": 1}}


def test_set_on_insert_only_on_insert() -> None:
    assert "x" not in run({"$setOnInsert": {"x": 1}})
    assert run({"$setOnInsert": {"x": 1}}, {}, is_insert=True) == {"x": 1}


def test_positional_operator_uses_the_query() -> None:
    result = run({"$set": {"d.b.$.v": 99}}, query={"d.b.k": 2})
    assert result["d"]["b"] == [{"k": 1, "v": 10}, {"k": 2, "v": 99}]
    result = run({"$inc": {"l.$": 10}}, query={"l": 2})
    assert result["l"] == [1, 12, 3]
    result = run({"$set": {"d.b.$.v": 0}}, query={"d.b": {"$elemMatch": {"k": 1}}})
    assert result["d"]["b"][0] == {"k": 1, "v": 0}


def test_array_filters() -> None:
    result = run({"$set": {"d.b.$[e].v": 0}}, array_filters=({"e.k": {"$gt": 1}},))
    assert result["d"]["b"] == [{"k": 1, "v": 10}, {"k": 2, "v": 0}]
    result = run({"$inc": {"l.$[x]": 100}}, array_filters=({"x": {"$gte": 2}},))
    assert result["l"] == [1, 102, 103]


def test_replacement_keeps_the_id_first() -> None:
    assert run({"z": 1}) == {"_id": 1, "z": 1}
    assert run({"z": 1, "_id": 1}) == {"_id": 1, "z": 1}


@pytest.mark.parametrize(
    ("update", "code", "message"),
    [
        ({"$set": {"_id": 2}}, 66, "Performing an update on the path '_id' would modify the "
                                   "immutable field '_id'"),
        ({"_id": 2, "z": 1}, 66, "After applying the update, the (immutable) field '_id' was "
                                 "found to have been altered to _id: 2"),
        ({"$inc": {"s": 1}}, 14, "Cannot apply $inc to a value of non-numeric type. {_id: 1} "
                                 "has the field 's' of non-numeric type string"),
        ({"$inc": {"n": "x"}}, 14, 'Cannot increment with non-numeric argument: {n: "x"}'),
        ({"$set": {"d": 1}, "$inc": {"d.a": 1}}, 40, "Updating the path 'd.a' would create a "
                                                     "conflict at 'd'"),
        ({"$set": {"n": 1}, "$unset": {"n": 1}}, 40, "would create a conflict at 'n'"),
        ({"$foo": {"a": 1}}, 9, "Unknown modifier: $foo"),
        ({"$set": 1}, 9, "Modifiers operate on fields"),
        ({"$set": {"n.x": 1}}, 28, "Cannot create field 'x' in element {n: 5}"),
        ({"$push": {"n": 1}}, 2, "The field 'n' must be an array but is of type int in "
                                 "document {_id: 1}"),
        ({"$addToSet": {"s": 1}}, 2, "must be an array"),
        ({"$pop": {"l": 2}}, 2, "$pop expects 1 or -1, found: 2"),
        ({"$pop": {"n": 1}}, 14, "Path 'n' contains an element of non-array type 'int'"),
        ({"$pull": {"n": 1}}, 2, "Cannot apply $pull to a non-array value"),
        ({"$pullAll": {"l": 1}}, 2, "$pullAll requires an array argument"),
        ({"$rename": {"s": "s"}}, 2, "The source and target field for $rename must differ"),
        ({"$rename": {"s": 1}}, 2, "The 'to' field for $rename must be a string"),
        ({"$set": {"": 1}}, 56, "An empty update path is not valid."),
        ({"$set": {"l.$": 1}}, 2, "The positional operator did not find the match needed"),
        ({"$set": {"l.$[q]": 1}}, 2, "No array filter found for identifier 'q'"),
        ({"z": 1, "$set": {"a": 1}}, 52, "The dollar ($) prefixed field '$set'"),
        ({"$bit": {"f": {"and": 1}}}, 2, "Cannot apply $bit to a value of non-integral type"),
        ({"$bit": {"n": {"not": 1}}}, 2, "only supports 'and', 'or', and 'xor'"),
        ({"$bit": {"n": {"and": 1.5}}}, 2, "must be an Integer(32/64 bit)"),
    ],
)
def test_errors(update: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(StoreError) as caught:
        run(update)
    assert caught.value.code == code
    assert message in caught.value.errmsg


def test_unused_array_filter_is_an_error() -> None:
    with pytest.raises(StoreError) as caught:
        run({"$set": {"n": 1}}, array_filters=({"x": 1},))
    assert caught.value.code == 9


def test_upsert_seed_takes_the_equality_conditions() -> None:
    seed = upsert_seed({"a": 1, "b.c": 2, "x": {"$gt": 1}, "y": {"$eq": 3},
                        "$and": [{"q": 4}], "$or": [{"r": 5}]})
    assert seed == {"a": 1, "b": {"c": 2}, "y": 3, "q": 4}
