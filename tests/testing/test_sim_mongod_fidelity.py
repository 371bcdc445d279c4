"""Behaviours an application's own tests rely on, checked through PyMongo as mongod answers.

Each test pins one documented mongod behaviour (results, error codes and messages) that an
ODM's test suite exercised against the simulated standalone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from bson import DBRef, Int64, ObjectId
from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure

from asyncmongo.testing.deployment import Standalone
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


@pytest.fixture
async def db() -> AsyncIterator[Any]:
    async with Standalone() as server:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            server.uri, serverSelectionTimeoutMS=5000)
        try:
            yield client.fidelity
        finally:
            await client.close()


async def test_dbref_is_a_document_paths_walk_into(db: Any) -> None:
    target = ObjectId()
    await db.doors.insert_one({"_id": target, "t": 10})
    await db.houses.insert_one({"_id": 1, "door": DBRef("doors", target),
                                "windows": [DBRef("doors", target)]})
    assert [d["_id"] for d in await db.houses.find({"door.$id": target}).to_list()] == [1]
    by_field = await (await db.houses.aggregate([{"$lookup": {
        "from": "doors", "localField": "door.$id", "foreignField": "_id", "as": "L"}}])).to_list()
    assert by_field[0]["L"] == [{"_id": target, "t": 10}]
    assert by_field[0]["door"] == DBRef("doors", target)
    by_let = await (await db.houses.aggregate([{"$lookup": {
        "from": "doors", "let": {"ids": "$windows.$id"},
        "pipeline": [{"$match": {"$expr": {"$in": ["$_id", "$$ids"]}}}],
        "as": "L"}}])).to_list()
    assert by_let[0]["L"] == [{"_id": target, "t": 10}]
    assert await db.houses.distinct("door.$ref") == ["doors"]


async def test_regex_option_u_is_accepted(db: Any) -> None:
    await db.c.insert_many([{"_id": 1, "s": "Ünïcode"}, {"_id": 2, "s": "ascii"}])
    found = await db.c.find({"s": {"$regex": "^ü", "$options": "iu"}}).to_list()
    assert [d["_id"] for d in found] == [1]
    with pytest.raises(OperationFailure) as refused:
        await db.c.find_one({"s": {"$regex": "a", "$options": "q"}})
    assert refused.value.code == 2 and "invalid flag in regex options: q" in str(refused.value)


async def test_create_index_rules(db: Any) -> None:
    await db.c.insert_one({"_id": 1, "a": 1})
    assert await db.c.create_index("_id") == "_id_1"  # the _id index exists: nothing to do
    assert list(await db.c.index_information()) == ["_id_"]
    await db.c.create_index("a", name="first")
    with pytest.raises(OperationFailure) as same_key:
        await db.c.create_index("a", name="second")
    assert same_key.value.code == 85
    assert "Index already exists with a different name: first" in str(same_key.value)
    with pytest.raises(OperationFailure) as same_name:
        await db.c.create_index("b", name="first")
    assert same_name.value.code == 86
    assert await db.c.create_index("a", name="first") == "first"
    assert sorted(await db.c.index_information()) == ["_id_", "first"]


async def test_aggregate_refuses_unknown_fields(db: Any) -> None:
    await db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as refused:
        await db.c.aggregate([{"$match": {}}], wrong=True)
    assert refused.value.code == 40415
    assert "BSON field 'aggregate.wrong' is an unknown field." in str(refused.value)
    cursor = await db.c.aggregate([{"$match": {}}], allowDiskUse=True, maxTimeMS=5000,
                                  comment="c", let={"x": 1}, hint="_id_", batchSize=1)
    assert await cursor.to_list() == [{"_id": 1}]


async def test_text_index_listed_in_mongods_form(db: Any) -> None:
    await db.c.create_index([("title", "text"), ("body", "text")], weights={"title": 10})
    info = await db.c.index_information()
    assert info["title_text_body_text"] == {
        "v": 2, "key": [("_fts", "text"), ("_ftsx", 1)],
        "weights": {"body": 1, "title": 10}, "default_language": "english",
        "language_override": "language", "textIndexVersion": 3}
    assert await db.c.create_index([("title", "text"), ("body", "text")],
                                   weights={"title": 10}) == "title_text_body_text"
    with pytest.raises(OperationFailure) as second:
        await db.c.create_index([("a", 1), ("other", "text")])
    assert second.value.code == 67
    assert "only one text index per collection allowed" in str(second.value)


async def test_compound_text_index_keeps_other_fields_in_place(db: Any) -> None:
    await db.c.create_index([("a", 1), ("s", "text"), ("z", -1)])
    spec = (await db.c.index_information())["a_1_s_text_z_-1"]
    assert spec["key"] == [("a", 1), ("_fts", "text"), ("_ftsx", 1), ("z", -1)]
    assert spec["weights"] == {"s": 1}


async def seed_text(db: Any) -> None:
    await db.c.create_index([("s", "text")])
    await db.c.insert_many([
        {"_id": 1, "s": "The quick brown fox"},
        {"_id": 2, "s": "fox fox fox, a fox"},
        {"_id": 3, "s": "lazy dog"},
        {"_id": 4, "s": "Café au lait for the fox and the dog"},
    ])


async def test_text_search_matches_and_scores_as_mongod(db: Any) -> None:
    await seed_text(db)
    found = await db.c.find({"$text": {"$search": "FOX"}}, {"score": {"$meta": "textScore"}}
                            ).sort([("score", {"$meta": "textScore"})]).to_list()
    assert [d["_id"] for d in found] == [2, 1, 4]
    # mongod's formula: each repeat adds half as much; 0.5 * count / tokens + 0.5 per term.
    assert found[0]["score"] == pytest.approx((1 + .5 + .25 + .125) * (0.5 * 4 / 4 + 0.5))
    assert found[1] == {"_id": 1, "s": "The quick brown fox",
                        "score": pytest.approx(0.5 / 3 + 0.5)}
    assert {d["_id"] for d in await db.c.find({"$text": {"$search": "dog -fox"}}).to_list()
            } == {3}
    assert await db.c.find({"$text": {"$search": "-fox"}}).to_list() == []
    phrase = await db.c.find({"$text": {"$search": '"brown fox"'}}).to_list()
    assert [d["_id"] for d in phrase] == [1]
    assert [d["_id"] for d in await db.c.find({"$text": {"$search": "cafe"}}).to_list()] == [4]
    assert await db.c.count_documents({"$text": {"$search": "dog"}, "_id": {"$gt": 3}}) == 1


async def test_text_search_in_aggregation_first_stage_only(db: Any) -> None:
    await seed_text(db)
    pipeline = [{"$match": {"$text": {"$search": "dog"}}},
                {"$addFields": {"score": {"$meta": "textScore"}}},
                {"$sort": {"score": {"$meta": "textScore"}}},
                {"$project": {"s": 0}}]
    found = await (await db.c.aggregate(pipeline)).to_list()
    assert [d["_id"] for d in found] == [3, 4]
    assert set(found[0]) == {"_id", "score"} and found[0]["score"] > found[1]["score"]
    with pytest.raises(OperationFailure) as late:
        await db.c.aggregate([{"$match": {}}, {"$match": {"$text": {"$search": "dog"}}}])
    assert late.value.code == 17313
    with pytest.raises(OperationFailure) as no_score:
        await db.c.aggregate([{"$project": {"score": {"$meta": "textScore"}}}])
    assert no_score.value.code == 40218


async def test_text_search_needs_a_text_index(db: Any) -> None:
    await db.c.insert_one({"_id": 1, "s": "fox"})
    with pytest.raises(OperationFailure) as refused:
        await db.c.find_one({"$text": {"$search": "fox"}})
    assert refused.value.code == 27 and "text index required" in str(refused.value)


async def test_nested_lookups_with_let_and_expr(db: Any) -> None:
    await db.houses.insert_one({"_id": 1, "door": 10})
    await db.doors.insert_one({"_id": 10, "lock": 100})
    await db.locks.insert_one({"_id": 100, "k": "brass"})
    inner = [{"$match": {"$expr": {"$eq": ["$_id", "$$lock_id"]}}}, {"$project": {"_id": 0}}]
    pipeline = [{"$lookup": {
        "from": "doors", "let": {"door_id": "$door"}, "as": "door",
        "pipeline": [{"$match": {"$expr": {"$eq": ["$_id", "$$door_id"]}}},
                     {"$lookup": {"from": "locks", "let": {"lock_id": "$lock"},
                                  "pipeline": inner, "as": "lock"}}]}},
        {"$unwind": "$door"}]
    assert await (await db.houses.aggregate(pipeline)).to_list() == [
        {"_id": 1, "door": {"_id": 10, "lock": [{"k": "brass"}]}}]


async def test_union_with_and_facet_sub_pipelines(db: Any) -> None:
    await db.a.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    await db.b.insert_many([{"_id": 3, "n": 3}, {"_id": 4, "n": 4}])
    union = await (await db.a.aggregate([
        {"$unionWith": {"coll": "b", "pipeline": [{"$match": {"n": {"$gt": 3}}}]}},
        {"$unionWith": "b"},
        {"$facet": {"total": [{"$group": {"_id": None, "s": {"$sum": "$n"}}}],
                    "ids": [{"$project": {"_id": 1}}]}}])).to_list()
    assert union == [{"total": [{"_id": None, "s": 14}],
                      "ids": [{"_id": 1}, {"_id": 2}, {"_id": 4}, {"_id": 3}, {"_id": 4}]}]
    with pytest.raises(OperationFailure) as bad:
        await db.a.aggregate([{"$unionWith": {"coll": "b", "into": 1}}])
    assert bad.value.code == 40415


async def test_graph_lookup_walks_breadth_first_with_depth(db: Any) -> None:
    await db.people.insert_many([
        {"_id": 1, "name": "ann", "boss": None},
        {"_id": 2, "name": "bob", "boss": "ann"},
        {"_id": 3, "name": "cid", "boss": "bob"},
        {"_id": 4, "name": "dan", "boss": "cid"},
    ])
    found = await (await db.people.aggregate([
        {"$match": {"_id": 4}},
        {"$graphLookup": {"from": "people", "startWith": "$boss", "connectFromField": "boss",
                          "connectToField": "name", "as": "chain", "maxDepth": 1,
                          "depthField": "level"}},
        {"$project": {"chain": {"name": 1, "level": 1}}}])).to_list()
    chain = sorted(found[0]["chain"], key=lambda d: d["level"])  # mongod's order is unset
    assert chain == [{"name": "cid", "level": 0}, {"name": "bob", "level": 1}]
    assert type(chain[0]["level"]) is Int64
    everyone = await (await db.people.aggregate([
        {"$match": {"_id": 4}},
        {"$graphLookup": {"from": "people", "startWith": "$boss", "connectFromField": "boss",
                          "connectToField": "name", "as": "chain"}}])).to_list()
    assert sorted(d["name"] for d in everyone[0]["chain"]) == ["ann", "bob", "cid"]


async def test_views_built_on_lookup_and_lookup_from_a_view(db: Any) -> None:
    await db.owners.insert_many([{"_id": 1, "pet": 10}, {"_id": 2, "pet": 11}])
    await db.pets.insert_many([{"_id": 10, "kind": "cat"}, {"_id": 11, "kind": "dog"}])
    await db.create_collection("owned", viewOn="owners", pipeline=[
        {"$lookup": {"from": "pets", "localField": "pet", "foreignField": "_id", "as": "p"}},
        {"$unwind": "$p"}])
    assert await db.owned.distinct("p.kind") == ["cat", "dog"]
    assert [d["_id"] for d in await db.owned.find({"p.kind": "dog"}).to_list()] == [2]
    await db.create_collection("cats", viewOn="pets", pipeline=[{"$match": {"kind": "cat"}}])
    joined = await (await db.owners.aggregate([
        {"$lookup": {"from": "cats", "localField": "pet", "foreignField": "_id", "as": "c"}},
        {"$match": {"c": {"$ne": []}}}])).to_list()
    assert [d["_id"] for d in joined] == [1]


@pytest.mark.parametrize(("pipeline", "code", "name"), [
    ([{"$sample": {"size": 1}}], 40324, "$sample"),
    ([{"$project": {"x": {"$dateToString": {"date": "$$NOW"}}}}], 168, "$dateToString"),
    ([{"$group": {"_id": None, "s": {"$stdDevPop": "$n"}}}], 15952, "$stdDevPop"),
    ([{"$match": {"loc": {"$near": [0, 0]}}}], 2, "$near"),
    ([{"$project": {"x": {"$meta": "searchScore"}}}], 17308, "searchScore"),
])
async def test_unimplemented_features_are_refused_by_name(db: Any, pipeline: list[Any],
                                                          code: int, name: str) -> None:
    await db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as refused:
        await db.c.aggregate(pipeline)
    assert refused.value.code == code
    assert name in str(refused.value) and "asyncmongo.testing" in str(refused.value)


async def test_variable_binding_expressions(db: Any) -> None:
    await db.c.insert_one({"_id": 1, "items": [{"q": 2, "p": 3}, {"q": 1, "p": 5}],
                           "tags": {"a": 1, "b": 2}, "none": None})
    pipeline = [{"$project": {
        "_id": 0,
        "totals": {"$map": {"input": "$items", "as": "i",
                            "in": {"$multiply": ["$$i.q", "$$i.p"]}}},
        "big": {"$filter": {"input": "$items", "cond": {"$gt": ["$$this.p", 4]}}},
        "sum": {"$reduce": {"input": "$items", "initialValue": 0,
                            "in": {"$add": ["$$value", "$$this.q"]}}},
        "let": {"$let": {"vars": {"n": {"$size": "$items"}}, "in": {"$add": ["$$n", 1]}}},
        "kind": {"$switch": {"branches": [{"case": {"$eq": ["$_id", 2]}, "then": "two"}],
                             "default": "other"}},
        "pairs": {"$objectToArray": "$tags"},
        "back": {"$arrayToObject": {"$reverseArray": {"$objectToArray": "$tags"}}},
        "nothing": {"$map": {"input": "$none", "in": 1}},
    }}]
    assert await (await db.c.aggregate(pipeline)).to_list() == [{
        "totals": [6, 5], "big": [{"q": 1, "p": 5}], "sum": 3, "let": 3, "kind": "other",
        "pairs": [{"k": "a", "v": 1}, {"k": "b", "v": 2}], "back": {"b": 2, "a": 1},
        "nothing": None}]
    with pytest.raises(OperationFailure) as no_branch:
        await db.c.aggregate([{"$project": {"k": {"$switch": {"branches": [
            {"case": False, "then": 1}]}}}}])
    assert no_branch.value.code == 40066
    with pytest.raises(OperationFailure) as not_array:
        await db.c.aggregate([{"$project": {"k": {"$map": {"input": "$tags", "in": 1}}}}])
    assert not_array.value.code == 16883


async def test_coll_stats_and_db_stats_commands(db: Any) -> None:
    await db.c.insert_many([{"_id": i, "pad": "x" * 100} for i in range(3)])
    await db.c.create_index("pad")
    stats = await db.command("collStats", "c")
    assert stats["ns"] == "fidelity.c" and stats["count"] == 3 and stats["nindexes"] == 2
    assert set(stats["indexSizes"]) == {"_id_", "pad_1"} and stats["size"] > 300
    with pytest.raises(OperationFailure) as missing:
        await db.command("collStats", "nope")
    assert missing.value.code == 26
    totals = await db.command("dbStats")
    assert (totals["db"], totals["collections"], totals["objects"], totals["indexes"]) == (
        "fidelity", 1, 3, 2)
    assert totals["dataSize"] > 300 and totals["scaleFactor"] == 1


async def test_array_set_and_string_expressions(db: Any) -> None:
    await db.c.insert_one({"_id": 1, "a": [1, 2, 3, 4], "b": [3, 4, 5], "s": "x-y-z"})
    pipeline = [{"$project": {
        "_id": 0,
        "last2": {"$slice": ["$a", -2]}, "mid": {"$slice": ["$a", 1, 2]},
        "at": {"$indexOfArray": ["$a", 3]}, "none": {"$indexOfArray": ["$a", 9]},
        "range": {"$range": [0, 7, 3]},
        "union": {"$setUnion": ["$a", "$b"]}, "both": {"$setIntersection": ["$a", "$b"]},
        "only_a": {"$setDifference": ["$a", "$b"]}, "eq": {"$setEquals": ["$a", "$a"]},
        "sub": {"$setIsSubset": [[3], "$b"]},
        "parts": {"$split": ["$s", "-"]}, "len": {"$strLenCP": "$s"},
        "null_slice": {"$slice": ["$missing", 1]},
    }}]
    (found,) = await (await db.c.aggregate(pipeline)).to_list()
    sets = {name: sorted(found.pop(name)) for name in ("union", "both", "only_a")}
    assert sets == {"union": [1, 2, 3, 4, 5], "both": [3, 4], "only_a": [1, 2]}  # any order
    assert found == {
        "last2": [3, 4], "mid": [2, 3], "at": 2, "none": -1, "range": [0, 3, 6],
        "eq": True, "sub": True, "parts": ["x", "y", "z"], "len": 5, "null_slice": None}
    with pytest.raises(OperationFailure) as bad:
        await db.c.aggregate([{"$project": {"x": {"$split": ["$s", ""]}}}])
    assert bad.value.code == 40087


async def test_same_name_and_key_with_other_options_conflicts(db: Any) -> None:
    await db.c.create_index("a", unique=True)
    assert await db.c.create_index("a", unique=True, background=True) == "a_1"
    with pytest.raises(OperationFailure) as other:
        await db.c.create_index("a")
    assert other.value.code == 85


async def test_text_search_in_writes_and_where_it_is_refused(db: Any) -> None:
    await seed_text(db)
    updated = await db.c.update_many({"$text": {"$search": "dog"}}, {"$set": {"pet": True}})
    assert updated.modified_count == 2
    assert await db.c.distinct("_id", {"$text": {"$search": "dog"}, "pet": True}) == [3, 4]
    with pytest.raises(OperationFailure) as nested:
        await db.c.find_one({"$or": [{"$text": {"$search": "dog"}}, {"_id": 1}]})
    assert nested.value.code == 2 and "asyncmongo.testing" in str(nested.value)
    deleted = await db.c.delete_many({"$and": [{"$text": {"$search": "fox"}}, {"_id": 2}]})
    assert deleted.deleted_count == 1


async def test_to_string_and_to_object_id_for_joins(db: Any) -> None:
    user = ObjectId()
    await db.users.insert_one({"_id": user, "name": "ann"})
    await db.posts.insert_one({"_id": 1, "author": str(user), "n": Int64(7), "ok": True})
    joined = await (await db.posts.aggregate([
        {"$lookup": {"from": "users", "let": {"a": {"$toObjectId": "$author"}},
                     "pipeline": [{"$match": {"$expr": {"$eq": ["$_id", "$$a"]}}},
                                  {"$project": {"_id": 0, "id": {"$toString": "$_id"},
                                                "name": 1}}],
                     "as": "by"}},
        {"$project": {"by": 1, "n": {"$toString": "$n"}, "ok": {"$toString": "$ok"},
                      "none": {"$toString": "$missing"}}}])).to_list()
    assert joined == [{"_id": 1, "by": [{"name": "ann", "id": str(user)}], "n": "7",
                       "ok": "true", "none": None}]
    with pytest.raises(OperationFailure) as bad:
        await db.posts.aggregate([{"$project": {"x": {"$toObjectId": "nope"}}}])
    assert bad.value.code == 241 and "expected 24 but found 4" in str(bad.value)
    with pytest.raises(OperationFailure) as double:
        await db.posts.aggregate([{"$project": {"x": {"$toString": 1.5}}}])
    assert double.value.code == 241 and "asyncmongo.testing" in str(double.value)
