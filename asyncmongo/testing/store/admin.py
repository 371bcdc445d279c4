"""Catalog commands: create, drop, dropDatabase, listCollections, listDatabases,
createIndexes, listIndexes, dropIndexes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson import Int64
from asyncmongo.testing.store import index_changes, timeseries, views
from asyncmongo.testing.store.collection import ID_INDEX_NAME, Collection, make_index
from asyncmongo.testing.store.compare import integral
from asyncmongo.testing.store.context import (
    CommandContext,
    collection_name,
    optional_document,
    optional_int,
    require_list,
)
from asyncmongo.testing.store.encrypted_fields import check_encrypted_fields_option
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.known_fields import CREATE_FIELDS, check_fields
from asyncmongo.testing.store.matcher import compile_filter
from asyncmongo.testing.store.update import strict_key
from asyncmongo.testing.store.validation import check_validator_options

Reply = dict[str, Any]
_CREATE_IGNORED = frozenset({"create", "lsid", "txnNumber", "autocommit", "startTransaction",
                             "writeConcern", "$db", "$clusterTime", "$readPreference",
                             "apiVersion", "apiStrict", "apiDeprecationErrors", "comment",
                             "maxTimeMS", "readConcern"})


def _reply(**fields: Any) -> Reply:
    return {**fields, "ok": 1.0}


def create(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "create", ctx.db_name)
    check_fields(command, CREATE_FIELDS)
    options = {k: v for k, v in command.items() if k not in _CREATE_IGNORED}
    options = _special_options(ctx.db_name, options)
    existing = ctx.namespaces.get(ctx.db_name, name)
    if existing is not None:
        if strict_key(existing.options) == strict_key(options):
            return _reply()
        raise StoreError(48, f"Collection {ctx.db_name}.{name} already exists.")
    if "viewOn" in options:
        views.check_cycle(ctx.namespaces, ctx.db_name, name, options["viewOn"])
    check_validator_options(options)
    check_encrypted_fields_option(options)
    clustered = options.get("clusteredIndex")
    if clustered is not None:
        options["clusteredIndex"] = _clustered_spec(clustered)
    collection = ctx.namespaces.create(ctx.db_name, name, options)
    if collection.is_view:
        collection.indexes.clear()  # a view has no indexes (nor documents) of its own
    if collection.is_timeseries:
        timeseries.set_up(collection)
    if clustered is not None:
        index = collection.indexes.pop(ID_INDEX_NAME)
        index.name = options["clusteredIndex"]["name"]
        index.spec = {**options["clusteredIndex"], "clustered": True}
        collection.indexes = {index.name: index, **collection.indexes}
    return _reply()


def _special_options(db_name: str, options: dict[str, Any]) -> dict[str, Any]:
    """A view's, a time series or a capped collection's create options, validated and
    completed as mongod lists them."""
    if "viewOn" in options:
        return views.view_options(db_name, options)
    if "pipeline" in options:
        raise StoreError(72, "'pipeline' requires 'viewOn' to also be specified")
    if "timeseries" in options:
        options["timeseries"] = timeseries.timeseries_options(options["timeseries"], options)
    if options.get("capped") is True:
        size = options.get("size")
        whole = integral(size) if size is not None else None
        if whole is None:
            raise StoreError(72, "the 'size' field is required when 'capped' is true")
        if whole <= 0:
            raise bad_value("size has to be a positive number")
        # mongod keeps size rounded up to a multiple of 256 and lists size and max as
        # integers (int, or long from 2^30), whatever number type the client sent
        options["size"] = _listed_integer((whole + 0xFF) & ~0xFF)
        most = integral(options["max"]) if "max" in options else None
        if most is not None:
            options["max"] = _listed_integer(most)
    return options


def _listed_integer(value: int) -> int:
    """An integer as mongod's ``appendNumber`` writes it: an int below 2^30, else a long."""
    return value if abs(value) < 1 << 30 else Int64(value)


