"""Entity Test Operations: operation names and arguments to asyncmongo's (PyMongo-named) API.

Each handler takes the runner's :class:`OperationContext`, the target object and the
operation's arguments, and returns the result the spec compares (documents for model
objects, an :class:`IterableResult` for iterated cursors). Arguments are translated from the
spec's camelCase to PyMongo's keyword names (``batchSize`` -> ``batch_size``,
``maxTimeMS`` -> ``max_time_ms``, ``session`` -> the session entity, ...).

An operation name the format does not define fails the test (:class:`UnknownOperation`);
one whose asyncmongo method does not exist yet skips it naming the method
(:class:`ApiMissing`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from asyncmongo import operations as models
from asyncmongo.core.concern import ReadConcern
from asyncmongo.core.selection.read_preference import ReadPreference
from asyncmongo.core.wire.handshake import DriverInfo
from spec_tests.unified.entities import (
    EntityMap,
    call_api,
    session_options,
    transaction_options,
    write_concern,
)
from spec_tests.unified.errors import ApiMissing, TestFormatError, UnknownOperation, Unsupported
from spec_tests.unified.matcher import IterableResult
from spec_tests.unified.results import result_document

__all__ = ["OPERATIONS", "OperationContext", "convert_arguments", "snake_case"]


class OperationContext(Protocol):
    """What operation handlers need from the runner."""

    entities: EntityMap

    async def run_operations(self, operations: list[Mapping[str, Any]], *,
                             propagate_errors: bool = False) -> None:
        """Run nested operations (withTransaction callbacks)."""
        ...


Handler = Callable[[OperationContext, Any, dict[str, Any]], Awaitable[Any]]

_UNSUPPORTED_ARGUMENTS: dict[str, str] = {}


def snake_case(name: str) -> str:
    """maxTimeMS -> max_time_ms, batchSize -> batch_size, arrayFilters -> array_filters."""
    name = re.sub(r"MS$", "Ms", name)
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


#: Operations whose extra arguments are server options that PyMongo passes through under
#: their server names (``create_collection(name, clusteredIndex=...)``,
#: ``create_index(keys, expireAfterSeconds=...)``): they keep their camelCase.
VERBATIM_OPERATIONS = frozenset({"createCollection", "createIndex", "modifyCollection"})


def convert_arguments(ctx: OperationContext, arguments: Mapping[str, Any], *,
                      verbatim: bool = False) -> dict[str, Any]:
    """The spec's arguments as PyMongo keyword arguments."""
    kwargs: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in _UNSUPPORTED_ARGUMENTS:
            raise Unsupported(_UNSUPPORTED_ARGUMENTS[key])
        if key == "session":
            kwargs["session"] = ctx.entities.get(value, "session")
        elif key == "readConcern":
            kwargs["read_concern"] = ReadConcern(value.get("level"))
        elif key == "writeConcern":
            kwargs["write_concern"] = write_concern(value)
        elif key == "readPreference":
            kwargs["read_preference"] = ReadPreference.from_document(value)
        elif key == "cursorType":
            kwargs["cursor_type"] = _cursor_type(value)
        elif key == "returnDocument":
            kwargs["return_document"] = _return_document(value)
        elif verbatim:
            kwargs[key] = value
        else:
            kwargs[snake_case(key)] = value
    return kwargs


def _cursor_type(value: Any) -> Any:
    """The format's cursorType (tailable, tailableAwait, nonTailable) as PyMongo's."""
    from asyncmongo.cursor import CursorType

    types = {"tailable": CursorType.TAILABLE, "tailableAwait": CursorType.TAILABLE_AWAIT,
             "nonTailable": CursorType.NON_TAILABLE}
    if value not in types:
        raise TestFormatError(f"unknown cursorType {value!r}")
    return types[value]


