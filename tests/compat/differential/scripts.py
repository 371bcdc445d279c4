"""The differential scripts: one per API area, each calling every public method of it.

Every script takes a :class:`~.harness.Run` and calls the API through ``run.step``; it runs
once through PyMongo's client and once through the compatible client. A step's call is a
lambda, so what raises is the call itself. PyMongo's own objects (write models, IndexModel,
DBRef, ...) are used in both runs, as code written for PyMongo would.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import bson
import pymongo
from pymongo import IndexModel, ReadPreference
from pymongo.operations import DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from tests.compat.differential.harness import Run

Script = Callable[[Run], Awaitable[None]]


async def client_script(run: Run) -> None:
    client = run.new_client()
    step = run.step
    await step("aconnect", lambda: client.aconnect())
    for name in ("address", "primary", "secondaries", "arbiters", "is_primary", "is_mongos"):
        await step(name, lambda name=name: getattr(client, name))
    await step("nodes", lambda: client.nodes)
    await step("HOST", lambda: client.HOST)
    await step("PORT", lambda: client.PORT)
    await step("codec_options", lambda: client.codec_options)
    await step("read_concern", lambda: client.read_concern)
    await step("read_preference", lambda: client.read_preference)
    await step("write_concern", lambda: client.write_concern)
    await step("options", lambda: client.options)
    await step("options.pool_options", lambda: client.options.pool_options.max_pool_size)
    await step("topology_description", lambda: client.topology_description)
    await step("server_descriptions", lambda: sorted(
        type(d).__name__ for d in client.topology_description.server_descriptions().values()
    ))
    await step(
        "topology_type_name", lambda: client.topology_description.topology_type_name
    )
    await step("getitem", lambda: client[run.db_name])
    await step("getattr", lambda: getattr(client, run.db_name))
    await step("get_database", lambda: client.get_database(run.db_name))
    await step(
        "get_database(options)",
        lambda: client.get_database(
            run.db_name, read_preference=ReadPreference.SECONDARY, write_concern=WriteConcern(w=1)
        ).read_preference,
    )
    await step("get_default_database(none)", lambda: client.get_default_database())
    await step("get_default_database(default)", lambda: client.get_default_database("dflt"))
    await step("insert", lambda: client[run.db_name].c.insert_one({"_id": 1}))
    await step("list_database_names", lambda: client.list_database_names())
    cursor = await step("list_databases", lambda: client.list_databases(nameOnly=True))
    await step("list_databases.to_list", lambda: cursor.to_list(None))
    await step("server_info", lambda: client.server_info())
    await step("buildInfo", lambda: client.admin.command({"buildInfo": 1}))
    await step("append_metadata", lambda: client.append_metadata(
        pymongo.driver_info.DriverInfo("differential", "1.0")
    ))
    await step("eq_props", lambda: client.eq_props())
    await step("next", lambda: client.next())
    await step("equal", lambda: client == client)
    ns = f"{run.db_name}.c"
    await step("bulk_write", lambda: client.bulk_write([
        pymongo.InsertOne({"_id": 2}, namespace=ns),
        pymongo.UpdateOne({"_id": 1}, {"$set": {"x": 1}}, namespace=ns),
        pymongo.DeleteOne({"_id": 2}, namespace=ns),
    ]))
    await step("bulk_write(verbose)", lambda: client.bulk_write([
        pymongo.InsertOne({"_id": 3}, namespace=ns),
        pymongo.UpdateOne({"_id": 3}, {"$set": {"x": 1}}, namespace=ns),
        pymongo.DeleteMany({"_id": 3}, namespace=ns),
    ], verbose_results=True))
    await step("bulk_write(error)", lambda: client.bulk_write([
        pymongo.InsertOne({"_id": 1}, namespace=ns),
    ]))
    stream = await step("watch", lambda: client.watch())
    await step("watch.close", lambda: stream.close())
    session = await step("start_session", lambda: client.start_session())
    await step("session.end_session", lambda: session.end_session())
    await step("drop_database", lambda: client.drop_database(run.db_name))
    await step("drop_database(db)", lambda: client.drop_database(client[run.db_name]))
    await step("drop_database(int)", lambda: client.drop_database(1))
    await step("close", lambda: client.close())
    await step("aclose", lambda: client.aclose())


async def client_context_script(run: Run) -> None:
    step = run.step

    async def use() -> Any:
        async with run.new_client() as client:
            return await client[run.db_name].c.count_documents({})

    await step("async with", use)
    await step("bad option", lambda: run.new_client(w=-5))
    await step("bad uri", lambda: run.client_class("nosuch://x"))


async def database_script(run: Run) -> None:
    client = run.new_client()
    db = client[run.db_name]
    step = run.step
    await step("name", lambda: db.name)
    await step("client", lambda: db.client)
    for name in ("codec_options", "read_concern", "read_preference", "write_concern"):
        await step(name, lambda name=name: getattr(db, name))
    await step("getitem", lambda: db["c"])
    await step("getattr", lambda: db.c)
    await step("get_collection", lambda: db.get_collection("c"))
    await step("with_options", lambda: db.with_options(
        read_preference=ReadPreference.SECONDARY_PREFERRED,
        read_concern=ReadConcern("majority"),
    ).read_preference)
    await step("create_collection", lambda: db.create_collection("c"))
    await step("create_collection(exists)", lambda: db.create_collection("c"))
    await step("create_collection(check_exists=False)", lambda: db.create_collection(
        "c", check_exists=False
    ))
    await step("create_collection(capped)", lambda: db.create_collection(
        "capped", capped=True, size=4096
    ))
    await step("list_collection_names", lambda: db.list_collection_names())
    await step("list_collection_names(filter)", lambda: db.list_collection_names(
        filter={"name": "c"}
    ))
    cursor = await step("list_collections", lambda: db.list_collections(filter={"name": "c"}))
    await step("list_collections.to_list", lambda: cursor.to_list(None))
    await step("command(str)", lambda: db.command("ping"))
    await step("command(doc)", lambda: db.command({"count": "c"}))
    await step("command(value)", lambda: db.command("count", "c", query={"x": 1}))
    await step("command(unknown)", lambda: db.command("noSuchCommand"))
    await step("command(codec_options)", lambda: db.command(
        "find", "c", codec_options=bson.codec_options.CodecOptions(document_class=bson.SON)
    ))
    await db.c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    cursor = await step("cursor_command", lambda: db.cursor_command(
        "find", "c", batchSize=1
    ))
    await step("cursor_command.to_list", lambda: cursor.to_list(None))
    cursor = await step("aggregate", lambda: db.aggregate(
        [{"$documents": [{"a": 1}, {"a": 2}]}, {"$match": {"a": 2}}]
    ))
    await step("aggregate.to_list", lambda: cursor.to_list(None))
    await step("dereference", lambda: db.dereference(bson.DBRef("c", 1)))
    await step("dereference(missing)", lambda: db.dereference(bson.DBRef("c", 9)))
    await step("validate_collection", lambda: db.validate_collection("c"))
    stream = await step("watch", lambda: db.watch())
    await step("watch.close", lambda: stream.close())
    await step("drop_collection", lambda: db.drop_collection("capped"))
    await step("drop_collection(missing)", lambda: db.drop_collection("missing"))
    await step("next", lambda: db.next())
    await step("equal", lambda: db == client[run.db_name])
    await client.drop_database(run.db_name)
    await client.close()


async def collection_script(run: Run) -> None:
    client = run.new_client()
    db = client[run.db_name]
    coll = db.c
    step = run.step
    for name in ("name", "full_name", "database", "codec_options", "read_concern",
                 "read_preference", "write_concern"):
        await step(name, lambda name=name: getattr(coll, name))
    await step("getattr(sub)", lambda: coll.sub)
    await step("getitem(sub)", lambda: coll["sub"])
    await step("with_options", lambda: coll.with_options(write_concern=WriteConcern(w=1)))
    await step("insert_one", lambda: coll.insert_one({"_id": 1, "x": 1, "tags": ["a"]}))
    await step("insert_one(dup)", lambda: coll.insert_one({"_id": 1}))
    await step("insert_one(generated id)", lambda: coll.insert_one({"x": 100}))
    await step("insert_many", lambda: coll.insert_many(
        [{"_id": i, "x": i, "tags": ["a", "b"][: i % 3]} for i in range(2, 8)]
    ))
    await step("insert_many(dup)", lambda: coll.insert_many([{"_id": 20}, {"_id": 2}]))
    await step("insert_many(unordered)", lambda: coll.insert_many(
        [{"_id": 2}, {"_id": 21}], ordered=False
    ))
    await step("insert_many(empty)", lambda: coll.insert_many([]))
    await step("insert_one(not a doc)", lambda: coll.insert_one([1]))
    await step("find_one", lambda: coll.find_one({"_id": 1}))
    await step("find_one(by id)", lambda: coll.find_one(3))
    await step("find_one(projection)", lambda: coll.find_one({"_id": 2}, {"x": 1, "_id": 0}))
    await step("find_one(none)", lambda: coll.find_one({"_id": "missing"}))
    await step("find.to_list", lambda: coll.find({"x": {"$lt": 5}}, sort=[("x", -1)]).to_list())
    await step("find(sort=[])", lambda: coll.find({}, sort=[], limit=2).to_list())
    cursor = await step("find_raw_batches", lambda: coll.find_raw_batches({"_id": {"$lt": 3}}))
    await step("find_raw_batches.to_list", lambda: cursor.to_list())
    await step("update_one", lambda: coll.update_one({"_id": 1}, {"$set": {"y": 1}}))
    await step("update_one(upsert)", lambda: coll.update_one(
        {"_id": 50}, {"$set": {"y": 1}}, upsert=True
    ))
    await step("update_one(bad)", lambda: coll.update_one({"_id": 1}, {"y": 1}))
    await step("update_one(array_filters)", lambda: coll.update_one(
        {"_id": 4}, {"$set": {"tags.$[t]": "z"}}, array_filters=[{"t": "a"}]
    ))
    await step("update_many", lambda: coll.update_many({"x": {"$gt": 3}}, {"$inc": {"x": 10}}))
    await step("update_many(pipeline)", lambda: coll.update_many(
        {"_id": 1}, [{"$set": {"z": {"$add": ["$x", 1]}}}]
    ))
    await step("replace_one", lambda: coll.replace_one({"_id": 2}, {"x": 2, "r": True}))
    await step("replace_one(upsert)", lambda: coll.replace_one(
        {"_id": 51}, {"r": True}, upsert=True
    ))
    await step("replace_one(operator)", lambda: coll.replace_one({"_id": 2}, {"$set": {"x": 1}}))
    await step("delete_one", lambda: coll.delete_one({"_id": 51}))
    await step("delete_many", lambda: coll.delete_many({"_id": {"$in": [50, 60]}}))
    await step("count_documents", lambda: coll.count_documents({"x": {"$gt": 1}}))
    await step("count_documents(skip limit)", lambda: coll.count_documents({}, skip=1, limit=3))
    await step("estimated_document_count", lambda: coll.estimated_document_count())
    await step("distinct", lambda: coll.distinct("tags"))
    await step("distinct(filter)", lambda: coll.distinct("x", {"_id": {"$lt": 4}}))
    await step("find_one_and_update", lambda: coll.find_one_and_update(
        {"_id": 3}, {"$set": {"f": 1}}, return_document=pymongo.ReturnDocument.AFTER
    ))
    await step("find_one_and_update(upsert)", lambda: coll.find_one_and_update(
        {"_id": 70}, {"$set": {"f": 1}}, upsert=True, projection={"f": 1}
    ))
    await step("find_one_and_update(sort)", lambda: coll.find_one_and_update(
        {}, {"$inc": {"f": 1}}, sort=[("_id", -1)]
    ))
    await step("find_one_and_replace", lambda: coll.find_one_and_replace(
        {"_id": 70}, {"g": 1}
    ))
    await step("find_one_and_delete", lambda: coll.find_one_and_delete({"_id": 70}))
    await step("find_one_and_delete(none)", lambda: coll.find_one_and_delete({"_id": 71}))
    await step("bulk_write", lambda: coll.bulk_write([
        InsertOne({"_id": 80}),
        UpdateOne({"_id": 80}, {"$set": {"b": 1}}),
        UpdateMany({"_id": {"$gte": 80}}, {"$set": {"c": 1}}),
        ReplaceOne({"_id": 81}, {"b": 2}, upsert=True),
        DeleteOne({"_id": 80}),
    ]))
    await step("bulk_write(error)", lambda: coll.bulk_write([InsertOne({"_id": 81})]))
    await step("bulk_write(empty)", lambda: coll.bulk_write([]))
    await step("create_index", lambda: coll.create_index("x"))
    await step("create_index(options)", lambda: coll.create_index(
        [("y", pymongo.DESCENDING), ("x", 1)], unique=True, sparse=True, name="yx"
    ))
    await step("create_indexes", lambda: coll.create_indexes([
        IndexModel([("f", 1)]), IndexModel("g", name="gee")
    ]))
    await step("index_information", lambda: coll.index_information())
    cursor = await step("list_indexes", lambda: coll.list_indexes())
    await step("list_indexes.to_list", lambda: cursor.to_list(None))
    await step("drop_index", lambda: coll.drop_index("gee"))
    await step("drop_index(spec)", lambda: coll.drop_index([("f", 1)]))
    await step("drop_index(missing)", lambda: coll.drop_index("nope"))
    await step("drop_indexes", lambda: coll.drop_indexes())
    await step("drop_indexes(missing coll)", lambda: db.missing.drop_indexes())
    await step("create_search_index", lambda: coll.create_search_index(
        {"definition": {"mappings": {"dynamic": True}}}
    ))
    await step("create_search_indexes", lambda: coll.create_search_indexes(
        [pymongo.operations.SearchIndexModel({"mappings": {"dynamic": True}}, name="s")]
    ))
    await step("list_search_indexes", lambda: coll.list_search_indexes())
    await step("update_search_index", lambda: coll.update_search_index("s", {}))
    await step("drop_search_index", lambda: coll.drop_search_index("s"))
    cursor = await step("aggregate", lambda: coll.aggregate(
        [{"$match": {"_id": {"$lt": 5}}}, {"$sort": {"_id": 1}}, {"$project": {"x": 1}}]
    ))
    await step("aggregate.to_list", lambda: cursor.to_list(None))
    await step("aggregate($out)", lambda: coll.aggregate([{"$out": "out"}]))
    await step("aggregate(bad)", lambda: coll.aggregate([{"$nosuch": {}}]))
    cursor = await step("aggregate_raw_batches", lambda: coll.aggregate_raw_batches([]))
    await step("options", lambda: coll.options())
    stream = await step("watch", lambda: coll.watch())
    await step("watch.close", lambda: stream.close())
    await step("rename", lambda: db.out.rename("out2"))
    await step("rename(exists)", lambda: db.out2.rename("c"))
    await step("rename(dropTarget)", lambda: db.out2.rename("c2", dropTarget=True))
    await step("drop", lambda: db.c2.drop())
    await step("next", lambda: coll.next())
    await step("call", lambda: coll.nosuch())
    await _collection_options(run, db.opts)
    await _unacknowledged(run, db.unack)
    await step("equal", lambda: coll == db.c)
    await step("bool", lambda: bool(coll))
    await client.drop_database(run.db_name)
    await client.close()


async def _collection_options(run: Run, coll: Any) -> None:
    """The options each CRUD method passes on (hint, collation, let, comment, ...)."""
    step = run.step
    collation = {"locale": "en", "strength": 2}
    await coll.insert_many([{"_id": i, "s": s} for i, s in enumerate(["a", "A", "b"])])
    await coll.create_index("s")
    await step("create_index(ttl partial)", lambda: coll.create_index(
        "t", expireAfterSeconds=60, partialFilterExpression={"t": {"$exists": True}},
        comment="ci",
    ))
    await step("insert_many(bypass)", lambda: coll.insert_many(
        [{"_id": 10}], bypass_document_validation=True, comment="im"
    ))
    await step("update_one(hint collation let)", lambda: coll.update_one(
        {"$expr": {"$eq": ["$s", "$$v"]}}, {"$set": {"u": 1}}, hint="s_1",
        let={"v": "a"}, comment="u1",
    ))
    await step("update_many(collation)", lambda: coll.update_many(
        {"s": "a"}, {"$set": {"m": 1}}, collation=collation
    ))
    await step("replace_one(hint)", lambda: coll.replace_one({"_id": 10}, {"r": 1}, hint="_id_"))
    await step("delete_many(collation)", lambda: coll.delete_many(
        {"s": "B"}, collation=collation, comment="dm"
    ))
    await step("delete_one(hint)", lambda: coll.delete_one({"_id": 10}, hint={"_id": 1}))
    await step("count_documents(hint collation)", lambda: coll.count_documents(
        {"s": "a"}, hint="s_1", collation=collation, maxTimeMS=5000
    ))
    await step("distinct(collation comment)", lambda: coll.distinct(
        "s", {}, collation=collation, comment="d"
    ))
    await step("find(collation hint let)", lambda: coll.find(
        {"s": "a"}, collation=collation, hint="s_1", let={"x": 1}, max_time_ms=5000,
        allow_disk_use=True, return_key=False, show_record_id=False,
    ).to_list())
    await step("aggregate(options)", lambda: _to_list(coll.aggregate(
        [{"$match": {"s": "a"}}], collation=collation, let={"x": 1}, allowDiskUse=True,
        maxTimeMS=5000, comment="ag", batchSize=1, hint="s_1",
    )))
    await step("find_one_and_update(options)", lambda: coll.find_one_and_update(
        {"s": "A"}, {"$set": {"f": 1}}, collation=collation, hint="s_1", let={"x": 1},
        sort=[("_id", 1)], return_document=True, comment="fu",
    ))
    await step("find_one_and_delete(options)", lambda: coll.find_one_and_delete(
        {"s": "a"}, collation=collation, sort={"_id": -1}, projection=["s"]
    ))
    await step("estimated_document_count(maxTimeMS)", lambda: (
        coll.estimated_document_count(maxTimeMS=5000, comment="e")
    ))
    await step("update_one(bad option)", lambda: coll.update_one({}, {"$set": {"x": 1}}, nope=1))


async def _unacknowledged(run: Run, coll: Any) -> None:
    """w=0: results say unacknowledged, and their counts cannot be read."""
    step = run.step
    unack = coll.with_options(write_concern=WriteConcern(w=0))
    result = await step("insert_one(w=0)", lambda: unack.insert_one({"_id": 1}))
    await step("w=0 inserted_id", lambda: result.inserted_id)
    result = await step("update_one(w=0)", lambda: unack.update_one(
        {"_id": 1}, {"$set": {"x": 1}}
    ))
    await step("w=0 matched_count", lambda: result.matched_count)
    await step("delete_one(w=0)", lambda: unack.delete_one({"_id": 1}))
    await step("delete_many(w=0)", lambda: unack.delete_many({}))
    await step("bulk_write(w=0)", lambda: unack.bulk_write([InsertOne({"_id": 2})]))
    await step("insert_many(w=0)", lambda: unack.insert_many([{"_id": 3}, {"_id": 4}]))
    await step("count after w=0", lambda: coll.count_documents({}))


async def cursor_script(run: Run) -> None:
    client = run.new_client()
    coll = client[run.db_name].c
    step = run.step
    await coll.insert_many([{"_id": i, "x": i % 4, "s": f"v{i}"} for i in range(10)])
    await coll.create_index("x")
    cursor = coll.find({"_id": {"$gte": 2}})
    for name, call in [
        ("sort", lambda: cursor.sort([("x", 1), ("_id", -1)])),
        ("skip", lambda: cursor.skip(1)),
        ("limit", lambda: cursor.limit(5)),
        ("batch_size", lambda: cursor.batch_size(2)),
        ("comment", lambda: cursor.comment("hello")),
        ("max_time_ms", lambda: cursor.max_time_ms(5000)),
        ("max_await_time_ms", lambda: cursor.max_await_time_ms(100)),
        ("collation", lambda: cursor.collation({"locale": "simple"})),
        ("allow_disk_use", lambda: cursor.allow_disk_use(True)),
        ("hint", lambda: cursor.hint([("x", 1)])),
    ]:
        await step(name, call)
    await step("collection", lambda: cursor.collection)
    await step("alive(before)", lambda: cursor.alive)
    await step("cursor_id(before)", lambda: cursor.cursor_id, volatile=True)
    await step("retrieved(before)", lambda: cursor.retrieved)
    await step("next", lambda: cursor.next())
    await step("anext", lambda: anext(cursor))
    await step("address", lambda: cursor.address)
    await step("alive", lambda: cursor.alive)
    await step("retrieved", lambda: cursor.retrieved)
    await step("session", lambda: cursor.session)
    await step("limit(after start)", lambda: cursor.limit(1))
    await step("to_list(rest)", lambda: cursor.to_list())
    await step("next(exhausted)", lambda: cursor.next())
    await step("rewind", lambda: cursor.rewind())
    await step("to_list(2)", lambda: cursor.to_list(2))
    await step("to_list(length=1)", lambda: cursor.to_list(length=1))
    await step("to_list(length=None)", lambda: cursor.to_list(length=None))
    await step("close", lambda: cursor.close())
    await step("alive(closed)", lambda: cursor.alive)

    async def iterate(c: Any) -> list[Any]:
        return [doc async for doc in c]

    await step("async for", lambda: iterate(coll.find().sort("_id").skip(7)))
    await step("clone", lambda: coll.find({"x": 1}).sort("_id", -1).clone().to_list())
    await step("where", lambda: coll.find().where("this.x == 2").to_list())
    await step("min/max", lambda: coll.find().hint("x_1").min([("x", 1)]).max([("x", 3)])
               .to_list())
    await step("max_scan", lambda: coll.find().max_scan(3))
    await step("add_option", lambda: coll.find().add_option(2))
    await step("remove_option", lambda: coll.find().remove_option(2))
    await step("distinct", lambda: coll.find({"_id": {"$lt": 6}}).distinct("x"))
    await step("explain", lambda: coll.find({"x": 1}).explain())
    await step("sort(bad)", lambda: coll.find().sort(5))
    await step("skip(bad)", lambda: coll.find().skip(-1))
    await step("limit(bad)", lambda: coll.find().limit("x"))
    await step("batch_size(bad)", lambda: coll.find().batch_size(-1))
    await step("getitem", lambda: coll.find()[0])
    await step("getitem(slice)", lambda: coll.find().sort("_id")[2:4].to_list())
    await step("bad filter", lambda: coll.find({"$bad": 1}).to_list())
    await step("find(options)", lambda: coll.find(
        {"x": 2}, {"s": 1}, skip=0, limit=2, sort=[("_id", 1)], batch_size=1, comment="c"
    ).to_list())
    await step("find(exhaust)", lambda: coll.find(
        cursor_type=pymongo.CursorType.EXHAUST, batch_size=3
    ).to_list())
    await step("find(no_cursor_timeout)", lambda: coll.find(no_cursor_timeout=True).to_list(1))
    await step("find(bad kw)", lambda: coll.find(nosuch=1))

    ccursor = await step("aggregate", lambda: coll.aggregate(
        [{"$sort": {"_id": 1}}], batchSize=3
    ))
    await step("command cursor.batch_size", lambda: ccursor.batch_size(2))
    await step("command cursor.alive", lambda: ccursor.alive)
    await step("command cursor.cursor_id", lambda: ccursor.cursor_id, volatile=True)
    await step("command cursor.address", lambda: ccursor.address)
    await step("command cursor.session", lambda: ccursor.session)
    await step("command cursor.next", lambda: ccursor.next())
    await step("command cursor.try_next", lambda: ccursor.try_next())
    await step("command cursor.anext", lambda: anext(ccursor))
    await step("command cursor.to_list(2)", lambda: ccursor.to_list(2))
    await step("command cursor.to_list", lambda: ccursor.to_list())
    await step("command cursor.next(exhausted)", lambda: ccursor.next())
    await step("command cursor.try_next(exhausted)", lambda: ccursor.try_next())
    await step("command cursor.close", lambda: ccursor.close())
    ccursor = await coll.aggregate([{"$sort": {"_id": 1}}], batchSize=3)
    await step("command cursor.async for", lambda: iterate(ccursor))
    await client.drop_database(run.db_name)
    await client.close()


async def session_script(run: Run) -> None:
    client = run.new_client()
    coll = client[run.db_name].c
    await coll.insert_one({"_id": 0})
    step = run.step
    session = await step("start_session", lambda: client.start_session(causal_consistency=True))
    for name in ("client", "options", "session_id", "has_ended", "in_transaction",
                 "cluster_time", "operation_time"):
        await step(name, lambda name=name: getattr(session, name))
    await step("find_one in session", lambda: coll.find_one({}, session=session))
    await step("operation_time(after)", lambda: session.operation_time)
    await step("advance_cluster_time(bad)", lambda: session.advance_cluster_time({"x": 1}))
    await step("advance_operation_time(bad)", lambda: session.advance_operation_time(1))
    await step("advance_operation_time", lambda: session.advance_operation_time(
        bson.Timestamp(1, 1)
    ))
    await step("commit_transaction(none)", lambda: session.commit_transaction())
    await step("abort_transaction(none)", lambda: session.abort_transaction())
    await step("start_transaction", lambda: session.start_transaction(
        write_concern=WriteConcern("majority")
    ))
    await step("in_transaction(started)", lambda: session.in_transaction)
    await step("start_transaction(again)", lambda: session.start_transaction())
    await step("insert in txn", lambda: coll.insert_one({"_id": 1}, session=session))
    await step("count in txn", lambda: coll.count_documents({}, session=session))
    await step("commit_transaction", lambda: session.commit_transaction())
    await step("commit_transaction(again)", lambda: session.commit_transaction())
    await step("start_transaction(2)", lambda: session.start_transaction())
    await step("insert in txn 2", lambda: coll.insert_one({"_id": 2}, session=session))
    await step("abort_transaction", lambda: session.abort_transaction())
    await step("find after abort", lambda: coll.find({}, session=session).to_list())

    async def context_transaction() -> Any:
        async with await session.start_transaction():
            await coll.insert_one({"_id": 3}, session=session)
        return await coll.count_documents({}, session=session)

    await step("async with start_transaction", context_transaction)

    async def context_transaction_error() -> Any:
        async with await session.start_transaction():
            await coll.insert_one({"_id": 4}, session=session)
            raise ValueError("boom")

    await step("async with start_transaction(error)", context_transaction_error)
    await step("count after aborted context", lambda: coll.count_documents({}))

    async def callback(s: Any) -> Any:
        await coll.insert_one({"_id": 5}, session=s)
        return "done"

    await step("with_transaction", lambda: session.with_transaction(callback))

    async def failing(s: Any) -> Any:
        await coll.insert_one({"_id": 5}, session=s)

    await step("with_transaction(dup)", lambda: session.with_transaction(failing))
    await step("bind", lambda: session.bind())

    async def transient_once(s: Any) -> Any:
        await coll.insert_one({"_id": 6}, session=s)
        return await coll.count_documents({}, session=s)

    await step("failCommand(transient)", lambda: client.admin.command(
        {"configureFailPoint": "failCommand", "mode": {"times": 1},
         "data": {"failCommands": ["insert"], "errorCode": 112,
                  "errorLabels": ["TransientTransactionError"]}}
    ))
    await step("with_transaction(retried)", lambda: session.with_transaction(
        transient_once, read_concern=ReadConcern("snapshot"), write_concern=WriteConcern(w=1),
        read_preference=ReadPreference.PRIMARY,
    ))

    async def other_session_after(s: Any) -> Any:
        async with client.start_session() as other:
            other.advance_cluster_time(s.cluster_time)
            other.advance_operation_time(s.operation_time)
            return await coll.find_one({"_id": 6}, session=other)

    await step("advance_* from another session", lambda: other_session_after(session))
    await step("end_session", lambda: session.end_session())
    await step("has_ended(after)", lambda: session.has_ended)
    await step("use ended", lambda: coll.find_one({}, session=session))

    async def context_session() -> Any:
        async with client.start_session() as s:
            await coll.find_one({}, session=s)
            return s.has_ended

    await step("async with start_session", context_session)
    await step("start_session(snapshot and causal)", lambda: client.start_session(
        snapshot=True, causal_consistency=True
    ))

    async def snapshot_reads() -> Any:
        async with client.start_session(snapshot=True) as s:
            first = await coll.find({}, session=s).sort("_id").to_list()
            await coll.insert_one({"_id": 100})
            second = await coll.count_documents({}, session=s)
            return first, second

    await step("snapshot session reads", snapshot_reads)

    async def write_in_snapshot() -> Any:
        async with client.start_session(snapshot=True) as s:
            return await coll.insert_one({"_id": 101}, session=s)

    await step("write in snapshot session", write_in_snapshot)
    await client.drop_database(run.db_name)
    await client.close()


async def change_stream_script(run: Run) -> None:
    client = run.new_client()
    coll = client[run.db_name].c
    await coll.insert_one({"_id": 0})
    step = run.step
    stream = await step("watch", lambda: coll.watch(
        [{"$match": {"operationType": {"$in": ["insert", "update"]}}}],
        full_document="updateLookup", max_await_time_ms=50,
    ))
    await step("alive", lambda: stream.alive)
    await step("resume_token(before)", lambda: stream.resume_token is None)
    await step("try_next(empty)", lambda: stream.try_next())
    await coll.insert_one({"_id": 1, "x": 1})
    await coll.update_one({"_id": 1}, {"$set": {"x": 2}})
    await coll.delete_one({"_id": 1})
    await step("next", lambda: stream.next())
    await step("anext", lambda: anext(stream))
    await step("resume_token", lambda: stream.resume_token is not None)
    await step("try_next(none)", lambda: stream.try_next())
    await step("close", lambda: stream.close())
    await step("alive(closed)", lambda: stream.alive)
    await step("next(closed)", lambda: stream.next())

    async def context_stream() -> Any:
        async with await coll.watch() as s:
            await coll.insert_one({"_id": 2})
            async for change in s:
                return change

    await step("async with / async for", context_stream)
    await step("watch(bad)", lambda: coll.watch([{"$nosuch": 1}]))

    async def resumed(**options: Any) -> Any:
        async with await coll.watch(**options) as s:
            change = await s.try_next()
            return None if change is None else change["documentKey"]

    first = await coll.watch()
    await coll.insert_one({"_id": 3})
    await coll.insert_one({"_id": 4})
    change = await first.next()
    await first.close()
    await step("watch(resume_after)", lambda: resumed(resume_after=change["_id"]))
    await step("watch(start_after)", lambda: resumed(start_after=change["_id"]))
    await step("watch(start_at_operation_time)", lambda: resumed(
        start_at_operation_time=change["clusterTime"]
    ))
    await step("watch(full_document_before_change)", lambda: coll.watch(
        full_document_before_change="whenAvailable", batch_size=1, comment="cs"
    ))
    db_stream = await step("database watch", lambda: client[run.db_name].watch())
    await coll.insert_one({"_id": 5})
    await step("database watch.next", lambda: db_stream.next())
    await step("database watch.close", lambda: db_stream.close())
    client_stream = await step("client watch", lambda: client.watch(
        [{"$match": {"ns.db": run.db_name}}]
    ))
    await client[run.db_name].other.insert_one({"_id": 1})
    await step("client watch.next", lambda: client_stream.next())
    await step("client watch.close", lambda: client_stream.close())
    await client.drop_database(run.db_name)
    await client.close()


async def gridfs_script(run: Run) -> None:
    client = run.new_client()
    db = client[run.db_name]
    step = run.step
    bucket = await step("bucket", lambda: run.gridfs_bucket_class(db, chunk_size_bytes=4))
    file_id = await step("upload_from_stream", lambda: bucket.upload_from_stream(
        "a.txt", b"hello world", metadata={"k": 1}
    ))
    await step("upload_from_stream_with_id", lambda: bucket.upload_from_stream_with_id(
        7, "b.txt", io.BytesIO(b"second")
    ))
    await step("upload_from_stream(revision)", lambda: bucket.upload_from_stream(
        "a.txt", b"hello again"
    ))

    async def streamed(grid_in: Any) -> Any:
        await grid_in.write(b"abc")
        await grid_in.write(b"defgh")
        await grid_in.close()
        return grid_in._id is not None

    grid_in = await step("open_upload_stream", lambda: bucket.open_upload_stream("c.txt"))
    await step("GridIn write/close", lambda: streamed(grid_in))
    grid_in = await step("open_upload_stream_with_id", lambda: bucket.open_upload_stream_with_id(
        8, "d.txt"
    ))
    await step("GridIn with id", lambda: streamed(grid_in))
    grid_out = await step("open_download_stream", lambda: bucket.open_download_stream(file_id))
    await step("GridOut read", lambda: grid_out.read())
    await step("open_download_stream(missing)", lambda: bucket.open_download_stream(99))
    grid_out = await step("open_download_stream_by_name", lambda: (
        bucket.open_download_stream_by_name("a.txt")
    ))
    await step("GridOut read(by name)", lambda: grid_out.read())
    await step("open_download_stream_by_name(revision 0)", lambda: (
        bucket.open_download_stream_by_name("a.txt", revision=0)
    ))
    await step("open_download_stream_by_name(missing)", lambda: (
        bucket.open_download_stream_by_name("zz")
    ))
    sink = io.BytesIO()
    await step("download_to_stream", lambda: bucket.download_to_stream(7, sink))
    await step("download_to_stream(data)", lambda: sink.getvalue())
    sink2 = io.BytesIO()
    await step("download_to_stream_by_name", lambda: bucket.download_to_stream_by_name(
        "c.txt", sink2
    ))
    await step("download_to_stream_by_name(data)", lambda: sink2.getvalue())
    await step("find", lambda: bucket.find({"filename": "a.txt"}).sort("uploadDate").to_list())
    await step("rename", lambda: bucket.rename(7, "bb.txt"))
    await step("rename(missing)", lambda: bucket.rename(99, "x"))
    await step("rename_by_name", lambda: bucket.rename_by_name("bb.txt", "bbb.txt"))
    await step("rename_by_name(missing)", lambda: bucket.rename_by_name("nope", "x"))
    await step("delete", lambda: bucket.delete(7))
    await step("delete(missing)", lambda: bucket.delete(7))
    await step("delete_by_name", lambda: bucket.delete_by_name("a.txt"))
    await step("delete_by_name(missing)", lambda: bucket.delete_by_name("a.txt"))
    await step("files left", lambda: db["fs.files"].find({}, {"filename": 1, "_id": 0})
               .sort("filename").to_list())
    await _grid_files(run, bucket)
    await client.drop_database(run.db_name)
    await client.close()


def _every_bson_value() -> dict[str, Any]:
    import datetime
    import uuid

    from bson.binary import UuidRepresentation

    return {
        "_id": 1,
        "oid": bson.ObjectId("5f0c1a2b3c4d5e6f70819203"),
        "i32": 7,
        "i64": bson.Int64(7),
        "big": 2**40,
        "dbl": 1.5,
        "dec": bson.Decimal128("1.25"),
        "str": "text",
        "bin": bson.Binary(b"\x01\x02", 0),
        "bin_user": bson.Binary(b"\x03", 128),
        "uuid4": bson.Binary.from_uuid(
            uuid.UUID("12345678-1234-5678-1234-567812345678"), UuidRepresentation.STANDARD
        ),
        "uuid3": bson.Binary(b"\x00" * 16, 3),
        "when": datetime.datetime(2026, 11, 27, 1, 2, 3, 4000),
        "ts": bson.Timestamp(5, 1),
        "re": bson.Regex("^a", "i"),
        "code": bson.Code("f()"),
        "code_scope": bson.Code("g()", {"x": 1}),
        "ref": bson.DBRef("other", 1, "db2", extra=True),
        "min": bson.MinKey(),
        "max": bson.MaxKey(),
        "none": None,
        "bool": True,
        "nested": {"list": [1, bson.Int64(2), {"a": bson.ObjectId("5f0c1a2b3c4d5e6f70819204")}]},
    }


async def values_script(run: Run) -> None:
    """What documents read back hold, per codec option: the classes must be PyMongo's."""
    from bson.codec_options import CodecOptions
    from bson.raw_bson import RawBSONDocument
    from bson.son import SON

    step = run.step
    client = run.new_client()
    coll = client[run.db_name].c
    await step("insert every value", lambda: coll.insert_one(_every_bson_value()))
    await step("find_one", lambda: coll.find_one({"_id": 1}))
    await step("find_one(SON)", lambda: coll.with_options(
        codec_options=CodecOptions(document_class=SON)
    ).find_one({"_id": 1}))
    await step("find_one(RawBSONDocument)", lambda: coll.with_options(
        codec_options=CodecOptions(document_class=RawBSONDocument)
    ).find_one({"_id": 1}))
    await step("find_one(tz_aware)", lambda: coll.with_options(
        codec_options=CodecOptions(tz_aware=True)
    ).find_one({"_id": 1}, {"when": 1}))
    await step("aggregate values", lambda: _to_list(coll.aggregate(
        [{"$project": {"i64": 1, "dec": 1, "sum": {"$add": ["$i64", 1]}}}]
    )))
    await step("distinct values", lambda: coll.distinct("oid"))
    await step("insert(generated id)", lambda: coll.insert_one({"_id": None, "k": 1}))
    await step("insert($-prefixed key)", lambda: coll.insert_one({"$bad": 1}))
    await step("insert(unencodable)", lambda: coll.insert_one({"x": object()}))
    await client.drop_database(run.db_name)
    await client.close()
    for label, options in (
        ("uuidRepresentation=standard", {"uuidRepresentation": "standard"}),
        ("document_class=SON", {"document_class": SON}),
        ("tz_aware", {"tz_aware": True}),
    ):
        client = run.new_client(**options)
        coll = client[run.db_name].c
        await coll.insert_one(_every_bson_value())
        await step(f"client {label}", lambda coll=coll: coll.find_one({"_id": 1}))
        await client.drop_database(run.db_name)
        await client.close()


