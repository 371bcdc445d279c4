"""The pure operations: commands built, replies parsed, errors typed (no server, no loop)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import CodecOptions, Int64, ObjectId, Timestamp, decode
from asyncmongo.change_stream import _OpenedPage
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import aggregate as aggregate_ops
from asyncmongo.core.operations import count as count_ops
from asyncmongo.core.operations import indexes as index_ops
from asyncmongo.core.operations import management
from asyncmongo.core.operations.bulk import BulkResult, plan_runs
from asyncmongo.core.operations.common import (
    Namespace,
    check_collection_name,
    check_database_name,
    hint_value,
    index_keys,
    index_name,
    sort_document,
)
from asyncmongo.core.operations.cursors import (
    CursorPage,
    GetMore,
    KillCursors,
    parse_cursor_page,
)
from asyncmongo.core.operations.distinct import distinct
from asyncmongo.core.operations.find import (
    CursorType,
    Find,
    FindContext,
    FindOptions,
    first_batch_size,
)
from asyncmongo.core.operations.find_and_modify import ReturnDocument, find_and_modify
from asyncmongo.core.operations.replies import check_reply, check_write_reply, is_ok
from asyncmongo.core.operations.run_command import command_document, run_command
from asyncmongo.core.operations.statements import (
    StatementKind,
    delete_statement,
    insert_statement,
    update_statement,
)
from asyncmongo.core.operations.write import WriteCommand, WriteOptions
from asyncmongo.core.selection import PRIMARY, Mode, ReadPreference
from asyncmongo.errors import (
    BulkWriteError,
    CursorNotFound,
    DuplicateKeyError,
    ExecutionTimeout,
    InvalidArgument,
    InvalidName,
    InvalidOperation,
    NotPrimaryError,
    OperationFailure,
    ProtocolError,
    WriteConcernError,
    WriteError,
)
from asyncmongo.operations import (
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from asyncmongo.results import (
    BulkWriteResult,
    ClientBulkWriteResult,
    DeleteResult,
    InsertOneResult,
    UpdateResult,
)

NS = Namespace("db", "coll")
CODEC = CodecOptions()
ACK = WriteConcern()


class Conn:
    """A ConnectionInfo with adjustable limits."""

    def __init__(
        self,
        max_wire_version: int = 21,
        max_bson_object_size: int = 16 * 1024 * 1024,
        max_message_size_bytes: int = 48_000_000,
        max_write_batch_size: int = 100_000,
    ) -> None:
        self.max_wire_version = max_wire_version
        self.max_bson_object_size = max_bson_object_size
        self.max_message_size_bytes = max_message_size_bytes
        self.max_write_batch_size = max_write_batch_size


def find_context(read_concern: ReadConcern | None = None) -> FindContext:
    return FindContext(NS, PRIMARY, read_concern or ReadConcern(), CODEC)


def find_command(filter: Any = None, **options: Any) -> dict[str, Any]:
    op = Find(find_context(), filter, FindOptions(**options))
    return op.build(Conn()).document


# -- find ---------------------------------------------------------------------------------


def test_find_sends_only_what_was_given() -> None:
    assert find_command() == {"find": "coll", "filter": {}}


def test_find_options_use_the_server_names() -> None:
    command = find_command(
        filter={"a": 1},
        projection={"a": 1},
        sort=[("a", -1)],
        skip=2,
        hint="a_1",
        comment="c",
        max_time_ms=10,
        allow_disk_use=True,
        let={"x": 1},
        collation={"locale": "fr"},
        cursor_type=CursorType.TAILABLE_AWAIT,
    )
    assert command == {
        "find": "coll",
        "filter": {"a": 1},
        "sort": {"a": -1},
        "projection": {"a": 1},
        "hint": "a_1",
        "skip": 2,
        "comment": "c",
        "maxTimeMS": 10,
        "tailable": True,
        "awaitData": True,
        "collation": {"locale": "fr"},
        "allowDiskUse": True,
        "let": {"x": 1},
    }


@pytest.mark.parametrize(
    ("limit", "batch_size", "expected"),
    [
        (0, 0, (0, 0, False)),
        (5, 0, (5, 0, False)),
        (-5, 0, (5, 5, True)),  # negative limit: one batch of that many
        (-5, 3, (5, 5, True)),
        (0, 3, (0, 3, False)),
        (4, 3, (4, 3, False)),
        (3, 3, (3, 4, False)),  # CRUD: limit == batchSize sends batchSize limit + 1
    ],
)
def test_limit_and_batch_size_transformations(
    limit: int, batch_size: int, expected: tuple[int, int, bool]
) -> None:
    assert first_batch_size(limit, batch_size) == expected


def test_find_one_shape() -> None:
    command = find_command(limit=-1)
    assert command["limit"] == 1 and command["singleBatch"] is True


def test_find_read_concern_is_sent_unless_default() -> None:
    op = Find(find_context(ReadConcern("majority")), None)
    assert op.build(Conn()).document["readConcern"] == {"level": "majority"}
    op = Find(find_context(ReadConcern("majority")), None, FindOptions(skip=1))
    assert op.build(Conn()).document["readConcern"] == {"level": "majority"}


@pytest.mark.parametrize(
    "options",
    [
        {"skip": -1},
        {"batch_size": -1},
        {"limit": "3"},
        {"max_time_ms": -1},
        {"cursor_type": 5},
        {"cursor_type": CursorType.EXHAUST},
    ],
)
def test_find_options_are_validated(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        FindOptions(**options)


@pytest.mark.parametrize("filter", [[1], "a", 1])
async def test_find_refuses_a_filter_that_is_not_a_mapping(filter: Any) -> None:
    async with AsyncMongoClient("mongodb://127.0.0.1:1", connect=False) as client:
        with pytest.raises(InvalidArgument, match="filter must be a mapping"):
            client.db.coll.find(filter)
        with pytest.raises(InvalidArgument, match="filter must be a mapping"):
            client.db.coll.find(filter, {"a": 1})


def test_find_without_options_sends_what_default_options_send() -> None:
    """``find(filter)`` shares DEFAULT_FIND_OPTIONS, which take their own short path."""
    for read_concern in (ReadConcern(), ReadConcern("majority")):
        context = find_context(read_concern)
        for filter in (None, {}, {"a": 1}):
            shared = Find(context, filter).build(Conn())
            built = Find(context, filter, FindOptions()).build(Conn())
            assert shared == built and list(shared.document) == list(built.document)


def test_find_parses_the_first_page() -> None:
    op = Find(find_context(), None)
    page = op.parse({"ok": 1, "cursor": {"id": Int64(7), "ns": "db.other", "firstBatch": [{}]}})
    assert (page.cursor_id, page.namespace, page.documents) == (7, Namespace("db", "other"), [{}])


@pytest.mark.parametrize(
    "reply",
    [{"ok": 1}, {"ok": 1, "cursor": {"id": 0}}, {"ok": 1, "cursor": {"id": "x", "firstBatch": []}}],
)
def test_malformed_cursor_replies_are_protocol_errors(reply: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        parse_cursor_page(reply, NS)


def test_cursor_page_is_a_value() -> None:
    """A slots class with the dataclass's equality, repr and replace (``with_changes``)."""
    page = CursorPage(5, NS, [{"_id": 1}], {"t": 1})
    assert page == CursorPage(5, NS, [{"_id": 1}], {"t": 1})
    assert page != CursorPage(0, NS, [{"_id": 1}], {"t": 1})
    assert repr(page) == (
        "CursorPage(cursor_id=5, namespace=Namespace(database='db', collection='coll'), "
        "documents=[{'_id': 1}], post_batch_resume_token={'t': 1}, address=None)"
    )
    named = page.with_address(("h", 1))
    assert named == CursorPage(5, NS, [{"_id": 1}], {"t": 1}, ("h", 1))
    assert named.with_address(("other", 2)) is named  # named once
    closed = CursorPage(0, NS, [])
    assert closed.with_address(("h", 1)) is closed  # no cursor: no home
    assert page.with_changes(documents=[]) == CursorPage(5, NS, [], {"t": 1})
    assert page.documents == [{"_id": 1}]  # the original is left as it was


