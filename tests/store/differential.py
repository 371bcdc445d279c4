"""Random documents, filters and updates for the store-vs-jongodb differential test.

A seeded generator (``random.Random(seed)``), so every failure is reproducible from its case
number. Values are plain Python types both BSON libraries encode the same way.
"""

from __future__ import annotations

import random
from typing import Any

FIELDS = ("a", "b", "c")
SUBFIELDS = ("x", "y")
PATHS = ("a", "b", "c", "a.x", "b.x", "c.y", "a.0", "b.1", "a.x.y", "d")


def scalar(rng: random.Random, integral_floats: bool = True) -> Any:
    """A random scalar; documents get no integral doubles (jongodb's 1 != 1.0 is listed)."""
    kind = rng.randrange(9)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind in (2, 3):
        return rng.randint(-3, 5)
    if kind == 4:
        return rng.choice([0.5, 1.0, 2.5, -1.5, 3.0] if integral_floats else [0.5, 2.5, -1.5])
    if kind == 5:
        return rng.choice(["", "a", "ab", "b", "B", "abc"])
    if kind == 6:
        return rng.choice([2**31 + 1, -(2**31) - 5])
    if kind == 7:
        return rng.randint(0, 3)
    return rng.choice(["x", "a"])


def value(rng: random.Random, depth: int = 0, integral_floats: bool = True) -> Any:
    kind = rng.randrange(10)
    if depth < 2 and kind in (0, 1):
        return [value(rng, depth + 1, integral_floats) for _ in range(rng.randrange(4))]
    if depth < 2 and kind in (2, 3):
        return {f: value(rng, depth + 1, integral_floats) for f in SUBFIELDS
                if rng.random() < 0.7}
    return scalar(rng, integral_floats)


def document(rng: random.Random, identifier: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"_id": identifier}
    for field in FIELDS:
        if rng.random() < 0.8:
            doc[field] = value(rng, integral_floats=False)
    return doc


def documents(rng: random.Random, count: int = 12) -> list[dict[str, Any]]:
    return [document(rng, i) for i in range(count)]


def condition(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(16)
    if kind == 0:
        return value(rng)
    if kind in (1, 2, 3, 4, 5, 6):
        op = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"])
        return {op: value(rng, 1)}
    if kind == 7:
        op = rng.choice(["$in", "$nin"])
        return {op: [value(rng, 1) for _ in range(rng.randrange(1, 4))]}
    if kind == 8:
        return {"$exists": rng.choice([True, False])}
    if kind == 9:
        return {"$type": rng.choice(["int", "double", "string", "array", "object", "null",
                                     "bool", "number", "long", 16, 2])}
    if kind == 10:
        return {"$size": rng.randrange(4)}
    if kind == 11:
        return {"$all": [scalar(rng) for _ in range(rng.randrange(1, 3))]}
    if kind == 12 and depth == 0:
        inner = {rng.choice(SUBFIELDS): condition(rng, depth + 1)} if rng.random() < 0.5 else {
            "$gt": scalar(rng)}
        return {"$elemMatch": inner}
    if kind == 13 and depth == 0:
        return {"$not": {rng.choice(["$gt", "$lt", "$eq"]): scalar(rng)}}
    if kind == 14:
        return {"$regex": rng.choice(["^a", "b$", "A", "."]),
                "$options": rng.choice(["", "i"])}
    return {"$mod": [rng.choice([2, 3]), rng.randrange(2)]}


def query(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kind = rng.randrange(10)
    if depth < 1 and kind == 0:
        op = rng.choice(["$and", "$or", "$nor"])
        return {op: [query(rng, depth + 1) for _ in range(rng.randrange(1, 3))]}
    return {rng.choice(PATHS): condition(rng)}


def _not_null(rng: random.Random, make: Any) -> Any:
    """A value that is not null: jongodb drops the connection on $addToSet of null (listed in
    the store's docs), and each reconnect costs PyMongo half a second."""
    while True:
        candidate = make()
        if candidate is not None:
            return candidate


JONGODB_UPDATE_OPERATORS = ("$set", "$unset", "$inc", "$addToSet", "$setOnInsert")


def update(rng: random.Random) -> dict[str, Any]:
    """A random operator update; mostly the operators jongodb implements (see
    JONGODB_UPDATE_OPERATORS), sometimes one it lacks (then only the store runs it)."""
    path = rng.choice(("a", "b", "c", "a.x", "c.y", "e", "b.0", "e.f", "a.1"))
    kind = rng.randrange(12)
    if kind in (0, 1):
        return {"$set": {path: value(rng, 1)}}
    if kind == 2:
        return {"$unset": {path: ""}}
    if kind in (3, 4):
        return {"$inc": {path: rng.choice([1, -2, 0.5, 2**31, 2**31 - 1])}}
    if kind in (5, 6):
        return {"$addToSet": {path: _not_null(rng, lambda: value(rng, 1))}}
    if kind == 7:
        return {"$addToSet": {path: {"$each": [_not_null(rng, lambda: scalar(rng))
                                               for _ in range(2)]}}}
    if kind == 8:
        return {"$set": {path: scalar(rng)}, "$inc": {"n": 1}}
    if kind == 9:
        return {"$setOnInsert": {path: 1}, "$set": {"z": scalar(rng)}}
    if kind == 10:
        return {"$set": {"a.x": scalar(rng), "a.y": scalar(rng)}}
    return other_update(rng, path)


def other_update(rng: random.Random, path: str) -> dict[str, Any]:
    kind = rng.randrange(9)
    if kind == 0:
        return {"$mul": {path: rng.choice([2, 0.5, -1])}}
    if kind == 1:
        return {"$min": {path: scalar(rng)}}
    if kind == 2:
        return {"$max": {path: scalar(rng)}}
    if kind == 3:
        return {"$rename": {path: rng.choice(("z", "e.g", "c"))}}
    if kind == 4:
        return {"$push": {path: {"$each": [scalar(rng), scalar(rng)],
                                 "$slice": rng.choice([-2, 1, 3])}}}
    if kind == 5:
        return {"$pop": {path: rng.choice([1, -1])}}
    if kind == 6:
        return {"$pull": {path: rng.choice([scalar(rng), {"$gt": 1}])}}
    if kind == 7:
        return {"$pullAll": {path: [scalar(rng), scalar(rng)]}}
    return {"$push": {path: scalar(rng)}}