async def _to_list(cursor: Awaitable[Any]) -> Any:
    return await (await cursor).to_list()


async def errors_script(run: Run) -> None:
    """Errors raised on the way: server selection, server errors, client-side checks."""
    step = run.step
    client = run.new_client()
    coll = client[run.db_name].c
    await coll.insert_one({"_id": 1})
    await step("DuplicateKeyError", lambda: coll.insert_one({"_id": 1}))
    await step("WriteError(bad update)", lambda: coll.update_one({"_id": 1}, {"$inc": {"_id": 1}}))
    await step("OperationFailure(bad query)", lambda: coll.find_one({"x": {"$nope": 1}}))
    await step("OperationFailure(bad command)", lambda: client[run.db_name].command("nope"))
    await step("failCommand(find)", lambda: client.admin.command(
        {"configureFailPoint": "failCommand", "mode": {"times": 1},
         "data": {"failCommands": ["find"], "errorCode": 50}}
    ))
    await step("ExecutionTimeout(find)", lambda: coll.find_one({}))
    await step("failCommand(insert, retryable)", lambda: client.admin.command(
        {"configureFailPoint": "failCommand", "mode": {"times": 1},
         "data": {"failCommands": ["insert"], "errorCode": 6}}
    ))
    await step("insert retried", lambda: coll.insert_one({"_id": 2}))
    await step("InvalidName", lambda: client["bad.name"])
    await step("InvalidName(collection)", lambda: client[run.db_name]["$bad"])
    await step("find_one(non-document filter)", lambda: coll.find_one(5.5))
    await step("ConfigurationError(get_default_database)", lambda: client.get_default_database())
    await client.drop_database(run.db_name)
    await client.close()
    dead = run.client_class(
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100"
    )
    await step("ServerSelectionTimeoutError", lambda: dead.db.c.find_one())
    await dead.close()