def test_change_streams_first_page_keeps_its_operation_time() -> None:
    page = _OpenedPage(0, NS, [], None, None, Timestamp(1, 2))
    named = page.with_address(("h", 1))  # always named, even with its cursor closed
    assert isinstance(named, _OpenedPage)
    assert (named.address, named.operation_time) == (("h", 1), Timestamp(1, 2))
    assert named == _OpenedPage(0, NS, [], None, ("h", 1), Timestamp(1, 2))
    assert named != CursorPage(0, NS, [], None, ("h", 1))
    assert repr(named).startswith("_OpenedPage(cursor_id=0,")
    assert repr(named).endswith(f"operation_time={Timestamp(1, 2)!r})")


def test_get_more_and_kill_cursors_are_pinned() -> None:
    address = ("h", 1)
    get_more = GetMore(5, NS, address, CODEC, batch_size=3, max_time_ms=100, comment="c")
    assert get_more.target.address == address
    assert get_more.build(Conn()).document == {
        "getMore": Int64(5),
        "collection": "coll",
        "batchSize": 3,
        "maxTimeMS": 100,
        "comment": "c",
    }
    kill = KillCursors(5, NS, address, CODEC)
    assert kill.build(Conn()).document == {"killCursors": "coll", "cursors": [Int64(5)]}
    assert kill.target.address == address


