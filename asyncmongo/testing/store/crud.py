"""The CRUD commands: insert, find, update, delete, findAndModify, count, distinct,
aggregate, getMore, killCursors. Each takes the command context and document and returns the
reply (write commands in MongoDB's exact shapes: n, nModified, upserted, writeErrors)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from asyncmongo.bson import encode
from asyncmongo.bson.types import Regex
from asyncmongo.testing.store import (
    change_events,
    coll_stats,
    expressions,
    known_fields,
    local_sessions,
    metadata,
    plan,
    tailable,
    text_search,
    timeseries,
    views,
)
from asyncmongo.testing.store.aggregate import (
    UPDATE_STAGES,
    PipelineContext,
    check_update_pipeline,
    run_pipeline,
)
from asyncmongo.testing.store.collation import parse_collation, using
from asyncmongo.testing.store.collection import Collection, Document
from asyncmongo.testing.store.compare import compare, hash_key
from asyncmongo.testing.store.context import (
    CommandContext,
    collection_name,
    optional_document,
    optional_int,
    require_list,
)
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.paths import MISSING, collect, split_path
from asyncmongo.testing.store.projection import compile_projection
from asyncmongo.testing.store.sorting import sort_documents
from asyncmongo.testing.store.update import (
    UpdateContext,
    apply_update,
    is_replacement,
    parse_operators,
    upsert_seed,
    validate_replacement,
)
from asyncmongo.testing.store.validation import check_document
from asyncmongo.testing.store.values import copy_document, deep_copy, same_bson

Reply = dict[str, Any]


def _reply(**fields: Any) -> Reply:
    return {**fields, "ok": 1.0}


def let_variables(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The command's ``let`` variables, evaluated once (None without ``let``)."""
    if spec.get("let") is None:
        return None
    let = spec["let"]
    if not isinstance(let, Mapping):
        raise StoreError(14, "BSON field 'let' is the wrong type, expected type 'object'")
    return {name: expressions.evaluate(expressions.parse(value), {}) for name, value in
            let.items()}


def _statement_collation(spec: Any) -> AbstractContextManager[None]:
    """A statement's own collation, active while it runs (else the command's stays)."""
    if isinstance(spec, Mapping) and spec.get("collation") is not None:
        return using(parse_collation(spec["collation"]))
    return nullcontext()


def _with_let(spec: Any, command: Mapping[str, Any]) -> Any:
    if isinstance(spec, Mapping) and "let" in command:
        return {**spec, "let": command["let"]}
    return spec


# --- insert ----------------------------------------------------------------------------------


def prepare_insert(ctx: CommandContext, document: Any) -> Document:
    """The stored form of an inserted document: a copy with ``_id`` first."""
    if not isinstance(document, Mapping):
        raise bad_value("document to insert must be an object")
    if "_id" not in document:
        return {"_id": ctx.new_object_id(), **copy_document(document)}
    identifier = document["_id"]
    if isinstance(identifier, list):
        raise StoreError(53, "can't use an array for _id")
    if isinstance(identifier, Regex):
        raise StoreError(53, "can't use a regex for _id")
    _check_id_field_names(identifier)
    return {"_id": deep_copy(identifier),
            **{k: deep_copy(v) for k, v in document.items() if k != "_id"}}


#: DBRef fields, the only '$'-prefixed names mongod stores (storage_validation).
_DBREF_FIELDS = frozenset({"$ref", "$id", "$db"})