#: What a PyMongo command listener reads of each event (tracing integrations read these).
_EVENT_ATTRIBUTES = (
    "command_name", "database_name", "request_id", "operation_id", "connection_id",
    "server_connection_id", "service_id", "duration_micros", "reply", "failure",
)


def _event_shape(event: Any) -> tuple[str, dict[str, Any]]:
    shape: dict[str, Any] = {}
    for name in _EVENT_ATTRIBUTES:
        if not hasattr(event, name):
            continue
        value = getattr(event, name)
        if name in ("reply", "failure") and isinstance(value, dict):
            value = sorted(value)  # the keys: values hold clocks and ids
        elif name not in ("command_name", "database_name"):
            value = type(value).__name__  # ids, durations, addresses differ per run
        shape[name] = value
    return type(event).__name__, shape


async def monitoring_script(run: Run) -> None:
    """The events a PyMongo CommandListener receives, and what it reads of them."""
    from pymongo import monitoring

    class Shapes(monitoring.CommandListener):
        def __init__(self) -> None:
            self.shapes: list[Any] = []

        def started(self, event: monitoring.CommandStartedEvent) -> None:
            self.shapes.append(_event_shape(event))

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            self.shapes.append(_event_shape(event))

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            self.shapes.append(_event_shape(event))

    shapes = Shapes()
    client = run.client_class(run.uri, event_listeners=[shapes])
    coll = client[run.db_name].c

    async def events_of(call: Callable[[], Awaitable[Any]]) -> Any:
        del shapes.shapes[:]
        try:
            await call()
        except Exception as exc:  # the events are compared, the error by its class
            return type(exc).__name__, list(shapes.shapes)
        return None, list(shapes.shapes)

    await run.step("insert events", lambda: events_of(lambda: coll.insert_one({"_id": 1})))
    await run.step("failed events", lambda: events_of(lambda: coll.insert_one({"_id": 1})))
    await run.step("command error events", lambda: events_of(
        lambda: client[run.db_name].command("nope")
    ))
    await run.step("cursor events", lambda: events_of(
        lambda: coll.find().batch_size(1).to_list()
    ))
    await client.drop_database(run.db_name)
    await client.close()