def _return_document(value: Any) -> bool:
    """ReturnDocument: PyMongo's AFTER is True, BEFORE is False."""
    if value == "After":
        return True
    if value == "Before":
        return False
    raise TestFormatError(f"returnDocument must be 'Before' or 'After', not {value!r}")


async def to_list(cursor: Any) -> IterableResult:
    """Iterate a cursor to the end (Iterating Returned Iterables)."""
    if hasattr(cursor, "to_list"):
        return IterableResult(await call_api(cursor, "to_list", None))
    if hasattr(cursor, "__aiter__"):
        return IterableResult([doc async for doc in cursor])
    raise ApiMissing(f"{type(cursor).__name__}.to_list")


def _pop(kwargs: dict[str, Any], name: str) -> Any:
    if name not in kwargs:
        raise TestFormatError(f"missing argument {name}")
    return kwargs.pop(name)


# -- collection ---------------------------------------------------------------------------

def _method(method: str, *positional: str, iterate: bool = False) -> Handler:
    """A handler calling ``obj.method(*positional arguments, **the rest)``."""
    async def handler(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
        args = [_pop(kwargs, name) for name in positional]
        result = await call_api(obj, method, *args, **kwargs)
        if iterate:
            return await to_list(result)
        return result_document(result)
    return handler


async def _find_one(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "find_one", kwargs.pop("filter", {}), **kwargs)


async def _distinct(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    key = _pop(kwargs, "field_name")
    return await call_api(obj, "distinct", key, kwargs.pop("filter", None), **kwargs)


async def _count_documents(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "count_documents", _pop(kwargs, "filter"), **kwargs)


async def _create_find_cursor(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    cursor = await call_api(obj, "find", _pop(kwargs, "filter"), **kwargs)
    await cursor._refresh()  # unified format: the find runs before the entity is saved
    return cursor


async def _find(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await to_list(await _create_find_cursor(ctx, obj, kwargs))


def _write_model(request: Mapping[str, Any], namespace: str | None = None) -> Any:
    """A bulkWrite request document as a PyMongo write model."""
    kind, arguments = next(iter(request.items()))
    kwargs = {snake_case(k): v for k, v in arguments.items()}
    if namespace is None:
        kwargs.pop("namespace", None)
    else:
        kwargs["namespace"] = namespace
    names = {"insertOne": "InsertOne", "deleteOne": "DeleteOne", "deleteMany": "DeleteMany",
             "replaceOne": "ReplaceOne", "updateOne": "UpdateOne", "updateMany": "UpdateMany"}
    if kind not in names:
        raise TestFormatError(f"unknown write model {kind}")
    model = getattr(models, names[kind], None)
    if model is None:
        raise ApiMissing(f"asyncmongo.operations.{names[kind]}")
    return model(**kwargs)


async def _bulk_write(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    requests = [_write_model(r) for r in _pop(kwargs, "requests")]
    return result_document(await call_api(obj, "bulk_write", requests, **kwargs))


async def _client_bulk_write(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    requests = []
    for request in _pop(kwargs, "models"):
        kind, arguments = next(iter(request.items()))
        requests.append(_write_model({kind: arguments}, arguments.get("namespace")))
    return result_document(await call_api(obj, "bulk_write", requests, **kwargs))


async def _create_index(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    keys = list(_pop(kwargs, "keys").items())
    return await call_api(obj, "create_index", keys, **kwargs)


async def _drop_index(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "drop_index", _pop(kwargs, "name"), **kwargs)


async def _rename(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "rename", _pop(kwargs, "to"), **kwargs)


async def _map_reduce(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    raise Unsupported("mapReduce is not in asyncmongo's API (PyMongo 4 removed "
                      "Collection.map_reduce; aggregate replaces it)")


async def _count(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    raise Unsupported("the deprecated count helper is not in asyncmongo's API (PyMongo 4 "
                      "removed Collection.count; count_documents replaces it)")


async def _change_stream(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    """createChangeStream / watch on a client, database or collection: PyMongo's watch()."""
    return await call_api(obj, "watch", **kwargs)


# -- database -----------------------------------------------------------------------------

async def _run_command(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    command = _pop(kwargs, "command")
    kwargs.pop("command_name", None)
    return await call_api(obj, "command", command, **kwargs)


async def _run_cursor_command(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await to_list(await _create_command_cursor(ctx, obj, kwargs))


async def _create_command_cursor(ctx: OperationContext, obj: Any,
                                 kwargs: dict[str, Any]) -> Any:
    command = _pop(kwargs, "command")
    kwargs.pop("command_name", None)
    if "max_time_ms" in kwargs:
        # run-command: runCursorCommand's maxTimeMS is for the getMores (PyMongo's
        # cursor_command calls it max_await_time_ms).
        kwargs["max_await_time_ms"] = kwargs.pop("max_time_ms")
    # The command itself says tailable/awaitData; PyMongo's cursor_command has no cursorType.
    kwargs.pop("cursor_type", None)
    return await call_api(obj, "cursor_command", command, **kwargs)


async def _create_collection(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    # PyMongo's check_exists asks listCollections first, a command the tests do not expect
    # (PyMongo's own runner turns it off the same way).
    kwargs.setdefault("check_exists", False)
    return await call_api(obj, "create_collection", _pop(kwargs, "collection"), **kwargs)


async def _drop_collection(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "drop_collection", _pop(kwargs, "collection"), **kwargs)


async def _list_collections(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await to_list(await call_api(obj, "list_collections", **kwargs))


async def _modify_collection(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    command = {"collMod": _pop(kwargs, "collection"), **kwargs}
    return await call_api(obj, "command", command)


# -- client -------------------------------------------------------------------------------

async def _close(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    await call_api(obj, "close")
    return None


# -- session ------------------------------------------------------------------------------

async def _start_transaction(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    options = {k: v for k, v in kwargs.items()}
    await call_api(obj, "start_transaction", **options)
    return None


async def _with_transaction(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    operations = _pop(kwargs, "callback")

    async def callback(session: Any) -> None:
        # withTransaction: callback errors reach withTransaction whatever the operation
        # expected of them.
        await ctx.run_operations(operations, propagate_errors=True)

    options: dict[str, Any] = {}
    if kwargs:
        raw = {k: v for k, v in kwargs.items()}
        options = {"read_concern": raw.get("read_concern"),
                   "write_concern": raw.get("write_concern"),
                   "read_preference": raw.get("read_preference"),
                   "max_commit_time_ms": raw.get("max_commit_time_ms")}
        options = {k: v for k, v in options.items() if v is not None}
    await call_api(obj, "with_transaction", callback, **options)
    return None


async def _snapshot_time(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "get_snapshot_time")


# -- cursors ------------------------------------------------------------------------------

async def _iterate_until_document(ctx: OperationContext, obj: Any,
                                  kwargs: dict[str, Any]) -> Any:
    if hasattr(obj, "next"):
        return await call_api(obj, "next")
    return await anext(obj)


async def _iterate_once(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await call_api(obj, "try_next")


#: (entity kind, operation name) -> handler.
OPERATIONS: dict[tuple[str, str], Handler] = {}


def _register(kinds: tuple[str, ...], name: str, handler: Handler) -> None:
    for kind in kinds:
        OPERATIONS[(kind, name)] = handler


_COLLECTION = ("collection",)
_DATABASE = ("database",)
_CLIENT = ("client",)
_CURSORS = ("findCursor", "commandCursor", "changeStream")

for _name, _handler in {
    "insertOne": _method("insert_one", "document"),
    "insertMany": _method("insert_many", "documents"),
    "deleteOne": _method("delete_one", "filter"),
    "deleteMany": _method("delete_many", "filter"),
    "updateOne": _method("update_one", "filter", "update"),
    "updateMany": _method("update_many", "filter", "update"),
    "replaceOne": _method("replace_one", "filter", "replacement"),
    "findOneAndDelete": _method("find_one_and_delete", "filter"),
    "findOneAndUpdate": _method("find_one_and_update", "filter", "update"),
    "findOneAndReplace": _method("find_one_and_replace", "filter", "replacement"),
    "estimatedDocumentCount": _method("estimated_document_count"),
    "countDocuments": _count_documents,
    "count": _count,
    "mapReduce": _map_reduce,
    "distinct": _distinct,
    "find": _find,
    "findOne": _find_one,
    "createFindCursor": _create_find_cursor,
    "bulkWrite": _bulk_write,
    "createIndex": _create_index,
    "dropIndex": _drop_index,
    "dropIndexes": _method("drop_indexes"),
    "listIndexes": _method("list_indexes", iterate=True),
    "listIndexNames": _method("index_names"),
    "drop": _method("drop"),
    "rename": _rename,
    "createSearchIndex": _method("create_search_index", "model"),
    "createSearchIndexes": _method("create_search_indexes", "models"),
    "dropSearchIndex": _method("drop_search_index", "name"),
    "listSearchIndexes": _method("list_search_indexes", iterate=True),
    "updateSearchIndex": _method("update_search_index", "name", "definition"),
}.items():
    _register(_COLLECTION, _name, _handler)

_register(_COLLECTION + _DATABASE, "aggregate", _method("aggregate", "pipeline", iterate=True))
_register(_COLLECTION + _DATABASE + _CLIENT, "watch", _change_stream)
_register(_COLLECTION + _DATABASE + _CLIENT, "createChangeStream", _change_stream)

for _name, _handler in {
    "runCommand": _run_command,
    "runCursorCommand": _run_cursor_command,
    "createCommandCursor": _create_command_cursor,
    "createCollection": _create_collection,
    "dropCollection": _drop_collection,
    "listCollections": _list_collections,
    "listCollectionNames": _method("list_collection_names"),
    "listCollectionObjects": _list_collections,
    "modifyCollection": _modify_collection,
}.items():
    _register(_DATABASE, _name, _handler)

async def _drop_database(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    await call_api(obj, "drop_database", _pop(kwargs, "database"), **kwargs)
    return None


async def _append_metadata(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    """mongodb-handshake: appendMetadata(driverInfoOptions) is PyMongo's append_metadata."""
    info = _pop(kwargs, "driver_info_options")
    await call_api(obj, "append_metadata", DriverInfo(**info))
    return None


for _name, _handler in {
    "listDatabases": _method("list_databases", iterate=True),
    # listDatabaseObjects / listCollectionObjects: the spec's optional model-object
    # variants; PyMongo's list_databases / list_collections are what it has.
    "listDatabaseObjects": _method("list_databases", iterate=True),
    "dropDatabase": _drop_database,
    "listDatabaseNames": _method("list_database_names"),
    "clientBulkWrite": _client_bulk_write,
    "close": _close,
    "appendMetadata": _append_metadata,
}.items():
    _register(_CLIENT, _name, _handler)

for _name, _handler in {
    "startTransaction": _start_transaction,
    "commitTransaction": _method("commit_transaction"),
    "abortTransaction": _method("abort_transaction"),
    "endSession": _method("end_session"),
    "withTransaction": _with_transaction,
    "getSnapshotTime": _snapshot_time,
}.items():
    _register(("session",), _name, _handler)

for _name, _handler in {
    "iterateUntilDocumentOrError": _iterate_until_document,
    "iterateOnce": _iterate_once,
    "close": _method("close"),
}.items():
    _register(_CURSORS, _name, _handler)


# -- GridFS bucket ------------------------------------------------------------------------

def _hex_bytes(value: Any) -> bytes:
    """An upload's ``source``: ``{$$hexBytes: "..."}`` as the bytes it spells."""
    if not isinstance(value, Mapping) or set(value) != {"$$hexBytes"}:
        raise TestFormatError(f"an upload source must be {{$$hexBytes: ...}}, not {value!r}")
    return bytes.fromhex(value["$$hexBytes"])


async def _upload(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    kwargs.pop("disable_md5", None)  # asyncmongo never computes MD5 (GridFS spec allows)
    source = _hex_bytes(_pop(kwargs, "source"))
    return await call_api(obj, "upload_from_stream", _pop(kwargs, "filename"), source, **kwargs)


async def _read_all(grid_out: Any) -> bytes:
    try:
        data: bytes = await call_api(grid_out, "read")
    finally:
        await call_api(grid_out, "close")
    return data


async def _download(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    return await _read_all(await call_api(obj, "open_download_stream", _pop(kwargs, "id"),
                                          **kwargs))


async def _download_by_name(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    grid_out = await call_api(obj, "open_download_stream_by_name", _pop(kwargs, "filename"),
                              **kwargs)
    return await _read_all(grid_out)


for _name, _handler in {
    "delete": _method("delete", "id"),
    "deleteByName": _method("delete_by_name", "filename"),
    "download": _download,
    "downloadByName": _download_by_name,
    "upload": _upload,
    "rename": _method("rename", "id", "new_filename"),
    "renameByName": _method("rename_by_name", "filename", "new_filename"),
    "drop": _method("drop"),
    "find": _find,
}.items():
    _register(("bucket",), _name, _handler)


# -- clientEncryption ----------------------------------------------------------------------
#
# The entity is a ClientEncryptionEntity (spec_tests/unified/encryption.py): operations that
# need a KMS provider left out for want of credentials skip naming it. Which providers a key
# vault operation needs is read from the key vault through the runner's internal client, so
# the test's observed clients see no extra commands.

async def _key_vault_providers(ctx: OperationContext, obj: Any,
                               filter: Mapping[str, Any]) -> set[str]:
    """The masterKey providers of the key vault documents matching ``filter``."""
    internal = ctx.entities.internal
    if internal is None:
        raise TestFormatError("no internal client to read the key vault with")
    db, _, coll = obj.client_encryption._namespace.partition(".")
    cursor = internal[db][coll].find(filter, {"masterKey.provider": 1})
    return {str((doc.get("masterKey") or {}).get("provider")) async for doc in cursor}


async def _check_keys(ctx: OperationContext, obj: Any, filter: Mapping[str, Any]) -> None:
    for provider in sorted(await _key_vault_providers(ctx, obj, filter)):
        obj.check_provider(provider)


async def _create_data_key(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    provider = _pop(kwargs, "kms_provider")
    obj.check_provider(provider)
    opts = dict(kwargs.pop("opts", {}))
    args: dict[str, Any] = {}
    if "masterKey" in opts:
        args["master_key"] = opts.pop("masterKey")
    if "keyAltNames" in opts:
        args["key_alt_names"] = opts.pop("keyAltNames")
    if "keyMaterial" in opts:
        args["key_material"] = bytes(opts.pop("keyMaterial"))
    if opts or kwargs:
        raise TestFormatError(f"unknown createDataKey arguments {sorted({**opts, **kwargs})}")
    return await call_api(obj.client_encryption, "create_data_key", provider, **args)


async def _rewrap_many_data_key(ctx: OperationContext, obj: Any,
                                kwargs: dict[str, Any]) -> Any:
    """rewrapManyDataKey: ``{bulkWriteResult: ...}``, without the field when no key
    matched (the spec's RewrapManyDataKeyResult)."""
    filter = _pop(kwargs, "filter")
    opts = dict(kwargs.pop("opts", {}))
    provider = opts.pop("provider", None)
    master_key = opts.pop("masterKey", None)
    if opts or kwargs:
        raise TestFormatError(f"unknown rewrapManyDataKey arguments {sorted({**opts, **kwargs})}")
    obj.check_provider(provider)
    await _check_keys(ctx, obj, filter)
    result = await call_api(obj.client_encryption, "rewrap_many_data_key", filter,
                            provider=provider, master_key=master_key)
    if result.bulk_write_result is None:
        return {}
    return {"bulkWriteResult": result_document(result.bulk_write_result)}


def _key_method(method: str, *positional: str) -> Handler:
    """A key management method of AsyncClientEncryption: positional arguments in order."""
    async def handler(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
        args = [_pop(kwargs, name) for name in positional]
        if kwargs:
            raise TestFormatError(f"unknown arguments {sorted(kwargs)} for {method}")
        return result_document(await call_api(obj.client_encryption, method, *args))
    return handler


async def _get_keys(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    if kwargs:
        raise TestFormatError(f"unknown getKeys arguments {sorted(kwargs)}")
    return await to_list(await call_api(obj.client_encryption, "get_keys"))


_ENCRYPT_OPTS = {"keyId": "key_id", "keyAltName": "key_alt_name", "algorithm": "algorithm",
                 "contentionFactor": "contention_factor", "queryType": "query_type"}


async def _encrypt(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    """encrypt(value, opts): EncryptOpts as AsyncClientEncryption.encrypt's keywords
    (rangeOpts as a RangeOpts)."""
    value = _pop(kwargs, "value")
    opts = dict(_pop(kwargs, "opts"))
    args: dict[str, Any] = {}
    for key, name in _ENCRYPT_OPTS.items():
        if key in opts:
            args[name] = opts.pop(key)
    if "rangeOpts" in opts:
        from asyncmongo.encryption import RangeOpts

        range_opts = {snake_case(k): v for k, v in opts.pop("rangeOpts").items()}
        args["range_opts"] = RangeOpts(**range_opts)
    if opts or kwargs:
        raise TestFormatError(f"unknown encrypt arguments {sorted({**opts, **kwargs})}")
    if "key_id" in args:
        await _check_keys(ctx, obj, {"_id": args["key_id"]})
    elif "key_alt_name" in args:
        await _check_keys(ctx, obj, {"keyAltNames": args["key_alt_name"]})
    return await call_api(obj.client_encryption, "encrypt", value, **args)


async def _decrypt(ctx: OperationContext, obj: Any, kwargs: dict[str, Any]) -> Any:
    """decrypt(value); a CSFLE payload (blob subtype 1 or 2) names its data key in bytes
    1-16, whose provider must be available."""
    from asyncmongo.bson import Binary

    value = _pop(kwargs, "value")
    if kwargs:
        raise TestFormatError(f"unknown decrypt arguments {sorted(kwargs)}")
    if isinstance(value, Binary) and value.subtype == 6 and len(value) > 17 \
            and value[0] in (1, 2):
        await _check_keys(ctx, obj, {"_id": Binary(bytes(value[1:17]), 4)})
    return await call_api(obj.client_encryption, "decrypt", value)


for _name, _handler in {
    "createDataKey": _create_data_key,
    "rewrapManyDataKey": _rewrap_many_data_key,
    "deleteKey": _key_method("delete_key", "id"),
    "getKey": _key_method("get_key", "id"),
    "getKeys": _get_keys,
    "getKeyByAltName": _key_method("get_key_by_alt_name", "key_alt_name"),
    "addKeyAltName": _key_method("add_key_alt_name", "id", "key_alt_name"),
    "removeKeyAltName": _key_method("remove_key_alt_name", "id", "key_alt_name"),
    "encrypt": _encrypt,
    "decrypt": _decrypt,
}.items():
    _register(("clientEncryption",), _name, _handler)


def find_handler(kind: str, name: str) -> Handler:
    """The handler for ``name`` on an entity of ``kind`` (UnknownOperation if none)."""
    handler = OPERATIONS.get((kind, name))
    if handler is None:
        raise UnknownOperation(f"operation {name!r} is not defined for a {kind} entity")
    return handler


__all__ += ["find_handler", "session_options", "to_list", "transaction_options"]