# -- replies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ({"ok": 0, "code": 10107, "errmsg": "not primary"}, NotPrimaryError),
        ({"ok": 0, "errmsg": "node is recovering"}, NotPrimaryError),
        ({"ok": 0, "code": 43, "errmsg": "cursor not found"}, CursorNotFound),
        ({"ok": 0, "code": 50, "errmsg": "time limit"}, ExecutionTimeout),
        ({"ok": 0, "code": 11000, "errmsg": "dup"}, DuplicateKeyError),
        ({"ok": 0, "code": 2, "errmsg": "bad"}, OperationFailure),
        ({"ok": 0}, OperationFailure),
    ],
)
def test_ok_zero_replies_raise_typed_errors(reply: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        check_reply(reply)


@pytest.mark.parametrize(
    ("ok", "expected"),
    [
        (1.0, True),
        (1, True),
        (Int64(1), True),
        (True, True),
        (0.0, False),
        (0, False),
        (False, False),
        (None, False),
        ("1", False),
        (2, False),
    ],
)
def test_ok_is_any_number_equal_to_one_or_true(ok: Any, expected: bool) -> None:
    """``ok: 1`` in any numeric type, or ``true``, passes; anything else raises."""
    assert is_ok({"ok": ok}) is expected
    if expected:
        check_reply({"ok": ok})
    else:
        with pytest.raises(OperationFailure):
            check_reply({"ok": ok})
    assert is_ok({}) is False


def test_operation_failure_keeps_code_reply_and_labels() -> None:
    reply = {"ok": 0, "code": 2, "codeName": "BadValue", "errmsg": "bad", "errorLabels": ["X"]}
    with pytest.raises(OperationFailure) as info:
        check_reply(reply)
    assert (info.value.code, info.value.code_name, info.value.details) == (2, "BadValue", reply)
    assert info.value.has_error_label("X")


def test_single_write_errors() -> None:
    with pytest.raises(DuplicateKeyError) as dup:
        check_write_reply({"ok": 1, "n": 0, "writeErrors": [{"index": 0, "code": 11000}]})
    assert dup.value.code == 11000
    with pytest.raises(WriteError):
        check_write_reply({"ok": 1, "writeErrors": [{"index": 0, "code": 2, "errmsg": "x"}]})
    with pytest.raises(WriteConcernError) as concern:
        check_write_reply(
            {"ok": 1, "n": 1, "writeConcernError": {"code": 64, "errmsg": "wtimeout"}}
        )
    assert concern.value.code == 64
    with pytest.raises(ExecutionTimeout):
        check_write_reply({"ok": 1, "writeConcernError": {"code": 50, "errmsg": "x"}})


# -- statements and models ----------------------------------------------------------------


def test_insert_adds_an_id_in_place() -> None:
    document: dict[str, Any] = {"a": 1}
    statement = insert_statement(document)
    assert isinstance(document["_id"], ObjectId) and statement.document is document
    kept = {"_id": 5}
    assert insert_statement(kept).document == {"_id": 5}


@pytest.mark.parametrize("update", [{}, {"a": 1}, {"a": 1, "$set": {}}, 5])
def test_update_needs_operators(update: Any) -> None:
    with pytest.raises(InvalidArgument):
        update_statement({}, update, multi=False)


def test_update_accepts_a_pipeline_and_replacement_refuses_operators() -> None:
    statement = update_statement({}, [{"$set": {"a": 1}}], multi=True, upsert=True)
    assert statement.document == {"q": {}, "u": [{"$set": {"a": 1}}], "multi": True, "upsert": True}
    with pytest.raises(InvalidArgument):
        update_statement({}, {"$set": {"a": 1}}, multi=False, replace=True)
    with pytest.raises(InvalidArgument):
        update_statement({}, {"a": 1}, multi=False, replace=True, array_filters=[])
    with pytest.raises(InvalidArgument):
        update_statement({}, {"$set": {}}, multi=True, sort={"a": 1})


def test_statement_documents() -> None:
    assert delete_statement({"a": 1}, multi=False, hint=[("a", 1)]).document == {
        "q": {"a": 1},
        "limit": 1,
        "hint": {"a": 1},
    }
    assert delete_statement({}, multi=True).document == {"q": {}, "limit": 0}
    model = UpdateOne({"a": 1}, {"$set": {"b": 1}}, upsert=True, sort=[("a", -1)])
    assert model._statement().document == {
        "q": {"a": 1},
        "u": {"$set": {"b": 1}},
        "upsert": True,
        "sort": {"a": -1},
    }
    replace = ReplaceOne({"a": 1}, {"b": 1}, collation={"locale": "en"})
    assert replace._statement().document == {
        "q": {"a": 1},
        "u": {"b": 1},
        "collation": {"locale": "en"},
    }
    assert UpdateMany({}, {"$set": {"b": 1}})._statement().multi is True
    assert DeleteMany({})._statement().document["limit"] == 0


def test_models_compare_and_repr() -> None:
    assert InsertOne({"a": 1}) == InsertOne({"a": 1})
    assert DeleteOne({"a": 1}) != DeleteMany({"a": 1})
    assert "filter={'a': 1}" in repr(DeleteOne({"a": 1}))


def test_index_models_and_names() -> None:
    assert IndexModel([("a", 1), ("b", -1)]).document == {
        "key": {"a": 1, "b": -1},
        "name": "a_1_b_-1",
    }
    assert IndexModel("loc", name="geo", sparse=True).document == {
        "key": {"loc": 1},
        "name": "geo",
        "sparse": True,
    }
    assert IndexModel([("t", "text")]).document["name"] == "t_text"
    assert index_name(index_keys({"x": "2dsphere"})) == "x_2dsphere"
    with pytest.raises(InvalidArgument):
        IndexModel([])
    with pytest.raises(InvalidArgument):
        IndexModel([("a", True)])


def test_sort_and_hint_forms() -> None:
    assert sort_document("a") == {"a": 1}
    assert sort_document(["a", ("b", -1)]) == {"a": 1, "b": -1}
    assert sort_document({"a": -1}) == {"a": -1}
    assert sort_document(None) is None
    assert hint_value("a_1") == "a_1"
    assert hint_value([("a", 1)]) == {"a": 1}
    with pytest.raises(InvalidArgument):
        sort_document(5)


@pytest.mark.parametrize("name", ["", "a.b", "a b", "a$", "a/b", "a\\b", 'a"b', "a\x00b", 5])
def test_bad_database_names(name: Any) -> None:
    with pytest.raises((InvalidName, InvalidArgument)):
        check_database_name(name)


@pytest.mark.parametrize("name", ["admin", "a", "db-1_x", "é"])
def test_good_database_names(name: str) -> None:
    assert check_database_name(name) == name


@pytest.mark.parametrize("name", ["", "a..b", ".a", "a.", "a$b", "a\x00b", None])
def test_bad_collection_names(name: Any) -> None:
    with pytest.raises((InvalidName, InvalidArgument)):
        check_collection_name(name)


# -- write batching -----------------------------------------------------------------------


def insert_command(n: int, **options: Any) -> WriteCommand:
    statements = [insert_statement({"_id": i, "pad": "x" * 100}) for i in range(n)]
    return WriteCommand(NS, StatementKind.INSERT, statements, ACK, CODEC, WriteOptions(**options))


def test_write_command_fits_batches_to_the_limits() -> None:
    command: WriteCommand | None = insert_command(10)
    sizes = []
    while command is not None:
        built = command.build(Conn(max_write_batch_size=4))
        (sequence,) = built.sequences
        assert sequence.identifier == "documents"
        batch = command.parse({"ok": 1, "n": len(sequence.documents)})
        sizes.append(batch.count)
        command = command.rest(batch.count)
    assert sizes == [4, 4, 2]


def test_write_command_respects_the_message_size() -> None:
    command = insert_command(100)
    built = command.build(Conn(max_message_size_bytes=2000))
    count = len(built.sequences[0].documents)
    assert 0 < count < 100
    assert [decode(d)["_id"] for d in built.sequences[0].documents] == list(range(count))


def test_write_command_document_and_w0() -> None:
    command = insert_command(1, ordered=False, bypass_document_validation=True, comment="c")
    assert command.build(Conn()).document == {
        "insert": "coll",
        "ordered": False,
        "bypassDocumentValidation": True,
        "comment": "c",
    }
    statements = [insert_statement({"_id": 1})]
    w0 = WriteCommand(NS, StatementKind.INSERT, statements, WriteConcern(w=0), CODEC)
    built = w0.build(Conn())
    assert built.unacknowledged and built.document["writeConcern"] == {"w": 0}
    assert w0.parse({}).acknowledged is False


# -- bulk ---------------------------------------------------------------------------------


def statements_of(models: list[Any]) -> list[Any]:
    return [model._statement() for model in models]


MODELS = [
    InsertOne({"_id": 1}),
    InsertOne({"_id": 2}),
    UpdateOne({"_id": 1}, {"$set": {"a": 1}}),
    InsertOne({"_id": 3}),
    DeleteOne({"_id": 2}),
    UpdateMany({}, {"$set": {"b": 1}}, upsert=True),
]


def test_ordered_runs_follow_the_users_order() -> None:
    runs = plan_runs(statements_of(MODELS), ordered=True)
    assert [(run.kind.value, run.indexes) for run in runs] == [
        ("insert", (0, 1)),
        ("update", (2,)),
        ("insert", (3,)),
        ("delete", (4,)),
        ("update", (5,)),
    ]


def test_unordered_runs_group_by_kind() -> None:
    runs = plan_runs(statements_of(MODELS), ordered=False)
    assert [(run.kind.value, run.indexes) for run in runs] == [
        ("insert", (0, 1, 3)),
        ("update", (2, 5)),
        ("delete", (4,)),
    ]
    with pytest.raises(InvalidOperation):
        plan_runs([], ordered=True)


def test_bulk_result_rebases_error_indexes_and_upserts() -> None:
    from asyncmongo.core.operations.write import BatchReply

    runs = plan_runs(statements_of(MODELS), ordered=False)
    result = BulkResult()
    # the insert run was sent in two batches; its second batch (start 2) failed on index 0
    result.add(runs[0], BatchReply({"ok": 1, "n": 2}, 0, 2, True))
    result.add(
        runs[0],
        BatchReply(
            {"ok": 1, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]},
            2,
            1,
            True,
        ),
    )
    result.add(
        runs[1],
        BatchReply(
            {"ok": 1, "n": 2, "nModified": 1, "upserted": [{"index": 1, "_id": 9}]}, 0, 2, True
        ),
    )
    result.add(
        runs[2], BatchReply({"ok": 1, "n": 1, "writeConcernError": {"code": 64}}, 0, 1, True)
    )
    document = result.document()
    assert document["writeErrors"][0]["index"] == 3  # the user's InsertOne({"_id": 3})
    assert document["writeErrors"][0]["op"] == {"_id": 3}
    assert document["upserted"] == [{"index": 5, "_id": 9}]
    assert (document["nInserted"], document["nMatched"], document["nModified"]) == (2, 1, 1)
    assert (document["nRemoved"], document["nUpserted"]) == (1, 1)
    with pytest.raises(BulkWriteError) as info:
        result.raise_if_failed()
    assert info.value.code == 65 and info.value.details is not None
    assert info.value.details["writeConcernErrors"] == [{"code": 64}]


