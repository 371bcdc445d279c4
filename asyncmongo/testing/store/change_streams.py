"""The ``$changeStream`` aggregation stage and its cursors, as mongod 8.0 runs them.

``aggregate`` whose first stage is ``$changeStream`` opens a cursor on the change log
(store/change_events.py) for one collection, one database (``aggregate: 1``) or the whole
cluster (``aggregate: 1`` on admin with ``allChangesForCluster``). Its batches are the
change events after its position, shaped as mongod shapes them (``_id`` resume token,
``operationType``, ``clusterTime``, ``wallTime``, ``ns``, ``documentKey``, ``fullDocument``,
``updateDescription``...), through the rest of the pipeline; every reply carries the
``postBatchResumeToken``. A drop or rename of the watched collection (a dropDatabase for a
database stream) is followed by an ``invalidate`` event that closes the cursor.

getMore on such a cursor is awaitData: an empty batch makes the server front end wait (up
to the getMore's maxTimeMS) for new events. Errors as on mongod: a pipeline that changes the
``_id`` 280 ChangeStreamFatalError (NonResumableChangeStreamError), resumeAfter an
invalidate 260, a resume point older than the log 286 ChangeStreamHistoryLost, a required
pre- or post-image that is not there 47 NoMatchingDocument. (A standalone's 40573 is the
server front end's: the store does not know its role.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson.types import Int64, Timestamp
from asyncmongo.testing.store.aggregate import PipelineContext, compile_pipeline, run_pipeline
from asyncmongo.testing.store.change_events import (
    EVENT,
    HIGH_WATER_MARK,
    INVALIDATE,
    ChangeEvent,
    ChangeLog,
    Position,
    decode_token,
    encode_token,
)
from asyncmongo.testing.store.collection import id_key
from asyncmongo.testing.store.context import CommandContext, optional_int
from asyncmongo.testing.store.cursors import DEFAULT_FIRST_BATCH, Cursor
from asyncmongo.testing.store.database import check_collection_name
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.values import deep_copy, same_bson

Document = dict[str, Any]
Path = list[str | int]

STAGE = "$changeStream"
_OPTIONS = frozenset({"fullDocument", "fullDocumentBeforeChange", "resumeAfter", "startAfter",
                      "startAtOperationTime", "showExpandedEvents", "allChangesForCluster",
                      "showSystemEvents", "showRawUpdateDescription"})
_FULL_DOCUMENT = frozenset({"default", "updateLookup", "whenAvailable", "required"})
_BEFORE_CHANGE = frozenset({"off", "whenAvailable", "required"})
_INTERNAL_DATABASES = frozenset({"admin", "config", "local"})
NON_RESUMABLE = "NonResumableChangeStreamError"


@dataclass(slots=True)
class StreamState:
    """What one change stream cursor watches, how it shapes events, and where it is."""

    db: str | None  # None: the whole cluster
    coll: str | None  # None: a whole database (or the cluster)
    full_document: str
    before_change: str
    expanded: bool
    pipeline: list[Any]
    position: Position
    position_time: Timestamp
    closed: bool = False
    variables: Mapping[str, Any] = field(default_factory=dict)

    def token(self) -> Document:
        return encode_token(self.position, self.position_time)

    def sees(self, event: ChangeEvent) -> bool:
        """Whether the event is in this stream's scope (before its pipeline)."""
        if self.db is None:
            in_scope = event.db not in _INTERNAL_DATABASES
        elif self.coll is None:
            in_scope = event.db == self.db
        else:
            in_scope = event.db == self.db and event.coll == self.coll
        if event.coll is not None and event.coll.startswith("system."):
            return False
        return in_scope and (self.expanded or not event.expanded)

    def invalidated_by(self, event: ChangeEvent) -> bool:
        """A drop or rename of the watched collection, a dropDatabase of the watched
        database, ends the stream with an invalidate."""
        if self.db is None or event.db != self.db:
            return False
        if self.coll is None:
            return event.operation_type == "dropDatabase"
        return event.coll == self.coll and event.operation_type in ("drop", "rename")


def is_change_stream(command: Mapping[str, Any]) -> bool:
    """An aggregate whose first stage is ``$changeStream``."""
    pipeline = command.get("pipeline")
    return (isinstance(pipeline, list) and bool(pipeline) and isinstance(pipeline[0], Mapping)
            and STAGE in pipeline[0])


