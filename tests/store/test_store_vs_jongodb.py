"""Differential test: the store's query and update semantics against jongodb's.

The same random documents (seeded), filters and updates go to :class:`Store` and to jongodb
(through PyMongo's synchronous client). Results are compared with BSON types (int vs long vs
double) and field order. Every known disagreement is listed, with its reason, in
``asyncmongo/testing/store/__init__.py`` and classified by ``known_difference`` below; any other
disagreement fails the test with the case that shows it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo.testing.store import Store
from tests.store import differential as gen
from tests.support.jongodb import jongodb_uri  # noqa: F401 - the fixture

pymongo = pytest.importorskip("pymongo")

pytestmark = pytest.mark.jongodb

FILTER_CASES = 3000
UPDATE_CASES = 1500


def normal(value: Any) -> Any:
    """A comparable form keeping BSON number types and field order."""
    if isinstance(value, Mapping):
        return ("doc", tuple((k, normal(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(normal(v) for v in value))
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        long = type(value).__name__ == "Int64" or not -(2**31) <= value < 2**31
        return ("long" if long else "int", int(value))
    if isinstance(value, float):
        return ("double", value)
    return ("other", repr(value))


class Pair:
    """The same collection on both sides."""

    def __init__(self, uri: str) -> None:
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        self.remote = self.client["storediff"]["c"]
        self.store = Store()

    def load(self, docs: list[dict[str, Any]]) -> None:
        self.remote.delete_many({})
        self.remote.insert_many([dict(d) for d in docs])
        self.store.handle("storediff", {"delete": "c", "deletes": [{"q": {}, "limit": 0}]})
        reply = self.store.handle("storediff", {"insert": "c", "documents": docs})
        assert reply["n"] == len(docs), reply

    def remote_find(self, query: dict[str, Any]) -> Any:
        try:
            return sorted(d["_id"] for d in self.remote.find(query, {"_id": 1}))
        except pymongo.errors.OperationFailure as exc:
            return ("error", exc.code)

    def store_find(self, query: dict[str, Any]) -> Any:
        reply = self.store.handle("storediff", {"find": "c", "filter": query,
                                                "projection": {"_id": 1}, "batchSize": 1000})
        if not reply["ok"]:
            return ("error", reply["code"])
        return sorted(d["_id"] for d in reply["cursor"]["firstBatch"])

    def remote_update(self, update: dict[str, Any], docs: list[dict[str, Any]]) -> Any:
        """An outcome per document: one bulk write when all succeed; on any failure the
        documents are reloaded and updated one by one (jongodb stops an unordered bulk write at
        its first error)."""
        ids = [d["_id"] for d in docs]
        try:
            self.remote.bulk_write([pymongo.UpdateOne({"_id": i}, update) for i in ids])
            outcomes: list[Any] = ["ok"] * len(ids)
        except (pymongo.errors.OperationFailure, pymongo.errors.AutoReconnect):
            self.remote.delete_many({})
            self.remote.insert_many([dict(d) for d in docs])
            outcomes = [self._update_one(update, i) for i in ids]
        return outcomes, [normal(d) for d in self.remote.find({}).sort("_id", 1)]

    def _update_one(self, update: dict[str, Any], identifier: Any) -> Any:
        try:
            self.remote.update_one({"_id": identifier}, update)
        except pymongo.errors.OperationFailure as exc:
            return _remote_error(exc.code, str(exc))
        except pymongo.errors.AutoReconnect:
            return ("error", "connection closed")
        return "ok"

    def store_update(self, update: dict[str, Any], ids: list[int]) -> Any:
        outcomes: list[Any] = ["ok"] * len(ids)
        reply = self.store.handle("storediff", {"update": "c", "ordered": False, "updates": [
            {"q": {"_id": i}, "u": update} for i in ids]})
        if not reply["ok"]:
            outcomes = [("error", reply["code"])] * len(ids)
        for error in reply.get("writeErrors", []):
            outcomes[error["index"]] = ("error", error["code"])
        found = self.store.handle("storediff", {"find": "c", "sort": {"_id": 1},
                                                "batchSize": 1000})
        return outcomes, [normal(d) for d in found["cursor"]["firstBatch"]]


def _remote_error(code: Any, message: str) -> tuple[str, Any]:
    if "unsupported update operator" in message:
        return ("error", "unsupported")
    if "through non-document segment" in message:
        return ("error", "array segment")
    return ("error", code)


def update_difference(update: Any, ours: Any, theirs: Any) -> str | None:
    """Per document: the documented reason for each differing outcome, or None for a bug."""
    (our_outcomes, our_docs), (their_outcomes, their_docs) = ours, theirs
    for our_outcome, their_outcome, our_doc, their_doc in zip(
            our_outcomes, their_outcomes, our_docs, their_docs, strict=True):
        if our_outcome == their_outcome and our_doc == their_doc:
            continue
        if known_difference("update", update, our_outcome if our_outcome != "ok" else our_doc,
                            their_outcome if their_outcome != "ok" else their_doc) is None:
            return None
    return "every differing document has a documented reason"


def _walk(value: Any) -> list[tuple[str | None, Any]]:
    """Every (operator, operand) pair in a filter (operator None for a plain value)."""
    found: list[tuple[str | None, Any]] = []
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if key.startswith("$"):
                found.append((key, sub))
            else:
                found.append((None, sub))
            found.extend(_walk(sub))
    elif isinstance(value, list):
        for sub in value:
            found.extend(_walk(sub))
    return found


def _integral_float(value: Any) -> bool:
    if isinstance(value, float):
        return value == int(value)
    if isinstance(value, Mapping):
        return any(_integral_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_integral_float(v) for v in value)
    return False


def _unsets_array_element(update: Any, ours: Any, theirs: Any) -> bool:
    paths = list(update.get("$unset", {}))
    return bool(paths) and all(p.split(".")[-1].isdigit() for p in paths)


def _int32_overflow(update: Any, ours: Any, theirs: Any) -> bool:
    """True if the only differences are ints that jongodb wrapped where MongoDB widens."""
    if not isinstance(ours, list) or not isinstance(theirs, list) or "$inc" not in update:
        return False
    wrapped = repr(ours) != repr(theirs) and len(ours) == len(theirs)
    return wrapped and all(_same_modulo_wrap(o, t) for o, t in zip(ours, theirs, strict=True))


def _same_modulo_wrap(ours: Any, theirs: Any) -> bool:
    if ours == theirs:
        return True
    if not isinstance(ours, tuple) or not isinstance(theirs, tuple) or len(ours) != len(theirs):
        return False
    if len(ours) == 2 and ours[0] == "long" and theirs[0] == "int":
        return bool((ours[1] - theirs[1]) % 2**32 == 0)
    return all(_same_modulo_wrap(o, t) for o, t in zip(ours, theirs, strict=True))


def _is_error(outcome: Any) -> bool:
    return isinstance(outcome, tuple) and len(outcome) == 2 and outcome[0] == "error"


def _fewer(ours: Any, theirs: Any) -> bool:
    return isinstance(ours, list) and isinstance(theirs, list) and set(theirs) <= set(ours)


# Each reason is listed in asyncmongo/testing/store/__init__.py; tests/store/
# test_store_semantics.py pins MongoDB's behaviour for each.
JONGODB_CLOSES = ("jongodb closes the connection instead of answering (e.g. $addToSet on "
                  "'b.0' when b is a document)")
JONGODB_UPDATE_OPERATORS = ("jongodb implements only $set, $unset, $inc, $addToSet and "
                            "$setOnInsert ($mul $min $max $rename $push $pop $pull $pullAll "
                            "$currentDate: 'unsupported update operator')")
JONGODB_UNSET_ELEMENT = ("jongodb: $unset of an array element ('b.0') leaves the array unchanged "
                         "(MongoDB sets the element to null)")
JONGODB_ARRAY_SEGMENT = ("jongodb refuses to update a path through an array index ('a.1' when a "
                         "is an array); MongoDB pads or updates the element")
JONGODB_INT32_WRAP = ("jongodb: $inc wraps around on int32 overflow (MongoDB promotes the result "
                      "to a long)")
JONGODB_NESTED_ARRAYS = ("jongodb: $regex reaches into nested arrays (MongoDB expands one array "
                         "level only)")
JONGODB_ARRAY_IN_ARRAY = ("jongodb: equality with an array value does not match an array element "
                          "that is that array ({a: []} vs {a: [[], 1]})")
JONGODB_NUMERIC_EQUALITY = "jongodb: an int and a double of the same value are unequal (3 != 3.0)"
JONGODB_OBJECT_COMPARISON = ("jongodb: $gt/$gte/$lt/$lte with a document or array operand match "
                             "nothing (MongoDB compares documents and arrays in BSON order)")
JONGODB_ALL = "jongodb: $all matches only array fields, and never null or missing"
JONGODB_MOD = ("jongodb: $mod does not truncate doubles and reaches into nested arrays "
               "(MongoDB truncates the dividend and expands one array level only)")
JONGODB_NULL = ("jongodb: $lte/$gte null and $nin [null] ignore that null also matches a "
                "missing field")


def known_difference(kind: str, case: Any, ours: Any, theirs: Any) -> str | None:
    """The documented reason for a disagreement, or None if it is a store bug."""
    if _is_error(ours) and _is_error(theirs):
        return "both fail (error codes may differ: jongodb reports its own codes)"
    if _is_error(theirs) and theirs[1] == 238:
        return "jongodb does not implement this operator (NotImplemented)"
    if theirs == ("error", "connection closed"):
        return JONGODB_CLOSES
    if theirs == ("error", "unsupported"):
        return JONGODB_UPDATE_OPERATORS
    if theirs == ("error", "array segment"):
        return JONGODB_ARRAY_SEGMENT
    if kind == "update" and _int32_overflow(case, [ours], [theirs]):
        return JONGODB_INT32_WRAP
    if kind == "update" and _unsets_array_element(case, ours, theirs):
        return JONGODB_UNSET_ELEMENT
    if kind != "filter":
        return None
    pairs = _walk(case)
    # Under a negation ($ne, $nin, $not, $nor) jongodb's misses become extra matches.
    negated = any(op in ("$ne", "$nin", "$not", "$nor") for op, _ in pairs)
    fewer = _fewer(ours, theirs) or (negated and _fewer(theirs, ours))
    if _integral_float(case):
        return JONGODB_NUMERIC_EQUALITY
    if fewer and any(op in ("$gt", "$gte", "$lt", "$lte")
                                   and isinstance(arg, Mapping | list) for op, arg in pairs):
        return JONGODB_OBJECT_COMPARISON
    if fewer and any(op == "$all" for op, _ in pairs):
        return JONGODB_ALL
    if any(op == "$mod" for op, _ in pairs):
        return JONGODB_MOD
    if any(op == "$regex" for op, _ in pairs) and _fewer(theirs, ours):
        return JONGODB_NESTED_ARRAYS
    if fewer and any(isinstance(arg, list) and op in (None, "$eq", "$in", "$ne", "$nin")
                                   for op, arg in pairs):
        return JONGODB_ARRAY_IN_ARRAY
    if any((op in ("$lte", "$gte") and arg is None) or (op == "$nin" and None in arg)
           for op, arg in pairs):
        return JONGODB_NULL
    return None


@pytest.fixture(scope="module")
def pair(jongodb_uri: str) -> Any:  # noqa: F811
    pair = Pair(jongodb_uri)
    yield pair
    pair.client.close()


def test_filters_agree(pair: Pair) -> None:
    rng = random.Random(20261121)
    failures = []
    docs = gen.documents(rng)
    pair.load(docs)
    for case in range(FILTER_CASES):
        if case % 100 == 99:
            docs = gen.documents(rng)
            pair.load(docs)
        query = gen.query(rng)
        ours, theirs = pair.store_find(query), pair.remote_find(query)
        if ours != theirs and known_difference("filter", query, ours, theirs) is None:
            failures.append(f"case {case}: filter {query!r}: store {ours} jongodb {theirs}")
    assert not failures, f"{len(failures)} disagreements:\n" + "\n".join(failures[:15]) + (
        "\ndocs: " + repr(docs))


def test_updates_agree(pair: Pair) -> None:
    rng = random.Random(11212026)
    failures = []
    for case in range(UPDATE_CASES):
        docs = gen.documents(rng, 4)
        update = gen.update(rng)
        pair.load(docs)
        ids = [d["_id"] for d in docs]
        ours = pair.store_update(update, ids)
        theirs = pair.remote_update(update, docs)
        if ours != theirs and update_difference(update, ours, theirs) is None:
            failures.append(f"case {case}: update {update!r} on {docs!r}:\n  store   {ours}\n"
                            f"  jongodb {theirs}")
    assert not failures, f"{len(failures)} disagreements:\n" + "\n".join(failures[:10])