# -- other families -----------------------------------------------------------------------


def test_find_and_modify_documents() -> None:
    op = find_and_modify(
        NS,
        {"a": 1},
        update={"$inc": {"n": 1}},
        sort=[("a", 1)],
        upsert=True,
        return_document=ReturnDocument.AFTER,
        projection={"n": 1},
        write_concern=WriteConcern(w="majority"),
        codec_options=CODEC,
    )
    assert op.build(Conn()).document == {
        "findAndModify": "coll",
        "query": {"a": 1},
        "fields": {"n": 1},
        "sort": {"a": 1},
        "update": {"$inc": {"n": 1}},
        "new": True,
        "upsert": True,
        "writeConcern": {"w": "majority"},
    }
    assert op.parse({"ok": 1, "value": {"n": 2}}) == {"n": 2}
    remove = find_and_modify(NS, {}, remove=True, write_concern=ACK, codec_options=CODEC)
    assert remove.build(Conn()).document == {"findAndModify": "coll", "query": {}, "remove": True}
    assert remove.parse({"ok": 1, "value": None}) is None
    with pytest.raises(WriteConcernError):
        remove.parse({"ok": 1, "value": None, "writeConcernError": {"code": 64}})
    with pytest.raises(InvalidArgument):
        find_and_modify(NS, {}, replacement={"$set": {}}, write_concern=ACK, codec_options=CODEC)