def open_stream(ctx: CommandContext, command: Mapping[str, Any], log: ChangeLog) -> Document:
    """``aggregate`` with ``$changeStream``: the cursor and its first batch."""
    if ctx.in_transaction:
        raise StoreError(263, "Operation not permitted in transaction :: caused by :: "
                              "$changeStream cannot run in a multi-document transaction")
    pipeline = command["pipeline"]
    spec = pipeline[0][STAGE]
    if not isinstance(spec, Mapping):
        raise StoreError(50808, "$changeStream stage expects a document as argument")
    for key in spec:
        if key not in _OPTIONS:
            raise StoreError(40415, f"BSON field '$changeStream.{key}' is an unknown field.")
    for stage in pipeline[1:]:
        if isinstance(stage, Mapping) and STAGE in stage:
            raise StoreError(40602, "$changeStream is only valid as the first stage in a "
                                    "pipeline.")
    db, coll, namespace = _scope(ctx.db_name, command, spec)
    rest = list(pipeline[1:])
    compile_pipeline(rest, PipelineContext(ctx.db_name, ctx.namespaces))
    state = StreamState(db, coll, _choice(spec, "fullDocument", "default", _FULL_DOCUMENT),
                        _choice(spec, "fullDocumentBeforeChange", "off", _BEFORE_CHANGE),
                        spec.get("showExpandedEvents") is True, rest, (log.head, HIGH_WATER_MARK),
                        log.now())
    _start_position(state, spec, log)
    cursor_options = command.get("cursor")
    batch_size = optional_int(cursor_options, "batchSize") if isinstance(
        cursor_options, Mapping) else None
    cursor = Cursor(0, namespace, [], lsid_key=ctx.lsid_key, stream=state)
    cursor_id = ctx.cursors.register(cursor)
    limit = DEFAULT_FIRST_BATCH if batch_size is None else batch_size
    batch = _batch(cursor, ctx, log, limit)
    return _reply(ctx, cursor, "firstBatch", batch, cursor_id)


def get_more(ctx: CommandContext, command: Mapping[str, Any], cursor: Cursor,
             log: ChangeLog) -> Document:
    """getMore on a change stream cursor: the events since its last batch."""
    batch = _batch(cursor, ctx, log, optional_int(command, "batchSize"))
    return _reply(ctx, cursor, "nextBatch", batch, cursor.cursor_id)


def _reply(ctx: CommandContext, cursor: Cursor, key: str, batch: list[Document],
           cursor_id: int) -> Document:
    state: StreamState = cursor.stream
    if state.closed:
        ctx.cursors.cursors.pop(cursor.cursor_id, None)
        cursor_id = 0
    return {"cursor": {key: batch, "postBatchResumeToken": state.token(),
                       "id": Int64(cursor_id), "ns": cursor.namespace}, "ok": 1.0}


def _scope(db_name: str, command: Mapping[str, Any], spec: Mapping[str, Any]
           ) -> tuple[str | None, str | None, str]:
    """(database, collection, cursor namespace) a change stream watches."""
    target = command["aggregate"]
    every = spec.get("allChangesForCluster") is True
    if target == 1 and not isinstance(target, bool):
        if db_name == "admin":
            if not every:
                raise StoreError(73, "$changeStream may not be opened on the internal admin "
                                     "database")
            return None, None, "admin.$cmd.aggregate"
        if every:
            raise StoreError(31123, "A $changeStream with 'allChangesForCluster:true' may "
                                    "only be opened on the 'admin' database")
        if db_name in _INTERNAL_DATABASES:
            raise StoreError(73, f"$changeStream may not be opened on the internal {db_name} "
                                 "database")
        return db_name, None, f"{db_name}.$cmd.aggregate"
    if not isinstance(target, str):
        raise StoreError(73, f"collection name has invalid type {type(target).__name__}")
    name = check_collection_name(db_name, target)
    if every:
        raise StoreError(31123, "A $changeStream with 'allChangesForCluster:true' may only "
                                "be opened on the 'admin' database, and with no collection "
                                "name")
    if db_name in _INTERNAL_DATABASES or name.startswith("system."):
        raise StoreError(73, f"$changeStream may not be opened on the internal "
                             f"{db_name}.{name} collection")
    return db_name, name, f"{db_name}.{name}"


def _choice(spec: Mapping[str, Any], name: str, default: str, allowed: frozenset[str]) -> str:
    value = spec.get(name, default)
    if not isinstance(value, str):
        raise StoreError(14, f"BSON field '$changeStream.{name}' is the wrong type, expected "
                             "type 'string'")
    if value not in allowed:
        raise bad_value(f"'{value}' is not a valid value for $changeStream.{name}")
    return value


