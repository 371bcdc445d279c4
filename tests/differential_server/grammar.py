"""A seeded grammar of MongoDB workloads: documents, filters, projections, sorts, updates and
aggregation pipelines, drawn from a ``random.Random`` so a seed names a case exactly.

Field names come from a small alphabet (``a b c`` with ``a.b``/``a.c`` inside documents and
arrays) so that filters, sorts and updates hit the generated documents. Values mix the BSON
types whose comparison rules differ (int32, int64, double, decimal, string, bool, null, date,
ObjectId, documents, arrays, missing fields).
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import re
from typing import Any

from asyncmongo.bson import Decimal128, Int64, ObjectId

__all__ = ["Case", "Grammar"]

_FIELDS = ("a", "b", "c")
_PATHS = ("a", "b", "c", "a.b", "a.c", "b.b", "a.0", "c.b")
_STRINGS = ("", "a", "ab", "abc", "B", "ba", "Zed")
_DATES = tuple(datetime.datetime(2024, 1, day, tzinfo=datetime.UTC) for day in (1, 2, 3))
_OIDS = tuple(ObjectId(f"65a0000000000000000000{n:02x}") for n in range(3))
_TYPE_NAMES = ("double", "string", "object", "array", "objectId", "bool", "date", "null",
               "int", "long", "decimal", "number")


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """One generated workload: the documents to insert and the operation to run on them.

    ``kind`` is find, count, distinct, update or aggregate; ``spec`` holds its arguments
    (filter, projection, sort, skip, limit, update, multi, upsert, pipeline, key).
    """

    seed: int
    kind: str
    documents: list[dict[str, Any]]
    spec: dict[str, Any]


class Grammar:
    """Draws one ``Case`` per seed; the same seed always gives the same case."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)

    def case(self) -> Case:
        kind = self.rng.choices(("find", "count", "distinct", "update", "aggregate"),
                                weights=(4, 1, 1, 3, 3))[0]
        documents = [self.document(n) for n in range(self.rng.randint(0, 8))]
        spec: dict[str, Any] = {"filter": self.filter()}
        if kind == "find":
            spec["projection"] = self.projection() if self.rng.random() < 0.4 else None
            if self.rng.random() < 0.6:
                spec["sort"] = self.sort()
                spec["skip"] = self.rng.choice((0, 0, 1, 2))
                spec["limit"] = self.rng.choice((0, 0, 1, 3))
        elif kind == "distinct":
            spec["key"] = self.rng.choice(_PATHS)
        elif kind == "update":
            spec.update(update=self.update(), multi=self.rng.random() < 0.5,
                        upsert=self.rng.random() < 0.25)
        elif kind == "aggregate":
            spec["pipeline"] = self.pipeline(spec.pop("filter"))
        return Case(self.seed, kind, documents, spec)

    # -- values and documents --

    def scalar(self) -> Any:
        rng = self.rng
        return rng.choice((
            lambda: rng.randint(-2, 4),
            lambda: Int64(rng.randint(-2, 4)),
            lambda: rng.choice((0.5, 1.0, 2.5, -1.5, 3.0)),
            lambda: Decimal128(rng.choice(("1", "2.5", "-1", "3.0"))),
            lambda: rng.choice(_STRINGS),
            lambda: rng.random() < 0.5,
            lambda: None,
            lambda: rng.choice(_DATES),
            lambda: rng.choice(_OIDS),
        ))()

    def value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if depth < 2 and roll < 0.2:
            return self.subdocument(depth + 1)
        if depth < 2 and roll < 0.4:
            return [self.value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return self.scalar()

    def subdocument(self, depth: int) -> dict[str, Any]:
        return {name: self.value(depth) for name in _FIELDS if self.rng.random() < 0.5}

    def document(self, number: int) -> dict[str, Any]:
        document: dict[str, Any] = {"_id": number}
        for name in _FIELDS:
            if self.rng.random() < 0.8:
                document[name] = self.value()
        return document

    # -- filters --

    def filter(self, depth: int = 0) -> dict[str, Any]:
        if self.rng.random() < 0.15:
            return {}
        if depth < 2 and self.rng.random() < 0.25:
            logical = self.rng.choice(("$and", "$or", "$nor"))
            return {logical: [self.filter(depth + 1) or {"_id": {"$gte": 0}}
                              for _ in range(self.rng.randint(1, 3))]}
        return {self.rng.choice(_PATHS): self.condition(depth)}

    def condition(self, depth: int) -> Any:
        rng = self.rng
        operator = rng.choice(("eq", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin",
                               "$exists", "$type", "$elemMatch", "$size", "$all", "$regex",
                               "$not"))
        if operator == "eq":
            return self.value(1)
        if operator in ("$in", "$nin", "$all"):
            values = [self.value(1) for _ in range(rng.randint(0 if operator != "$all" else 1, 3))]
            if operator != "$all" and rng.random() < 0.2:
                values.append(re.compile(rng.choice(("^a", "b$", "^$"))))
            return {operator: values}
        if operator == "$exists":
            return {"$exists": rng.random() < 0.5}
        if operator == "$type":
            return {"$type": rng.choice(_TYPE_NAMES)}
        if operator == "$elemMatch":
            if rng.random() < 0.5:
                return {"$elemMatch": {rng.choice(("$gt", "$lt", "$eq")): self.scalar()}}
            return {"$elemMatch": {rng.choice(_FIELDS): self.condition(2)}}
        if operator == "$size":
            return {"$size": rng.randint(0, 3)}
        if operator == "$regex":
            return {"$regex": rng.choice(("^a", "b", "^$", "A")),
                    "$options": rng.choice(("", "i"))}
        if operator == "$not":
            inner = self.condition(2) if depth < 2 else {"$gt": self.scalar()}
            if not isinstance(inner, dict) or not inner or not all(
                    key.startswith("$") for key in inner):
                inner = {"$eq": inner}
            return {"$not": inner}
        return {operator: self.value(1)}

    # -- find options --

    def projection(self) -> dict[str, Any]:
        include = self.rng.random() < 0.5
        paths = self.rng.sample(("a", "b", "c", "a.b", "a.c"), self.rng.randint(1, 2))
        if "a" in paths and any(path.startswith("a.") for path in paths):
            paths = [path for path in paths if path != "a"]
        projection: dict[str, Any] = {path: 1 if include else 0 for path in paths}
        if include and self.rng.random() < 0.3:
            projection["_id"] = 0
        return projection

    def sort(self) -> dict[str, int]:
        """A sort ending with ``_id`` so ties resolve the same everywhere."""
        sort = {path: self.rng.choice((1, -1))
                for path in self.rng.sample(("a", "b", "c", "a.b"), self.rng.randint(1, 2))}
        sort["_id"] = 1
        return sort

    # -- updates --

    def update(self) -> dict[str, Any]:
        rng = self.rng
        update: dict[str, dict[str, Any]] = {}
        used: set[str] = set()
        for _ in range(rng.randint(1, 2)):
            operator = rng.choice(("$set", "$unset", "$inc", "$mul", "$min", "$max", "$push",
                                   "$pull", "$addToSet", "$pop", "$rename", "$setOnInsert"))
            path = rng.choice(("a", "b", "c", "a.b", "d"))
            if path.split(".")[0] in used:
                continue
            used.add(path.split(".")[0])
            update.setdefault(operator, {})[path] = self.operand(operator)
        if "$rename" in update:
            update["$rename"] = {path: target for path, target in update["$rename"].items()
                                 if target.split(".")[0] not in used}
            used.update(target.split(".")[0] for target in update["$rename"].values())
            if not update["$rename"]:
                del update["$rename"]
        return update or {"$set": {"z": 1}}

    def operand(self, operator: str) -> Any:
        rng = self.rng
        if operator in ("$inc", "$mul"):
            return rng.choice((1, 2, -1, Int64(3), 0.5, Decimal128("2")))
        if operator == "$unset":
            return ""
        if operator == "$pop":
            return rng.choice((1, -1))
        if operator == "$rename":
            return rng.choice(("e", "f"))
        if operator == "$pull" and rng.random() < 0.4:
            return {rng.choice(("$gt", "$lt", "$in")): self.scalar()
                    if rng.random() < 0.7 else [self.scalar()]}
        if operator in ("$push", "$addToSet") and rng.random() < 0.3:
            return {"$each": [self.value(1) for _ in range(rng.randint(0, 2))]}
        return self.value(1)

    # -- aggregation --

    def pipeline(self, first_match: dict[str, Any]) -> list[dict[str, Any]]:
        """Stages in an order whose result is deterministic: ``$skip``/``$limit`` only follow
        a ``$sort`` ending on a unique ``_id`` (true of collection documents and groups, not of
        unwound documents)."""
        rng = self.rng
        pipeline: list[dict[str, Any]] = [{"$match": first_match}]
        unique_id = True
        for _ in range(rng.randint(0, 3)):
            stage = rng.choice(("$match", "$project", "$addFields", "$group", "$sort",
                                "$unwind", "$count", "$lookup"))
            if stage == "$match":
                pipeline.append({"$match": self.filter(1)})
            elif stage == "$project":
                pipeline.append({"$project": self.stage_projection()})
            elif stage == "$addFields":
                pipeline.append({"$addFields": {rng.choice(("d", "a", "e")): self.expression()}})
            elif stage == "$group":
                pipeline.append({"$group": self.group()})
                unique_id = True
            elif stage == "$sort":
                pipeline.append({"$sort": self.sort()})
                if unique_id and rng.random() < 0.5:
                    pipeline.append({"$skip": rng.randint(0, 2)})
                if unique_id and rng.random() < 0.5:
                    pipeline.append({"$limit": rng.randint(1, 3)})
            elif stage == "$unwind":
                path = rng.choice(("$a", "$b", "$c", "$a.b"))
                pipeline.append({"$unwind": path if rng.random() < 0.6 else
                                 {"path": path, "preserveNullAndEmptyArrays": True}})
                unique_id = False
            elif stage == "$lookup":
                local = rng.choice(("a", "b", "c", "a.b"))
                pipeline.append({"$lookup": {"from": "{self}", "localField": local,
                                             "foreignField": rng.choice(("a", "b", "c")),
                                             "as": "j"}})
            else:
                pipeline.append({"$count": "n"})
                break
        return pipeline

    def stage_projection(self) -> dict[str, Any]:
        if self.rng.random() < 0.3:
            return {"x": self.expression(), "a": 1}
        projection = self.projection()
        projection.pop("_id", None)
        return projection or {"a": 1}

    def expression(self) -> Any:
        rng = self.rng
        field = rng.choice(("$a", "$b", "$c", "$a.b"))
        return rng.choice((
            lambda: field,
            lambda: {"$literal": self.scalar()},
            lambda: {"$add": [field, rng.randint(1, 3)]},
            lambda: {"$ifNull": [field, "none"]},
            lambda: {"$type": field},
            lambda: {"$cond": [{"$gt": [field, 1]}, "big", "small"]},
            lambda: {"$size": {"$ifNull": [{"$cond": [{"$isArray": field}, field, []]}, []]}},
        ))()

    def group(self) -> dict[str, Any]:
        rng = self.rng
        group: dict[str, Any] = {"_id": rng.choice((None, "$a", "$b", "$c", "$a.b"))}
        for number in range(rng.randint(1, 3)):
            accumulator = rng.choice(("$sum", "$avg", "$min", "$max", "$first", "$last",
                                      "$push", "$addToSet", "$count"))
            argument = {} if accumulator == "$count" else rng.choice(
                ("$a", "$b", "$c", "$a.b", 1))
            # $addToSet's order is unspecified: its field is named so the comparison sorts it
            group[f"{accumulator[1:]}{number}"] = {accumulator: argument}
        return group