def _check_id_field_names(value: Any) -> None:
    """mongod refuses '$'-prefixed field names anywhere inside ``_id`` (DBRefs aside), even
    where it stores them in other fields (crud: insertOne-dots_and_dollars)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key.startswith("$") and key not in _DBREF_FIELDS:
                raise StoreError(52, f"_id fields may not contain '$'-prefixed fields: {key} "
                                     "is not valid for storage.")
            _check_id_field_names(item)
    elif isinstance(value, list):
        for item in value:
            _check_id_field_names(item)


def _write_reply(n: int, errors: list[Reply], **extra: Any) -> Reply:
    reply: Reply = {"n": n, **extra}
    if errors:
        reply["writeErrors"] = errors
    return _reply(**reply)


def _record_error(exc: StoreError, index: int, errors: list[Reply]) -> None:
    if exc.code in (112, 251):
        raise exc
    errors.append(exc.to_write_error(index))


def insert(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "insert", ctx.db_name)
    documents = require_list(command, "documents")
    ordered = command.get("ordered", True) is not False
    collection = ctx.namespaces.get_or_create(ctx.db_name, name)
    n, errors = 0, list[Reply]()
    for index, document in enumerate(documents):
        try:
            prepared = prepare_insert(ctx, document)
            _check_size(prepared)
            if collection.is_timeseries:
                timeseries.check_measurement(collection, prepared)
            check_document(collection, prepared, None, command)
            collection.insert(prepared)
            n += 1
        except StoreError as exc:
            _record_error(exc, index, errors)
            if ordered:
                break
    return _write_reply(n, errors)


#: mongod's maxBsonObjectSize: the largest document it stores.
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024


def _check_size(document: Document) -> None:
    """mongod refuses to store a document over 16 MiB (the command itself may be up to 16 MiB
    + 16 KiB, so a driver's check alone lets one through: client-side encryption grows
    documents after that check)."""
    size = len(encode(document))
    if size > MAX_DOCUMENT_SIZE:
        raise StoreError(2, f"object to insert too large. size in bytes: {size}, max size: "
                            f"{MAX_DOCUMENT_SIZE}")


# --- update ----------------------------------------------------------------------------------


def _update_context(ctx: CommandContext, spec: Mapping[str, Any], query: Any,
                    is_insert: bool) -> UpdateContext:
    filters = spec.get("arrayFilters") or ()
    if not isinstance(filters, list | tuple):
        raise StoreError(14, "arrayFilters must be an array")
    return UpdateContext(query=query, array_filters=tuple(filters), is_insert=is_insert,
                         now=ctx.now, timestamp=ctx.timestamp)


def compute_update(ctx: CommandContext, document: Document, update: Any,
                   spec: Mapping[str, Any], *, is_insert: bool = False) -> Document:
    """The new version of ``document`` under ``update`` (operators, replacement or pipeline)."""
    query = spec.get("q", spec.get("query"))
    if isinstance(update, list):
        if spec.get("arrayFilters"):
            raise StoreError(72, "arrayFilters may not be specified for pipeline-style updates")
        result = run_pipeline([document], update,
                              PipelineContext(ctx.db_name, variables=let_variables(spec)),
                              allowed=UPDATE_STAGES)[0]
        if "_id" in document and "_id" not in result:
            result = {"_id": document["_id"], **result}
        if not is_insert and "_id" in document and (
                "_id" not in result or not same_bson(result["_id"], document["_id"])):
            raise StoreError(66, "Performing an update on the path '_id' would modify the "
                                 "immutable field '_id'")
        return result
    if not isinstance(update, Mapping):
        raise StoreError(14, "Update argument must be either an object or an array")
    return apply_update(document, update, _update_context(ctx, spec, query, is_insert))


def _validate_update(update: Any, multi: bool) -> None:
    if isinstance(update, list):
        check_update_pipeline(update)
        return
    if not isinstance(update, Mapping):
        raise StoreError(14, "Update argument must be either an object or an array")
    if is_replacement(update):
        if multi:
            raise StoreError(9, "multi update is not supported for replacement-style update")
        validate_replacement(update)
    else:
        parse_operators(update)


def _upsert_document(ctx: CommandContext, query: Any, update: Any,
                     spec: Mapping[str, Any]) -> Document:
    seed = upsert_seed(query)
    if isinstance(update, Mapping) and is_replacement(update):
        new = copy_document(update)
        if "_id" in seed and "_id" not in new:
            new = {"_id": seed["_id"], **new}
    else:
        new = compute_update(ctx, seed, update, spec, is_insert=True)
    if "_id" not in new:
        new = {"_id": ctx.new_object_id(), **new}
    elif next(iter(new)) != "_id":
        new = {"_id": new["_id"], **{k: v for k, v in new.items() if k != "_id"}}
    return new


def _matching(collection: Collection | None, query: Any, spec: Mapping[str, Any],
              first_only: bool) -> list[Document]:
    if collection is None:
        return []
    predicate, _ = text_search.compile_text_filter(collection, query, let_variables(spec))
    sort = optional_document(spec, "sort")
    if sort:
        candidates = sort_documents([d for d in collection.candidates(query) if predicate(d)],
                                    sort)
        return candidates[:1] if first_only else candidates
    found = []
    for document in collection.candidates(query):
        if predicate(document):
            found.append(document)
            if first_only:
                break
    return found


def _one_update(ctx: CommandContext, name: str, spec: Any, index: int,
                counts: dict[str, Any], command: Mapping[str, Any]) -> None:
    if not isinstance(spec, Mapping) or "u" not in spec:
        raise StoreError(40414, "BSON field 'update.updates.u' is missing but a required field")
    query, update = spec.get("q", {}), spec["u"]
    multi = bool(spec.get("multi", False))
    _validate_update(update, multi)
    collection = ctx.namespaces.get(ctx.db_name, name)
    text_search.compile_text_filter(collection, query, let_variables(spec))
    matched = _matching(collection, query, spec, first_only=not multi)
    if not matched and spec.get("upsert"):
        target = ctx.namespaces.get_or_create(ctx.db_name, name)
        new = _upsert_document(ctx, query, update, spec)
        check_document(target, new, None, command)
        target.insert(new)
        counts["n"] += 1
        counts["upserted"].append({"index": index, "_id": new["_id"]})
        return
    assert collection is not None or not matched
    for document in matched:
        new = compute_update(ctx, document, update, spec)
        counts["n"] += 1
        if not same_bson(new, document):
            assert collection is not None
            check_document(collection, new, document, command)
            with change_events.replacing(is_replacement(update)):
                collection.replace(collection.key_of(document), new)
            counts["nModified"] += 1


def update(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "update", ctx.db_name)
    updates = require_list(command, "updates")
    ordered = command.get("ordered", True) is not False
    for spec in updates:
        # mongod parses every statement's pipeline with the command: a bad stage fails the
        # whole command (ok: 0), not one statement, even when nothing matches.
        if isinstance(spec, Mapping) and isinstance(spec.get("u"), list):
            check_update_pipeline(spec["u"])
    counts: dict[str, Any] = {"n": 0, "nModified": 0, "upserted": []}
    errors: list[Reply] = []
    for index, spec in enumerate(updates):
        try:
            with _statement_collation(spec):
                _one_update(ctx, name, _with_let(spec, command), index, counts, command)
        except StoreError as exc:
            _record_error(exc, index, errors)
            if ordered:
                break
    extra: dict[str, Any] = {"nModified": counts["nModified"]}
    if counts["upserted"]:
        extra["upserted"] = counts["upserted"]
    return _write_reply(counts["n"], errors, **extra)


# --- delete ----------------------------------------------------------------------------------


def delete(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "delete", ctx.db_name)
    deletes = require_list(command, "deletes")
    ordered = command.get("ordered", True) is not False
    n, errors = 0, list[Reply]()
    for index, spec in enumerate(deletes):
        try:
            with _statement_collation(spec):
                n += _one_delete(ctx, name, _with_let(spec, command))
        except StoreError as exc:
            _record_error(exc, index, errors)
            if ordered:
                break
    return _write_reply(n, errors)


def _one_delete(ctx: CommandContext, name: str, spec: Any) -> int:
    if not isinstance(spec, Mapping) or "q" not in spec:
        raise StoreError(40414, "BSON field 'delete.deletes.q' is missing but a required field")
    limit = optional_int(spec, "limit") or 0
    if limit not in (0, 1):
        raise bad_value(f"The limit field in delete objects must be 0 or 1. Got {limit}")
    collection = ctx.namespaces.get(ctx.db_name, name)
    text_search.compile_text_filter(collection, spec["q"], let_variables(spec))
    matched = _matching(collection, spec["q"], spec, first_only=limit == 1)
    for document in matched:
        assert collection is not None
        collection.delete(collection.key_of(document))
    return len(matched)


# --- findAndModify ---------------------------------------------------------------------------


def find_and_modify(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    key = "findAndModify" if "findAndModify" in command else "findandmodify"
    name = collection_name(command, key, ctx.db_name)
    query = optional_document(command, "query") or {}
    remove, update_spec = bool(command.get("remove", False)), command.get("update")
    return_new, upsert = bool(command.get("new", False)), bool(command.get("upsert", False))
    _validate_find_and_modify(remove, update_spec, return_new, upsert)
    fields = optional_document(command, "fields")
    projector = compile_projection(fields) if fields else None
    spec = {**command, "q": query}
    if not remove:
        _validate_update(update_spec, False)
    collection = ctx.namespaces.get(ctx.db_name, name)
    matched = _matching(collection, query, spec, first_only=True)
    value: Any = None
    if remove:
        if matched:
            assert collection is not None
            collection.delete(collection.key_of(matched[0]))
            value = matched[0]
        last_error: Reply = {"n": len(matched)}
    elif matched:
        assert collection is not None
        old = matched[0]
        new = compute_update(ctx, old, update_spec, spec)
        if not same_bson(new, old):
            check_document(collection, new, old, command)
            with change_events.replacing(is_replacement(update_spec)):
                collection.replace(collection.key_of(old), new)
        value = new if return_new else old
        last_error = {"n": 1, "updatedExisting": True}
    elif upsert:
        new = _upsert_document(ctx, query, update_spec, spec)
        target = ctx.namespaces.get_or_create(ctx.db_name, name)
        check_document(target, new, None, command)
        target.insert(new)
        value = new if return_new else None
        last_error = {"n": 1, "updatedExisting": False, "upserted": new["_id"]}
    else:
        last_error = {"n": 0, "updatedExisting": False}
    if value is not None:
        value = projector(value) if projector else deep_copy(value)
    return _reply(lastErrorObject=last_error, value=value)


def _validate_find_and_modify(remove: bool, update_spec: Any, return_new: bool,
                              upsert: bool) -> None:
    if remove and update_spec is not None:
        raise StoreError(9, "Cannot specify both an update and remove=true")
    if not remove and update_spec is None:
        raise StoreError(9, "Either an update or remove=true must be specified")
    if remove and return_new:
        raise StoreError(9, "Cannot specify both new=true and remove=true; 'remove' always "
                            "returns the deleted document")
    if remove and upsert:
        raise StoreError(9, "Cannot specify both upsert=true and remove=true ")


# --- reads -----------------------------------------------------------------------------------


def _documents(ctx: CommandContext, name: str) -> list[Document]:
    """What a read of the namespace sees (a view's through its pipeline)."""
    return views.documents_of(ctx.namespaces, ctx.namespaces.get(ctx.db_name, name))


def find(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "find", ctx.db_name)
    query = optional_document(command, "filter")
    variables = let_variables(command)
    collection = ctx.namespaces.get(ctx.db_name, name)
    predicate, search = text_search.compile_text_filter(collection, query, variables)
    projection = optional_document(command, "projection")
    projector = compile_projection(projection, query=query,
                                   variables=variables) if projection else None
    skip, limit = optional_int(command, "skip") or 0, optional_int(command, "limit") or 0
    batch_size = optional_int(command, "batchSize")
    if skip < 0:
        raise bad_value("Skip value must be non-negative, but received: " + str(skip))
    if batch_size is not None and batch_size < 0:
        raise bad_value(f"BatchSize value must be non-negative, but received: {batch_size}")
    single_batch = bool(command.get("singleBatch", False)) or limit < 0
    limit = abs(limit)
    sort = optional_document(command, "sort")
    tail = None
    if tailable.is_tailable(command, collection):
        tail = tailable.tail_of(command, collection, predicate, projector)
    if collection is not None and collection.is_view:
        scanned = views.documents_of(ctx.namespaces, collection)
    else:
        scanned = collection.candidates(query) if collection is not None else []
    results = [d for d in scanned if predicate(d)]
    if search is not None:
        results = text_search.with_scores(results, search)
    results = sort_documents(results, sort)[skip:]
    if limit:
        results = results[:limit]
    results = plan.shape(results, collection,
                         plan.plan_index(collection, query, sort, command.get("hint")),
                         projector, return_key=command.get("returnKey") is True,
                         show_record_id=command.get("showRecordId") is True)
    if search is not None:
        results = metadata.strip_scores(results)
    cursor = ctx.cursors.first_batch(f"{ctx.db_name}.{name}", results, batch_size,
                                     single_batch=single_batch, lsid_key=ctx.lsid_key,
                                     tail=tail)
    return _reply(cursor=cursor)


def get_more(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    cursor_id = command["getMore"]
    collection = command.get("collection")
    if not isinstance(collection, str):
        raise bad_value("getMore needs a 'collection' string")
    batch_size = optional_int(command, "batchSize")
    found = ctx.cursors.find(cursor_id, collection, ctx.db_name)
    if command.get("maxTimeMS") is not None and not tailable.await_data(found):
        raise bad_value("cannot set maxTimeMS on getMore command for a non-awaitData cursor")
    try:
        tailable.refill(found, ctx.namespaces)
    except StoreError:
        ctx.cursors.kill([found.cursor_id])  # mongod kills a cursor whose getMore failed
        raise
    cursor = ctx.cursors.get_more(cursor_id, collection, ctx.db_name, batch_size)
    return _reply(cursor=cursor)


def kill_cursors(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    if command.get("killCursors") != "$cmd.aggregate":  # a database-level aggregate's
        collection_name(command, "killCursors", ctx.db_name)
    return _reply(**ctx.cursors.kill(require_list(command, "cursors")))


def count(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "count", ctx.db_name)
    predicate, _ = text_search.compile_text_filter(
        ctx.namespaces.get(ctx.db_name, name),
        optional_document(command, "query"))
    skip, limit = optional_int(command, "skip") or 0, optional_int(command, "limit") or 0
    if skip < 0:
        raise bad_value(f"Skip value must be non-negative, but received: {skip}")
    n = max(0, sum(1 for d in _documents(ctx, name) if predicate(d)) - skip)
    if limit:
        n = min(n, abs(limit))
    return _reply(n=n)


def distinct(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "distinct", ctx.db_name)
    key = command.get("key")
    if not isinstance(key, str) or not key:
        raise StoreError(14, "BSON field 'distinct.key' is missing or not a string")
    predicate, _ = text_search.compile_text_filter(
        ctx.namespaces.get(ctx.db_name, name),
        optional_document(command, "query"))
    values: dict[Any, Any] = {}
    for document in _documents(ctx, name):
        if not predicate(document):
            continue
        for value in collect(document, split_path(key)):
            for item in value if isinstance(value, list) else [value]:
                if item is not MISSING:
                    values.setdefault(hash_key(item), item)
    ordered = sorted(values.values(), key=functools.cmp_to_key(compare))
    return _reply(values=deep_copy(ordered))


def _check_read_concern(command: Mapping[str, Any], pipeline: Any) -> None:
    level = (optional_document(command, "readConcern") or {}).get("level")
    writes = isinstance(pipeline, list) and any(
        isinstance(stage, Mapping) and ("$out" in stage or "$merge" in stage)
        for stage in pipeline)
    if level == "linearizable" and writes:
        raise bad_value("{readConcern: {level: 'linearizable'}} cannot be used with $out or "
                        "$merge")


def aggregate(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    known_fields.check_fields(command, known_fields.AGGREGATE_FIELDS)
    target = command["aggregate"]
    pipeline: Any = command.get("pipeline")
    if "cursor" not in command and not command.get("explain"):
        raise StoreError(9, "The 'cursor' option is required, except for aggregate with the "
                            "explain argument")
    coll_stats.check_position(pipeline)
    read: str | None = None  # the collection whose documents the pipeline reads
    if local_sessions.is_list_local_sessions(pipeline):
        local_sessions.check_namespace(target)
        if ctx.local_sessions is None:
            raise StoreError(40324, "Unrecognized pipeline stage name: '$listLocalSessions'")
        name = "$cmd.aggregate"
        documents = ctx.local_sessions.documents(pipeline[0][local_sessions.STAGE])
        pipeline = pipeline[1:]
    elif target == 1:
        name, documents = "$cmd.aggregate", []
    elif coll_stats.is_coll_stats(pipeline):
        name = collection_name(command, "aggregate", ctx.db_name)
        documents = coll_stats.coll_stats(ctx.namespaces.get(ctx.db_name, name),
                                          f"{ctx.db_name}.{name}",
                                          pipeline[0][coll_stats.STAGE], ctx.now)
        pipeline = pipeline[1:]
    else:
        name = collection_name(command, "aggregate", ctx.db_name)
        documents = _documents(ctx, name)
        read = name
    _check_read_concern(command, pipeline)
    cursor_options = optional_document(command, "cursor") or {}
    batch_size = optional_int(cursor_options, "batchSize")
    results = run_pipeline(documents, pipeline, PipelineContext(
        ctx.db_name, ctx.namespaces, let_variables(command), collection=read))
    if text_search.starts_with_search(pipeline):
        results = metadata.strip_scores(results)
    cursor = ctx.cursors.first_batch(f"{ctx.db_name}.{name}", results, batch_size,
                                     lsid_key=ctx.lsid_key)
    return _reply(cursor=cursor)
