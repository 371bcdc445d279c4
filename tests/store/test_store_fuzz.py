"""Malformed and odd commands (seeded, thousands): the store answers every one with a
well-formed reply (BSON-encodable, ok 0 or 1) and never with an internal error."""

from __future__ import annotations

import random
from typing import Any

from asyncmongo.bson import encode
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import Store
from tests.store import differential as gen

COMMANDS = 4000
UPDATE_OPERATORS = ["$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$push",
                    "$addToSet", "$pop", "$pull", "$pullAll", "$currentDate", "$setOnInsert",
                    "$bit", "$x"]
STAGES = ["$match", "$project", "$addFields", "$set", "$unset", "$sort", "$skip", "$limit",
          "$group", "$count", "$unwind", "$sortByCount", "$replaceRoot", "$replaceWith",
          "$facet", "$lookup", "$out", "$merge", "$documents", "$bogus"]
KEYS = ["a", "b.c", "$gt", "$in", "$each", "$slice", "$sum", "$add", "_id", "$elemMatch",
        "path", "from", "as", "into", "newRoot", "localField", "foreignField", "$literal",
        "$cond", "if"]


class Fuzzer:
    """Random command documents: the right shape with wrong or strange values inside."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def junk(self, depth: int = 0) -> Any:
        rng = self.rng
        kind = rng.randrange(14)
        if kind == 3 and depth < 3:
            return [self.junk(depth + 1) for _ in range(rng.randrange(3))]
        if kind == 4 and depth < 3:
            return {rng.choice(KEYS): self.junk(depth + 1) for _ in range(rng.randrange(3))}
        return [
            None, rng.randint(-3, 3), rng.choice(["s", "$a", "$$ROOT", "$$x", "a.b", "", "$"]),
            [], {}, True, rng.choice([1.5, -0.0, float("nan"), float("inf")]),
            Int64(rng.randint(-2, 2**40)), gen.query(rng), gen.value(rng), {}, [],
            rng.randint(0, 2), "x",
        ][kind]

    def update(self) -> Any:
        rng = self.rng
        kind = rng.randrange(4)
        if kind == 0:
            return {rng.choice(UPDATE_OPERATORS): {
                rng.choice(["a", "a.$", "a.$[]", "a.$[x]", "b.0", "_id", ""]): self.junk()}}
        if kind == 1:
            return [{rng.choice(STAGES): self.junk()}]
        return gen.update(rng) if kind == 2 else self.junk()

    def query(self) -> Any:
        return self.rng.choice([gen.query(self.rng), self.junk()])

    def command(self) -> dict[str, Any]:
        rng = self.rng
        name = rng.choice(["insert", "update", "delete", "findAndModify", "find", "count",
                           "distinct", "aggregate", "createIndexes", "dropIndexes", "create",
                           "listCollections", "getMore"])
        builders = {
            "insert": lambda: {"documents": [rng.choice([gen.document(rng, rng.randrange(5)),
                                                         self.junk()]) for _ in range(3)]},
            "update": lambda: {"updates": [{"q": self.query(), "u": self.update(),
                                            "upsert": rng.random() < 0.5,
                                            "multi": rng.random() < 0.5,
                                            "arrayFilters": [self.junk()]}]},
            "delete": lambda: {"deletes": [{"q": self.query(), "limit": self.junk()}]},
            "findAndModify": lambda: {"query": self.query(),
                                      rng.choice(["update", "remove"]): self.update(),
                                      "new": self.junk(), "sort": self.junk(),
                                      "fields": self.junk(), "upsert": rng.random() < 0.5},
            "find": lambda: {"filter": self.query(), "projection": self.junk(),
                             "sort": self.junk(), "skip": self.junk(), "limit": self.junk(),
                             "batchSize": self.junk()},
            "count": lambda: {"query": self.query(), "skip": self.junk(), "limit": self.junk()},
            "distinct": lambda: {"key": rng.choice(["a", "a.x", self.junk()]),
                                 "query": self.junk()},
            "aggregate": lambda: {"pipeline": [{rng.choice(STAGES): self.junk()}
                                               for _ in range(rng.randrange(4))],
                                  "cursor": self.junk()},
            "createIndexes": lambda: {"indexes": [{"key": self.junk(), "name": self.junk(),
                                                   "unique": self.junk()}]},
            "dropIndexes": lambda: {"index": self.junk()},
            "create": lambda: {"capped": self.junk(), "clusteredIndex": self.junk()},
            "listCollections": lambda: {"filter": self.junk(), "cursor": self.junk()},
        }
        if name == "getMore":
            return {"getMore": self.junk(), "collection": self.junk(), "batchSize": self.junk()}
        return {name: "c", **builders[name]()}


def test_every_odd_command_gets_a_well_formed_reply() -> None:
    fuzzer = Fuzzer(20261121)
    store = Store()
    store.handle("db", {"insert": "c", "documents": gen.documents(fuzzer.rng)})
    for _ in range(COMMANDS):
        command = fuzzer.command()
        reply = store.handle("db", command)
        assert reply.get("ok") in (0.0, 1.0), (command, reply)
        assert reply.get("code") != 1, (command, reply)  # 1 = an exception inside the store
        encode(reply)