async def _grid_files(run: Run, bucket: Any) -> None:
    """The upload and download streams' own API (GridIn, GridOut)."""
    step = run.step
    grid_in = bucket.open_upload_stream_with_id(
        20, "lines.txt", chunk_size_bytes=5, metadata={"m": 1}
    )
    await step("GridIn.filename", lambda: grid_in.filename)
    await step("GridIn.chunk_size", lambda: grid_in.chunk_size)
    await step("GridIn.closed", lambda: grid_in.closed)
    await step("GridIn.writelines", lambda: grid_in.writelines([b"one\n", b"two\n"]))
    await step("GridIn.write(str)", lambda: grid_in.write("three\n"))
    await step("GridIn.write(bad)", lambda: grid_in.write(5))
    await step("GridIn.close", lambda: grid_in.close())
    await step("GridIn.length", lambda: grid_in.length)
    await step("GridIn._id", lambda: grid_in._id)
    await step("GridIn.closed(after)", lambda: grid_in.closed)
    await step("GridIn.write(closed)", lambda: grid_in.write(b"x"))
    aborted = bucket.open_upload_stream("aborted.txt", chunk_size_bytes=2)
    await step("GridIn.write(abort)", lambda: aborted.write(b"abcdef"))
    await step("GridIn.abort", lambda: aborted.abort())

    async def grid_in_context() -> Any:
        async with bucket.open_upload_stream_with_id(21, "ctx.txt") as stream:
            await stream.write(b"ctx")
        return stream.closed

    await step("GridIn async with", grid_in_context)
    grid_out = await bucket.open_download_stream(20)
    for name in ("_id", "filename", "name", "length", "chunk_size", "metadata"):
        await step(f"GridOut.{name}", lambda name=name: getattr(grid_out, name))
    await step("GridOut.upload_date", lambda: grid_out.upload_date is not None)
    await step("GridOut.readline", lambda: grid_out.readline())
    await step("GridOut.tell", lambda: grid_out.tell())
    await step("GridOut.readchunk", lambda: grid_out.readchunk())
    await step("GridOut.read(3)", lambda: grid_out.read(3))
    await step("GridOut.seek", lambda: grid_out.seek(0))
    await step("GridOut.seek(end)", lambda: grid_out.seek(-3, io.SEEK_END))
    await step("GridOut.read(rest)", lambda: grid_out.read())
    await step("GridOut.seek(bad)", lambda: grid_out.seek(-100))

    async def chunks(file_id: Any) -> Any:
        stream = await bucket.open_download_stream(file_id)
        return [chunk async for chunk in stream]

    await step("GridOut async for", lambda: chunks(20))
    await step("GridOut.close", lambda: grid_out.close())


#: Area -> (deployment kind, the area's scripts).
AREAS: dict[str, tuple[str, list[Script]]] = {
    "client": ("replica_set", [client_script, client_context_script]),
    "client_standalone": ("standalone", [client_script]),
    "database": ("replica_set", [database_script]),
    "collection": ("replica_set", [collection_script]),
    "cursor": ("replica_set", [cursor_script]),
    "session": ("replica_set", [session_script]),
    "change_stream": ("replica_set", [change_stream_script]),
    "gridfs": ("replica_set", [gridfs_script]),
    "values": ("replica_set", [values_script]),
    "errors": ("replica_set", [errors_script]),
    "monitoring": ("replica_set", [monitoring_script]),
}