def test_count_documents_is_an_aggregate() -> None:
    op = count_ops.count_documents(
        NS,
        {"a": 1},
        skip=1,
        limit=2,
        read_preference=PRIMARY,
        read_concern=ReadConcern(),
        codec_options=CODEC,
    )
    assert op.build(Conn()).document == {
        "aggregate": "coll",
        "pipeline": [
            {"$match": {"a": 1}},
            {"$skip": 1},
            {"$limit": 2},
            {"$group": {"_id": 1, "n": {"$sum": 1}}},
        ],
        "cursor": {},
    }
    assert op.parse({"ok": 1, "cursor": {"id": 0, "firstBatch": [{"_id": 1, "n": 5}]}}) == 5
    assert op.parse({"ok": 1, "cursor": {"id": 0, "firstBatch": []}}) == 0


def test_estimated_count_of_a_missing_collection_is_zero() -> None:
    op = count_ops.estimated_document_count(
        NS, read_preference=PRIMARY, read_concern=ReadConcern(), codec_options=CODEC
    )
    assert op.build(Conn()).document == {"count": "coll"}
    assert op.parse({"ok": 0, "code": 26, "errmsg": "ns not found"}) == 0
    assert op.parse({"ok": 1, "n": 3}) == 3


def test_distinct() -> None:
    op = distinct(
        NS, "a", {"b": 1}, read_preference=PRIMARY, read_concern=ReadConcern(), codec_options=CODEC
    )
    assert op.build(Conn()).document == {"distinct": "coll", "key": "a", "query": {"b": 1}}
    assert op.parse({"ok": 1, "values": [1, 2]}) == [1, 2]