def _start_position(state: StreamState, spec: Mapping[str, Any], log: ChangeLog) -> None:
    """Where the stream starts: resumeAfter / startAfter a token, at an operation time, or
    now (mongod refuses more than one of them, 40674)."""
    given = [k for k in ("resumeAfter", "startAfter", "startAtOperationTime") if k in spec]
    if len(given) > 1:
        raise StoreError(40674, "Only one type of resume option is allowed, but multiple "
                                "were found.")
    if not given:
        return
    if given[0] == "startAtOperationTime":
        at = spec["startAtOperationTime"]
        if not isinstance(at, Timestamp):
            raise StoreError(14, "BSON field '$changeStream.startAtOperationTime' is the "
                                 "wrong type, expected type 'timestamp'")
        state.position = (log.seq_before(at), HIGH_WATER_MARK)
        state.position_time = at
        return
    position = decode_token(spec[given[0]])
    if given[0] == "resumeAfter" and position[1] == INVALIDATE:
        raise StoreError(260, "Attempting to resume a change stream using 'resumeAfter' is "
                              "not allowed from an invalidate notification.")
    if position[0] < log.oldest - 1:
        raise StoreError(286, "Resume of change stream was not possible, as the resume point "
                              "may no longer be in the oplog.")
    state.position = position
    token_data = spec[given[0]]["_data"]
    state.position_time = Timestamp(int(token_data[2:10], 16), int(token_data[10:18], 16))


def _batch(cursor: Cursor, ctx: CommandContext, log: ChangeLog,
           limit: int | None) -> list[Document]:
    """The next events of the stream (up to ``limit``; None: all there are)."""
    state: StreamState = cursor.stream
    batch: list[Document] = []
    if state.closed or limit == 0:
        return batch
    try:
        for event in log.after(state.position[0] - 1):
            for kind in (EVENT, INVALIDATE):
                if (event.seq, kind) <= state.position:
                    continue
                if kind == INVALIDATE and not state.invalidated_by(event):
                    continue
                if limit is not None and len(batch) >= limit:
                    return batch
                batch.extend(_shaped(state, event, kind, ctx))
                state.position, state.position_time = (event.seq, kind), event.cluster_time
                if kind == INVALIDATE:
                    state.closed = True
                    return batch
    except StoreError:
        ctx.cursors.cursors.pop(cursor.cursor_id, None)  # mongod kills the failed cursor
        raise
    return batch  # the position is the last entry scanned: its token is the batch's


def _shaped(state: StreamState, event: ChangeEvent, kind: int,
            ctx: CommandContext) -> list[Document]:
    """The event as this stream returns it, through the stream's pipeline (none when out of
    scope or filtered out)."""
    if kind == INVALIDATE:
        document: Document = {"_id": encode_token((event.seq, INVALIDATE), event.cluster_time),
                              "operationType": "invalidate", "clusterTime": event.cluster_time,
                              "wallTime": event.wall_time}
    elif state.sees(event):
        document = render(state, event, ctx)
    else:
        return []
    if not state.pipeline:
        return [document]
    results = run_pipeline([document], state.pipeline,
                           PipelineContext(ctx.db_name, ctx.namespaces, state.variables))
    for result in results:
        if not same_bson(result.get("_id"), document["_id"]):
            raise StoreError(280, "Encountered an event whose _id field, which contains the "
                                  "resume token, was modified by the pipeline. Modifying the "
                                  "_id field of an event makes it impossible to resume the "
                                  "stream from that point. Only transformations that retain "
                                  "the unmodified _id field are allowed.",
                             labels=(NON_RESUMABLE,))
    return results


def render(state: StreamState, event: ChangeEvent, ctx: CommandContext) -> Document:
    """One change event document, with the fields mongod 8.0 gives its type."""
    kind = event.operation_type
    document: Document = {"_id": encode_token((event.seq, EVENT), event.cluster_time),
                          "operationType": kind, "clusterTime": event.cluster_time,
                          "wallTime": event.wall_time}
    if state.expanded and event.uuid is not None:
        document["collectionUUID"] = event.uuid
    if kind == "insert":
        document["fullDocument"] = deep_copy(event.full_document)
    document["ns"] = {"db": event.db} if event.coll is None else {"db": event.db,
                                                                  "coll": event.coll}
    if event.document_key is not None:
        document["documentKey"] = deep_copy(event.document_key)
    if kind == "update":
        document["updateDescription"] = update_description(
            event.before or {}, event.full_document or {}, state.expanded)
        full = _post_image(state, event, ctx)
        if full is not _ABSENT:
            document["fullDocument"] = full
    elif kind == "replace":
        document["fullDocument"] = deep_copy(event.full_document)
    if kind in ("update", "replace", "delete"):
        before = _pre_image(state, event)
        if before is not _ABSENT:
            document["fullDocumentBeforeChange"] = before
    for key, value in event.extra.items():
        if key == "nsType":
            continue  # mongod 8.1+
        if key == "operationDescription" and not state.expanded:
            continue
        document[key] = deep_copy(value)
    return document


_ABSENT: Any = object()


