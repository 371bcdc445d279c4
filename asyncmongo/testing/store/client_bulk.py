"""MongoDB 8.0's ``bulkWrite`` admin command (the client bulk write): one command, many
namespaces.

``ops`` are ``{insert: i, document}``, ``{update: i, filter, updateMods, multi, upsert,
arrayFilters, hint, collation, sort}`` and ``{delete: i, filter, multi, hint, collation}``,
where ``i`` indexes ``nsInfo`` (``[{ns: "db.coll"}]``). Each op runs as a one-statement
insert/update/delete of :mod:`~asyncmongo.testing.store.crud` (so the semantics are theirs),
and its outcome becomes one entry of a cursor on ``admin.$cmd.bulkWrite``: ``{ok: 1, idx, n,
nModified, upserted}`` or ``{ok: 0, idx, code, codeName, errmsg, errInfo}``; with
``errorsOnly`` only the failures. ``ordered`` (the default) stops at the first failure. The
reply totals ``nErrors``, ``nInserted``, ``nMatched``, ``nModified``, ``nUpserted`` and
``nDeleted``; write concern errors are added by the server front end, as for any write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store import crud
from asyncmongo.testing.store.context import CommandContext, optional_document, optional_int
from asyncmongo.testing.store.database import check_database_name
from asyncmongo.testing.store.errors import CODE_NAMES, StoreError, bad_value

Reply = dict[str, Any]

#: The cursor namespace mongod gives the per-operation results.
RESULTS_NAMESPACE = "admin.$cmd.bulkWrite"
#: Command-level options each one-statement write inherits.
_INHERITED = ("let", "bypassDocumentValidation")
_TOTALS = ("nInserted", "nMatched", "nModified", "nUpserted", "nDeleted")


def bulk_write(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    """Run ``bulkWrite`` (admin only) and reply with the totals and the results cursor."""
    if ctx.db_name != "admin":
        raise StoreError(13, "bulkWrite may only be run against the admin database.")
    namespaces = _namespaces(command.get("nsInfo"))
    ops = command.get("ops")
    if not isinstance(ops, list):
        raise bad_value("BSON field 'bulkWrite.ops' is missing or not an array")
    ordered = command.get("ordered", True) is not False
    totals = dict.fromkeys(_TOTALS, 0)
    results: list[Reply] = []
    errors = 0
    for index, op in enumerate(ops):
        entry = _run_op(ctx, command, namespaces, index, op, totals)
        if not entry["ok"]:
            errors += 1
        if not entry["ok"] or not command.get("errorsOnly"):
            results.append(entry)
        if not entry["ok"] and ordered:
            break
    cursor_options = optional_document(command, "cursor") or {}
    cursor = ctx.cursors.first_batch(RESULTS_NAMESPACE, results,
                                     optional_int(cursor_options, "batchSize"),
                                     lsid_key=ctx.lsid_key)
    return {"cursor": cursor, "nErrors": errors, **totals, "ok": 1.0}


def _namespaces(ns_info: Any) -> list[tuple[str, str]]:
    if not isinstance(ns_info, list) or not ns_info:
        raise bad_value("BSON field 'bulkWrite.nsInfo' is missing or empty")
    found = []
    for entry in ns_info:
        ns = entry.get("ns") if isinstance(entry, Mapping) else None
        if not isinstance(ns, str) or "." not in ns:
            raise StoreError(73, f"Invalid namespace specified '{ns}'")
        db_name, _, collection = ns.partition(".")
        check_database_name(db_name)
        found.append((db_name, collection))
    return found


def _run_op(ctx: CommandContext, command: Mapping[str, Any],
            namespaces: list[tuple[str, str]], index: int, op: Any,
            totals: dict[str, int]) -> Reply:
    """One op as a one-statement write; its results entry (ok 0 on failure)."""
    try:
        kind, write = _as_write(op, namespaces, command)
        db_name = namespaces[op[kind]][0]
        reply = _HANDLERS[kind](dataclasses.replace(ctx, db_name=db_name), write)
    except StoreError as exc:
        if exc.code in (112, 251):
            raise
        return _error_entry(exc.to_write_error(index), index)
    if reply.get("writeErrors"):
        return _error_entry(reply["writeErrors"][0], index)
    return _count(kind, reply, index, totals)


def _as_write(op: Any, namespaces: list[tuple[str, str]], command: Mapping[str, Any]
              ) -> tuple[str, Reply]:
    """The op's kind and the equivalent insert/update/delete command document."""
    kind = next(iter(op), None) if isinstance(op, Mapping) else None
    if kind not in _HANDLERS:
        raise StoreError(40415, f"Unrecognized bulkWrite operation: {kind!r}")
    assert isinstance(op, Mapping)
    position = op[kind]
    if isinstance(position, bool) or not isinstance(position, int) or not (
            0 <= position < len(namespaces)):
        raise bad_value(f"BulkWrite {kind} namespace index {position!r} is out of range")
    base: Reply = {kind: namespaces[position][1], "ordered": True,
                   **{key: command[key] for key in _INHERITED if key in command}}
    if kind == "insert":
        return kind, {**base, "documents": [op.get("document")]}
    if "filter" not in op:
        raise StoreError(40414, f"BSON field 'bulkWrite.ops.{kind}.filter' is missing but a "
                                "required field")
    options = {key: op[key] for key in ("collation", "hint", "arrayFilters", "sort", "upsert")
               if key in op}
    if kind == "update":
        if "updateMods" not in op:
            raise StoreError(40414, "BSON field 'bulkWrite.ops.update.updateMods' is missing "
                                    "but a required field")
        statement = {"q": op["filter"], "u": op["updateMods"],
                     "multi": bool(op.get("multi", False)), **options}
        return kind, {**base, "updates": [statement]}
    statement = {"q": op["filter"], "limit": 0 if op.get("multi") else 1, **options}
    return kind, {**base, "deletes": [statement]}


def _count(kind: str, reply: Reply, index: int, totals: dict[str, int]) -> Reply:
    entry: Reply = {"ok": 1.0, "idx": index, "n": reply["n"]}
    if kind == "insert":
        totals["nInserted"] += reply["n"]
    elif kind == "delete":
        totals["nDeleted"] += reply["n"]
    else:
        upserted = reply.get("upserted") or []
        totals["nUpserted"] += len(upserted)
        totals["nMatched"] += reply["n"] - len(upserted)
        totals["nModified"] += reply["nModified"]
        entry["nModified"] = reply["nModified"]
        if upserted:
            entry["upserted"] = {"_id": upserted[0]["_id"]}
    return entry


def _error_entry(write_error: Mapping[str, Any], index: int) -> Reply:
    """A results entry from a ``writeErrors`` entry (``index`` becomes ``idx``)."""
    entry: Reply = {"ok": 0.0, "idx": index, "code": write_error["code"]}
    code = write_error["code"]
    entry["codeName"] = write_error.get("codeName") or CODE_NAMES.get(code, f"Location{code}")
    entry.update({k: v for k, v in write_error.items() if k not in ("index", "code",
                                                                      "codeName")})
    return entry


_HANDLERS = {"insert": crud.insert, "update": crud.update, "delete": crud.delete}