def aggregate_op(pipeline: list[Any], preference: ReadPreference = PRIMARY) -> Any:
    return aggregate_ops.aggregate(
        NS,
        pipeline,
        batch_size=5,
        read_preference=preference,
        read_concern=ReadConcern("local"),
        write_concern=WriteConcern(w=1),
        codec_options=CODEC,
    )


def test_aggregate_with_and_without_write_stage() -> None:
    plain = aggregate_op([{"$match": {}}])
    assert plain.build(Conn()).document == {
        "aggregate": "coll",
        "pipeline": [{"$match": {}}],
        "cursor": {"batchSize": 5},
        "readConcern": {"level": "local"},
    }
    assert not plain.target.write_stage
    secondary = ReadPreference(Mode.SECONDARY)
    out = aggregate_op([{"$match": {}}, {"$out": "other"}], secondary)
    document = out.build(Conn()).document
    assert document["cursor"] == {} and document["writeConcern"] == {"w": 1}
    assert out.target.write_stage and out.target.selection.read_preference == secondary
    assert aggregate_ops.has_write_stage([{"$merge": {"into": "x"}}])
    with pytest.raises(InvalidArgument):
        aggregate_op({"$match": {}})  # type: ignore[arg-type]


def test_index_commands() -> None:
    create = index_ops.create_indexes(
        NS, [IndexModel("a").document], write_concern=ACK, codec_options=CODEC
    )
    assert create.build(Conn()).document == {
        "createIndexes": "coll",
        "indexes": [{"key": {"a": 1}, "name": "a_1"}],
    }
    assert create.parse({"ok": 1}) == ["a_1"]
    listing = index_ops.list_indexes(NS, read_preference=PRIMARY, codec_options=CODEC)
    assert listing.parse({"ok": 0, "code": 26}).documents == []
    drop = index_ops.drop_indexes(NS, "*", write_concern=ACK, codec_options=CODEC)
    assert drop.build(Conn()).document == {"dropIndexes": "coll", "index": "*"}