def _post_image(state: StreamState, event: ChangeEvent, ctx: CommandContext) -> Any:
    mode = state.full_document
    if mode == "default":
        return _ABSENT
    if mode == "updateLookup":
        collection = ctx.namespaces.get(event.db, event.coll or "")
        key = (event.document_key or {}).get("_id")
        found = collection.documents.get(id_key(key)) if collection is not None else None
        return deep_copy(found) if found is not None else None
    if event.images:
        return deep_copy(event.full_document)
    if mode == "required":
        raise StoreError(47, "Change stream was configured to require a post-image for all "
                             "update, delete and replace events, but the post-image was not "
                             f"found for event: {event.operation_type} on "
                             f"{event.db}.{event.coll}")
    return None


def _pre_image(state: StreamState, event: ChangeEvent) -> Any:
    mode = state.before_change
    if mode == "off":
        return _ABSENT
    if event.images:
        return deep_copy(event.before)
    if mode == "required":
        raise StoreError(47, "Change stream was configured to require a pre-image for all "
                             "update, delete and replace events, but the pre-image was not "
                             f"found for event: {event.operation_type} on "
                             f"{event.db}.{event.coll}")
    return None


def update_description(old: Document, new: Document, expanded: bool) -> Document:
    """``updateDescription`` as mongod's document diff reports it: updated fields (dotted
    paths), removed fields, truncated arrays, and with showExpandedEvents the
    ``disambiguatedPaths`` of paths with numeric components."""
    updated: dict[str, Any] = {}
    removed: list[str] = []
    truncated: list[Document] = []
    paths: list[Path] = []
    _diff_document(old, new, [], updated, removed, truncated, paths)
    description: Document = {"updatedFields": updated, "removedFields": removed,
                             "truncatedArrays": truncated}
    if expanded:
        description["disambiguatedPaths"] = {
            _dotted(path): path for path in paths
            if any(isinstance(p, int) or p.isdigit() for p in path)}
    return description


def _dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)


def _diff_document(old: Mapping[str, Any], new: Mapping[str, Any], prefix: Path,
                   updated: dict[str, Any], removed: list[str], truncated: list[Document],
                   paths: list[Path]) -> None:
    for key, value in new.items():
        path = [*prefix, key]
        _diff_value(old.get(key, _ABSENT), value, path, updated, removed, truncated, paths)
    for key in old:
        if key not in new:
            removed.append(_dotted([*prefix, key]))
            paths.append([*prefix, key])


def _diff_value(before: Any, after: Any, path: Path, updated: dict[str, Any],
                removed: list[str], truncated: list[Document], paths: list[Path]) -> None:
    if before is not _ABSENT and same_bson(before, after):
        return
    if isinstance(before, dict) and isinstance(after, dict):
        _diff_document(before, after, path, updated, removed, truncated, paths)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index, item in enumerate(after):
            element: Any = before[index] if index < len(before) else _ABSENT
            _diff_value(element, item, [*path, index], updated, removed, truncated, paths)
        if len(after) < len(before):
            truncated.append({"field": _dotted(path), "newSize": len(after)})
            paths.append(path)
        return
    updated[_dotted(path)] = deep_copy(after)
    paths.append(path)


def record_ddl(log: ChangeLog, name: str, ctx: CommandContext, command: Mapping[str, Any],
               before: Mapping[str, Any] | None) -> None:
    """The expanded events of a successful createIndexes, dropIndexes or collMod
    (``before``: the collection's index specs before the command)."""
    target = command.get(name)
    if not isinstance(target, str):
        return
    collection = ctx.namespaces.get(ctx.db_name, target)
    uuid = collection.uuid if collection is not None else None
    if name == "createIndexes":
        wanted = command.get("indexes")
        specs = [dict(s) for s in wanted if isinstance(s, Mapping)] if isinstance(
            wanted, list) else []
        listed = [dict(collection.indexes[s["name"]].spec) for s in specs
                  if collection is not None and s.get("name") in collection.indexes]
        if listed and before is not None and all(s["name"] in before for s in listed):
            return  # nothing new: mongod writes no oplog entry
        log.record("createIndexes", ctx.db_name, target, uuid=uuid,
                   extra={"operationDescription": {"indexes": listed}})
    elif name in ("dropIndexes", "deleteIndexes"):
        now = set(collection.indexes) if collection is not None else set()
        for index_name, spec in (before or {}).items():
            if index_name not in now:
                log.record("dropIndexes", ctx.db_name, target, uuid=uuid,
                           extra={"operationDescription": {"indexes": [dict(spec)]}})
    elif name == "collMod":
        changes = {k: v for k, v in command.items()
                   if k != "collMod" and not k.startswith("$") and k not in (
                       "lsid", "txnNumber", "writeConcern", "comment", "apiVersion",
                       "apiStrict", "apiDeprecationErrors")}
        log.record("modify", ctx.db_name, target, uuid=uuid,
                   extra={"operationDescription": changes})