_COLL_MOD_OPTIONS = frozenset({"validator", "validationLevel", "validationAction",
                               "expireAfterSeconds", "changeStreamPreAndPostImages"})


def coll_mod(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    """collMod: change a collection's validation options (others are refused clearly)."""
    name = collection_name(command, "collMod", ctx.db_name)
    collection = ctx.namespaces.get(ctx.db_name, name)
    if collection is None:
        raise StoreError(26, f"ns does not exist: {ctx.db_name}.{name}")
    changes = {k: v for k, v in command.items() if k not in _CREATE_IGNORED and k != "collMod"}
    index_spec = changes.pop("index", None)
    for key in changes:
        if key not in _COLL_MOD_OPTIONS:
            raise bad_value(f"collMod option '{key}' is not supported by the asyncmongo store")
    options = {**collection.options, **changes}
    check_validator_options(options)
    reply = {} if index_spec is None else index_changes.modify_index(collection, index_spec)
    collection.options = options
    return _reply(**reply)


def _clustered_spec(spec: Any) -> dict[str, Any]:
    """A clustered collection's index option as the server lists it (``v`` added)."""
    if not isinstance(spec, Mapping) or dict(spec.get("key", {})) != {"_id": 1} or (
            spec.get("unique") is not True):
        raise bad_value("The clusteredIndex option requires key: {_id: 1} and unique: true")
    listed = {"v": 2, **spec}
    listed.setdefault("name", "_id_")
    return listed


def drop(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "drop", ctx.db_name)
    dropped = ctx.namespaces.drop(ctx.db_name, name)
    ctx.cursors.kill_namespace(f"{ctx.db_name}.{name}")
    if dropped is None:
        return _reply()
    return _reply(nIndexesWas=len(dropped.indexes), ns=f"{ctx.db_name}.{name}")


def _collection_info(collection: Collection) -> dict[str, Any]:
    if collection.is_view:
        return views.view_info(collection)
    if collection.is_timeseries:
        return timeseries.timeseries_info(collection)
    info: dict[str, Any] = {
        "name": collection.name,
        "type": "collection",
        "options": dict(collection.options),
        "info": {"readOnly": False, "uuid": collection.uuid},
    }
    if "clusteredIndex" not in collection.options:
        info["idIndex"] = {"v": 2, "key": {"_id": 1}, "name": ID_INDEX_NAME}
    return info


def list_collections(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    predicate = compile_filter(optional_document(command, "filter"))
    name_only = bool(command.get("nameOnly", False))
    entries = []
    for name in ctx.namespaces.names(ctx.db_name):
        collection = ctx.namespaces.get(ctx.db_name, name)
        if collection is None:
            continue
        info = _collection_info(collection)
        if predicate(info):
            entries.append({"name": name, "type": info["type"]} if name_only else info)
    batch_size = optional_int(optional_document(command, "cursor") or {}, "batchSize")
    cursor = ctx.cursors.first_batch(f"{ctx.db_name}.$cmd.listCollections", entries,
                                     batch_size, lsid_key=ctx.lsid_key)
    return _reply(cursor=cursor)


def list_databases(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    predicate = compile_filter(optional_document(command, "filter"))
    name_only = bool(command.get("nameOnly", False))
    databases = []
    for name in ctx.namespaces.database_names():
        entry: dict[str, Any] = {"name": name, "sizeOnDisk": 8192, "empty": False}
        if predicate(entry):
            databases.append({"name": name} if name_only else entry)
    if name_only:
        return _reply(databases=databases)
    return _reply(databases=databases, totalSize=8192 * len(databases),
                  totalSizeMb=len(databases) // 128)


def create_indexes(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "createIndexes", ctx.db_name)
    specs = require_list(command, "indexes")
    if not specs:
        raise bad_value("Must specify at least one index to create")
    existing = ctx.namespaces.get(ctx.db_name, name)
    collection = existing if existing is not None else ctx.namespaces.create(ctx.db_name, name, {})
    before = len(collection.indexes)
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise StoreError(14, "index specification must be an object")
        index = make_index(spec)
        current = collection.indexes.get(index.name)
        same_key = next((i for i in collection.indexes.values()
                         if strict_key(i.key) == strict_key(index.key)), None)
        if current is not None:
            if strict_key(current.key) != strict_key(index.key):
                raise StoreError(86, "An existing index has the same name as the requested "
                                     f"index. Requested index: {index.spec}, existing index: "
                                     f"{current.spec}")
            if _compared_options(current.spec) != _compared_options(index.spec):
                raise StoreError(85, "An existing index has the same name as the requested "
                                     f"index but different options. Requested index: "
                                     f"{index.spec}, existing index: {current.spec}")
            continue
        text = next((i for i in collection.indexes.values() if "_fts" in i.key), None)
        if text is not None and "_fts" in index.key and same_key is None and current is None:
            raise StoreError(67, "only one text index per collection allowed, found existing "
                                 f"text index \"{text.name}\"")
        if same_key is not None and same_key is collection.id_index and _options(
                index.spec) == _options(same_key.spec):
            continue  # the _id index under another name: mongod reports it as existing
        if same_key is not None:
            if same_key.unique != index.unique:
                raise StoreError(86, "An existing index has the same key pattern as the "
                                     f"requested index but different options: {same_key.name}")
            raise StoreError(85, f"Index already exists with a different name: {same_key.name}")
        collection.add_index(index)
    reply: Reply = {"numIndexesBefore": before, "numIndexesAfter": len(collection.indexes),
                    "createdCollectionAutomatically": existing is None}
    if before == len(collection.indexes):
        reply["note"] = "all indexes already exist"
    return _reply(**reply)


#: The options mongod compares when an index of the same name and key is requested again
#: (others, such as the deprecated ``background``, do not make the index different).
_COMPARED_OPTIONS = ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds",
                     "collation", "weights", "default_language", "language_override")


def _compared_options(spec: Mapping[str, Any]) -> dict[str, Any]:
    options = {k: strict_key(spec[k]) for k in _COMPARED_OPTIONS if k in spec}
    for flag in ("unique", "sparse"):
        if options.get(flag) == strict_key(False):
            del options[flag]
    return options


def _options(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in ("v", "key", "name", "ns")}


def list_indexes(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "listIndexes", ctx.db_name)
    collection = ctx.namespaces.get(ctx.db_name, name)
    if collection is None:
        raise StoreError(26, f"ns does not exist: {ctx.db_name}.{name}")
    entries = [dict(index.spec) for index in collection.indexes.values()]
    batch_size = optional_int(optional_document(command, "cursor") or {}, "batchSize")
    cursor = ctx.cursors.first_batch(f"{ctx.db_name}.{name}", entries, batch_size,
                                     lsid_key=ctx.lsid_key)
    return _reply(cursor=cursor)


def drop_indexes(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "dropIndexes", ctx.db_name)
    collection = ctx.namespaces.get(ctx.db_name, name)
    if collection is None:
        raise StoreError(26, f"ns not found {ctx.db_name}.{name}")
    before = len(collection.indexes)
    target = command.get("index")
    for index_name in _indexes_to_drop(collection, target):
        del collection.indexes[index_name]
    return _reply(nIndexesWas=before)


def _indexes_to_drop(collection: Collection, target: Any) -> list[str]:
    if target == "*":
        return [n for n in collection.indexes if n != collection.id_index.name]
    names = target if isinstance(target, list) else [target]
    found = []
    for item in names:
        if isinstance(item, Mapping):
            match = next((i.name for i in collection.indexes.values()
                          if strict_key(i.key) == strict_key(dict(item))), None)
            if match is None:
                raise StoreError(27, f"can't find index with key: {dict(item)}")
            item = match
        if not isinstance(item, str):
            raise StoreError(14, "dropIndexes 'index' must be a string, object or array")
        if item == collection.id_index.name:
            raise StoreError(72, "cannot drop _id index")
        if item not in collection.indexes:
            raise StoreError(27, f"index not found with name [{item}]")
        found.append(item)
    return found