def test_management_commands() -> None:
    drop = management.drop_collection(NS, write_concern=ACK, codec_options=CODEC)
    assert drop.parse({"ok": 0, "code": 26, "errmsg": "ns not found"})["ok"] == 0
    with pytest.raises(OperationFailure):
        drop.parse({"ok": 0, "code": 13, "errmsg": "unauthorized"})
    rename = management.rename_collection(
        NS, Namespace("db", "new"), drop_target=True, write_concern=ACK, codec_options=CODEC
    )
    assert rename.build(Conn()).database == "admin"
    assert rename.build(Conn()).document == {
        "renameCollection": "db.coll",
        "to": "db.new",
        "dropTarget": True,
    }
    listing = management.list_collections(
        "db", filter={"name": "x"}, name_only=True, read_preference=PRIMARY, codec_options=CODEC
    )
    assert listing.build(Conn()).document == {
        "listCollections": 1,
        "cursor": {},
        "filter": {"name": "x"},
        "nameOnly": True,
    }
    unacknowledged = management.create_collection(
        NS, {"capped": True}, write_concern=WriteConcern(w=0), codec_options=CODEC
    )
    assert unacknowledged.build(Conn()).unacknowledged
    assert unacknowledged.parse({}) == {"ok": 1}


def test_run_command_forms() -> None:
    assert command_document("ping") == {"ping": 1}
    assert command_document("count", "coll", query={}) == {"count": "coll", "query": {}}
    assert command_document({"a": 1}, b=2) == {"a": 1, "b": 2}
    with pytest.raises(InvalidArgument):
        command_document({})
    op = run_command("db", {"ping": 1}, PRIMARY, CODEC)
    with pytest.raises(OperationFailure):
        op.parse({"ok": 0, "code": 59})
    unchecked = run_command("db", {"ping": 1}, PRIMARY, CODEC, check=False)
    assert unchecked.parse({"ok": 0, "code": 59}) == {"ok": 0, "code": 59}


# -- results ------------------------------------------------------------------------------


def test_results_of_acknowledged_writes() -> None:
    reply = {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 7}], "ok": 1}
    update = UpdateResult.from_reply(reply, True)
    assert (update.matched_count, update.modified_count, update.upserted_id) == (0, 0, 7)
    assert update.did_upsert
    assert update.raw_result == {"n": 1, "nModified": 0, "upserted": 7, "ok": 1,
                                 "updatedExisting": False}
    assert reply["upserted"] == [{"index": 0, "_id": 7}]  # the reply itself is not changed
    falsy = UpdateResult.from_reply({"n": 1, "nModified": 0, "upserted": [{"_id": 0}]}, True)
    assert falsy.did_upsert and falsy.upserted_id == 0
    assert DeleteResult({"n": 3}, True).deleted_count == 3
    bulk = BulkWriteResult(
        {
            "nInserted": 1,
            "nMatched": 2,
            "nModified": 1,
            "nRemoved": 0,
            "nUpserted": 1,
            "upserted": [{"index": 4, "_id": "x"}],
        },
        True,
    )
    assert bulk.upserted_ids == {4: "x"} and bulk.inserted_count == 1


def test_unacknowledged_results_refuse_counts() -> None:
    assert InsertOneResult(1, False).inserted_id == 1
    for result, name in (
        (UpdateResult(None, False), "matched_count"),
        (DeleteResult(None, False), "deleted_count"),
        (BulkWriteResult({}, False), "inserted_count"),
        (ClientBulkWriteResult({}, False, False), "deleted_count"),
    ):
        assert result.acknowledged is False
        with pytest.raises(InvalidOperation):
            getattr(result, name)


def test_client_bulk_verbose_results_need_the_flag() -> None:
    result = ClientBulkWriteResult({"nInserted": 1}, True, False)
    assert result.inserted_count == 1
    with pytest.raises(InvalidOperation):
        _ = result.insert_results


def test_search_index_commands() -> None:
    from asyncmongo.core.operations import search_indexes as search_ops
    from asyncmongo.operations import SearchIndexModel

    model = SearchIndexModel({"mappings": {"dynamic": True}}, name="s", type="search")
    assert model.document == {
        "name": "s",
        "type": "search",
        "definition": {"mappings": {"dynamic": True}},
    }
    create = search_ops.create_search_indexes(NS, [model.document], codec_options=CODEC)
    assert create.build(Conn()).document == {
        "createSearchIndexes": "coll",
        "indexes": [model.document],
    }
    assert create.parse({"ok": 1, "indexesCreated": [{"id": "1", "name": "s"}]}) == ["s"]
    drop = search_ops.drop_search_index(NS, "s", codec_options=CODEC)
    assert drop.build(Conn()).document == {"dropSearchIndex": "coll", "name": "s"}
    assert drop.parse({"ok": 0, "code": 26, "errmsg": "ns not found"}) is None  # idempotent
    with pytest.raises(OperationFailure):
        drop.parse({"ok": 0, "code": 8, "errmsg": "Atlas only"})
    update = search_ops.update_search_index(NS, "s", {"x": 1}, codec_options=CODEC)
    assert update.build(Conn()).document == {
        "updateSearchIndex": "coll",
        "name": "s",
        "definition": {"x": 1},
    }
    assert search_ops.list_search_indexes_pipeline(None) == [{"$listSearchIndexes": {}}]
    assert search_ops.list_search_indexes_pipeline("s") == [{"$listSearchIndexes": {"name": "s"}}]
