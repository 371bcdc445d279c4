"""A small unified-test-format runner that talks to the store directly (no driver, no server).

Each operation becomes the command a driver would send (``insertOne`` -> ``insert``,
``countDocuments`` -> ``aggregate`` with ``$group``, ``bulkWrite`` -> one command per request,
session operations -> ``lsid``/``txnNumber``/``autocommit``/``startTransaction`` fields and
``commitTransaction``/``abortTransaction``, with the driver's transaction state machine). It
checks what the server decides: outcomes, results and server errors (codes, names, labels).
Driver-only behaviour (client-side validation, command monitoring, failpoints, pinning to
mongos) is skipped with that reason. The store plays MongoDB 8.0.
"""


from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.bson import json_util
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import Store
from asyncmongo.testing.store.compare import compare, is_number, type_name

SPEC_DATA = Path(__file__).resolve().parents[2] / "spec_tests" / "data"
STORE_VERSION = (8, 0, 0)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))[:3]


def _unmet(requirements: list[dict[str, Any]] | None) -> str | None:
    """Why none of the requirements fit the store, or None if one does."""
    if not requirements:
        return None
    reasons = []
    for req in requirements:
        if "minServerVersion" in req and _version(req["minServerVersion"]) > STORE_VERSION:
            reasons.append(f"needs server >= {req['minServerVersion']} (the store plays 8.0)")
        elif "maxServerVersion" in req and _version(req["maxServerVersion"]) < STORE_VERSION:
            reasons.append(f"tests server <= {req['maxServerVersion']} behaviour (the store "
                           "plays 8.0)")
        elif "topologies" in req and not {"single", "replicaset"} & set(req["topologies"]):
            reasons.append(f"only for {req['topologies']} topologies")
        else:
            return None
    return "; ".join(reasons)


def cases(suite: str) -> list[Any]:
    """pytest params (spec, test) for every test of every JSON file of a suite."""
    cases = []
    for path in sorted((SPEC_DATA / suite).glob("**/*.json")):
        spec = json_util.loads(path.read_text())
        for test in spec["tests"]:
            cases.append(pytest.param(spec, test, id=f"{path.stem}/{test['description']}"))
    return cases


# Arguments the store cannot honour, with the reason a case using them is skipped.
UNSUPPORTED_ARGUMENTS = {
    "rawData": "rawData is a time-series/sharding option the store does not have",
}
UNSUPPORTED_FEATURES = {
    "$listLocalSessions": "$listLocalSessions lists the server's sessions, not stored data",
    "viewOn": "the store does not implement views",
    "timeseries": "the store does not implement time-series collections",
    "prepareUnique": "collMod index conversion (prepareUnique) is not in the store",
}
_SEARCH_INDEX_REASON = (
    "search index commands run through the driver in "
    "spec_tests/test_index_management_unified.py; the store answers them as a non-Atlas "
    "mongod (31082 SearchNotEnabled) and this runner does not map them"
)

DRIVER_ONLY_OPERATIONS = {
    "clientBulkWrite": "client bulkWrite (the store's admin bulkWrite) runs through the driver "
                       "in spec_tests/test_crud_unified.py; this runner maps collection "
                       "operations only",
    "failPoint": "failpoints belong to the simulated server, not the store",
    "targetedFailPoint": "failpoints belong to the simulated server, not the store",
    "createSearchIndex": _SEARCH_INDEX_REASON,
    "createSearchIndexes": _SEARCH_INDEX_REASON,
    "listSearchIndexes": _SEARCH_INDEX_REASON,
    "updateSearchIndex": _SEARCH_INDEX_REASON,
    "dropSearchIndex": _SEARCH_INDEX_REASON,
}


SESSION_OPERATIONS = frozenset({"startTransaction", "commitTransaction", "abortTransaction",
                                "endSession"})


def skip_reason(spec: dict[str, Any], test: dict[str, Any]) -> str | None:
    """Why a case cannot run against the bare store (None if it can)."""
    reason = _unmet(spec.get("runOnRequirements")) or _unmet(test.get("runOnRequirements"))
    if reason:
        return reason
    if test.get("skipReason"):
        return test["skipReason"]
    for feature, why in UNSUPPORTED_FEATURES.items():
        if feature in str(test) or feature in str(spec.get("initialData")):
            return why
    for operation in test["operations"]:
        if operation["name"] in DRIVER_ONLY_OPERATIONS:
            return DRIVER_ONLY_OPERATIONS[operation["name"]]
        error = operation.get("expectError", {})
        if error.get("isClientError") and operation["name"] not in SESSION_OPERATIONS:
            return "tests client-side validation (the driver raises before sending)"
        arguments = _all_arguments(operation.get("arguments", {}))
        for name, why in UNSUPPORTED_ARGUMENTS.items():
            if name in arguments:
                return why
        if _unacknowledged(arguments.get("writeConcern")):
            return "unacknowledged writes are the driver's and server front end's concern"
        if _needs_replication(arguments.get("writeConcern")):
            return "write concern beyond one member is the server front end's concern"
        if "read preference in a transaction must be primary" in str(error):
            return "the driver refuses non-primary read preferences in transactions"
    for entity in spec.get("createEntities", []):
        options = entity.get("collection", {}).get("collectionOptions", {})
        if _unacknowledged(options.get("writeConcern")):
            return "unacknowledged writes are the driver's and server front end's concern"
    if "outcome" not in test and all("expectResult" not in o and "expectError" not in o
                                     for o in test["operations"]):
        return "asserts command monitoring events only (the driver's business)"
    return None


def _needs_replication(write_concern: Any) -> bool:
    w = write_concern.get("w") if isinstance(write_concern, Mapping) else None
    return isinstance(w, int) and w > 1


def _unacknowledged(write_concern: Any) -> bool:
    return isinstance(write_concern, Mapping) and write_concern.get("w") == 0


def _all_arguments(arguments: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if isinstance(arguments, Mapping):
        for key, value in arguments.items():
            found[key] = value
            found.update(_all_arguments(value))
    elif isinstance(arguments, list):
        for item in arguments:
            found.update(_all_arguments(item))
    return found


class ServerError(Exception):
    """A store reply that a driver turns into an exception."""

    def __init__(self, reply: dict[str, Any]) -> None:
        super().__init__(reply)
        self.reply = reply


class ClientError(Exception):
    """An error the driver raises itself (session state misuse)."""


RETRYABLE = frozenset({"insert", "update", "delete", "findAndModify"})


class Session:
    """The driver side of a session: lsid, txnNumber and the transaction state machine."""

    def __init__(self) -> None:
        self.lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
        self.txn_number = 0
        self.state = "none"
        self.read_concern: Any = None

    def decorate(self, command: dict[str, Any]) -> dict[str, Any]:
        """The command with this session's fields, as a driver sends it."""
        command = {**command, "lsid": self.lsid}
        name = next(iter(command))
        if self.state in ("committed", "committed_empty", "aborted"):
            self.state = "none"  # the driver: an operation after a transaction resets the state
        if self.state in ("starting", "in_progress"):
            command["txnNumber"] = Int64(self.txn_number)
            command["autocommit"] = False
            if self.state == "starting":
                command["startTransaction"] = True
                if self.read_concern:
                    command["readConcern"] = self.read_concern
                self.state = "in_progress"
        elif name in RETRYABLE:
            self.txn_number += 1
            command["txnNumber"] = Int64(self.txn_number)
        return command


class Runner:
    """Entities (databases and collections by id) over one Store."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.store = Store()
        self.sessions: dict[str, Session] = {}
        self.current: Session | None = None
        self.databases: dict[str, str] = {}
        self.clients: set[str] = set()
        self.collections: dict[str, tuple[str, str]] = {}
        self.read_concerns: dict[str, dict[str, Any]] = {}
        self.create_entities(spec.get("createEntities", []))
        for data in spec.get("initialData", []):
            db, name = data["databaseName"], data["collectionName"]
            self.command(db, {"drop": name})
            self.command(db, {"create": name, **data.get("createOptions", {})})
            if data["documents"]:
                self.command(db, {"insert": name, "documents": data["documents"]})

    def create_entities(self, entities: list[dict[str, Any]]) -> None:
        for entity in entities:
            if "session" in entity:
                self.sessions[entity["session"]["id"]] = Session()
            if "client" in entity:
                self.clients.add(entity["client"]["id"])
            if "database" in entity:
                self.databases[entity["database"]["id"]] = entity["database"]["databaseName"]
            if "collection" in entity:
                c = entity["collection"]
                self.collections[c["id"]] = (self.databases[c["database"]], c["collectionName"])
                read_concern = c.get("collectionOptions", {}).get("readConcern")
                if read_concern:
                    self.read_concerns[c["id"]] = read_concern

    def command(self, db: str, command: dict[str, Any]) -> dict[str, Any]:
        if self.current is not None:
            command = self.current.decorate(command)
        reply = self.store.handle(db, command)
        if not reply["ok"] or reply.get("writeErrors") or reply.get("writeConcernError"):
            raise ServerError(reply)
        return reply

    def cursor(self, db: str, reply: dict[str, Any], name: str) -> list[Any]:
        docs = list(reply["cursor"]["firstBatch"])
        while reply["cursor"]["id"]:
            reply = self.command(db, {"getMore": reply["cursor"]["id"], "collection": name})
            docs.extend(reply["cursor"]["nextBatch"])
        return docs

    def run(self, operation: dict[str, Any]) -> Any:
        target = operation["object"]
        arguments = dict(operation.get("arguments", {}))
        arguments.pop("comment", None)
        if target == "testRunner":
            return self._test_runner(operation["name"], arguments)
        if target in self.sessions:
            return self._session_operation(self.sessions[target], operation["name"], arguments)
        session_id = arguments.pop("session", None)
        self.current = self.sessions[session_id] if session_id else None
        try:
            return self._run_on(target, operation, arguments)
        finally:
            self.current = None

    def _session_operation(self, session: Session, op: str, arguments: dict[str, Any]) -> Any:
        if op == "startTransaction":
            if session.state in ("starting", "in_progress"):
                raise ClientError("Transaction already in progress")
            session.txn_number += 1
            session.state = "starting"
            session.read_concern = arguments.get("readConcern")
            return None
        if op == "commitTransaction":
            return self._commit(session)
        if op in ("abortTransaction", "endSession"):
            return self._abort(session, op == "endSession")
        raise AssertionError(f"unexpected session operation {op}")

    def _commit(self, session: Session) -> Any:
        if session.state == "none":
            raise ClientError("No transaction started")
        if session.state == "aborted":
            raise ClientError("Cannot call commitTransaction after calling abortTransaction")
        if session.state in ("starting", "committed_empty"):
            session.state = "committed_empty"
            return None
        reply = self.store.handle("admin", {"commitTransaction": 1, "lsid": session.lsid,
                                            "txnNumber": Int64(session.txn_number),
                                            "autocommit": False})
        session.state = "committed"
        if not reply["ok"]:
            raise ServerError(reply)
        return None

    def _abort(self, session: Session, ending: bool) -> Any:
        if session.state in ("committed", "committed_empty"):
            if ending:
                return None
            raise ClientError("Cannot call abortTransaction after calling commitTransaction")
        if session.state == "aborted" and not ending:
            raise ClientError("Cannot call abortTransaction twice")
        if session.state == "none":
            if ending:
                return None
            raise ClientError("No transaction started")
        if session.state == "in_progress":
            self.store.handle("admin", {"abortTransaction": 1, "lsid": session.lsid,
                                        "txnNumber": Int64(session.txn_number),
                                        "autocommit": False})  # errors are ignored
        session.state = "aborted"
        return None

    def _test_runner(self, op: str, a: dict[str, Any]) -> Any:
        if op == "createEntities":
            return self.create_entities(a["entities"])
        if op in ("assertSessionUnpinned", "assertSessionPinned"):
            assert op == "assertSessionUnpinned", "the store is not a mongos: nothing is pinned"
            return None
        if op == "assertSessionTransactionState":
            state = self.sessions[a["session"]].state
            assert state.replace("committed_empty", "committed") == a["state"], state
            return None
        if op in ("assertCollectionExists", "assertCollectionNotExists"):
            names = self.store.handle(a["databaseName"], {"listCollections": 1, "nameOnly": True})
            present = any(c["name"] == a["collectionName"] for c in names["cursor"][
                "firstBatch"])
            assert present == (op == "assertCollectionExists"), names
            return None
        if op in ("assertIndexExists", "assertIndexNotExists"):
            reply = self.store.handle(a["databaseName"], {"listIndexes": a["collectionName"]})
            found = reply["ok"] and any(i["name"] == a["indexName"] for i in reply["cursor"][
                "firstBatch"])
            assert bool(found) == (op == "assertIndexExists"), reply
            return None
        raise AssertionError(f"unexpected testRunner operation {op}")

    def _run_on(self, target: str, operation: dict[str, Any], arguments: dict[str, Any]) -> Any:
        if target in self.clients:
            return self._database_operation("admin", operation["name"], arguments)
        if target in self.databases:
            return self._database_operation(self.databases[target], operation["name"],
                                            arguments)
        db, name = self.collections[target]
        if target in self.read_concerns and operation["name"] == "aggregate":
            arguments["readConcern"] = self.read_concerns[target]
        return getattr(self, "_" + operation["name"])(db, name, arguments)

    def _database_operation(self, db: str, op: str, arguments: dict[str, Any]) -> Any:
        if op == "runCommand":
            return self.command(db, dict(arguments["command"]))
        if op == "listCollections":
            reply = self.command(db, {"listCollections": 1, **arguments})
            return self.cursor(db, reply, "$cmd.listCollections")
        if op == "listDatabases":
            return self.command("admin", {"listDatabases": 1, **arguments})["databases"]
        if op == "aggregate":
            options = {k: v for k, v in arguments.items() if k not in ("pipeline", "batchSize")}
            reply = self.command(db, {"aggregate": 1, "pipeline": arguments["pipeline"],
                                      "cursor": {}, **options})
            return self.cursor(db, reply, "$cmd.aggregate")
        if op == "dropCollection":
            return self.command(db, {"drop": arguments["collection"]})
        if op == "modifyCollection":
            name = arguments.pop("collection")
            return self.command(db, {"collMod": name, **arguments})
        if op == "createCollection":
            name = arguments.pop("collection")
            return self.command(db, {"create": name, **arguments})
        raise AssertionError(f"unexpected database operation {op}")

    # --- writes ---------------------------------------------------------------------------

    def _insertOne(self, db: str, name: str, a: dict[str, Any]) -> Any:
        document = a["document"]
        self.command(db, {"insert": name, "documents": [document]})
        return {"insertedId": document.get("_id")}

    def _insertMany(self, db: str, name: str, a: dict[str, Any]) -> Any:
        self.command(db, {"insert": name, "documents": a["documents"],
                          "ordered": a.get("ordered", True)})
        return {"insertedIds": {str(i): d.get("_id") for i, d in enumerate(a["documents"])}}

    @staticmethod
    def _update_spec(a: dict[str, Any], multi: bool) -> dict[str, Any]:
        update = a.get("update", a.get("replacement"))
        operators = isinstance(update, list) or (
            isinstance(update, Mapping) and bool(update) and next(iter(update)).startswith("$"))
        if ("update" in a) != operators:
            raise ClientError("update documents need operators; replacements must not have them")
        spec: dict[str, Any] = {"q": a["filter"], "u": update, "multi": multi}
        for key in ("upsert", "arrayFilters", "hint", "sort", "let", "collation"):
            if key in a:
                spec[key] = a[key]
        return spec

    def _update(self, db: str, name: str, spec: dict[str, Any]) -> Any:
        let = spec.pop("let", None)
        reply = self.command(db, {"update": name, "updates": [spec],
                                  **({"let": let} if let is not None else {})})
        upserted = reply.get("upserted", [])
        result = {"matchedCount": reply["n"] - len(upserted),
                  "modifiedCount": reply["nModified"], "upsertedCount": len(upserted)}
        if upserted:
            result["upsertedId"] = upserted[0]["_id"]
        return result

    def _updateOne(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._update(db, name, self._update_spec(a, False))

    def _updateMany(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._update(db, name, self._update_spec(a, True))

    def _replaceOne(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._update(db, name, self._update_spec(a, False))

    def _delete(self, db: str, name: str, a: dict[str, Any], limit: int) -> Any:
        spec = {"q": a["filter"], "limit": limit,
                **{k: a[k] for k in ("hint", "collation") if k in a}}
        reply = self.command(db, {"delete": name, "deletes": [spec],
                                  **({"let": a["let"]} if "let" in a else {})})
        return {"deletedCount": reply["n"]}

    def _deleteOne(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._delete(db, name, a, 1)

    def _deleteMany(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._delete(db, name, a, 0)

    def _bulkWrite(self, db: str, name: str, a: dict[str, Any]) -> Any:
        totals = {"deletedCount": 0, "insertedCount": 0, "matchedCount": 0, "modifiedCount": 0,
                  "upsertedCount": 0, "insertedIds": {}, "upsertedIds": {}}
        ordered = a.get("ordered", True)
        failure: ServerError | None = None
        for index, request in enumerate(a["requests"]):
            (kind, arguments), = request.items()
            if "let" in a:
                arguments = {**arguments, "let": a["let"]}
            try:
                self._bulk_one(db, name, kind, arguments, index, totals)
            except ServerError as exc:
                failure = failure or exc
                if ordered:
                    break
        if failure is not None:
            raise failure
        return totals

    def _bulk_one(self, db: str, name: str, kind: str, arguments: dict[str, Any], index: int,
                  totals: dict[str, Any]) -> None:
        if kind == "insertOne":
            result = self._insertOne(db, name, arguments)
            totals["insertedCount"] += 1
            totals["insertedIds"][str(index)] = result["insertedId"]
            return
        if kind in ("deleteOne", "deleteMany"):
            totals["deletedCount"] += getattr(self, "_" + kind)(db, name, arguments)[
                "deletedCount"]
            return
        result = getattr(self, "_" + kind)(db, name, arguments)
        for key in ("matchedCount", "modifiedCount", "upsertedCount"):
            totals[key] += result[key]
        if "upsertedId" in result:
            totals["upsertedIds"][str(index)] = result["upsertedId"]

    def _find_and_modify(self, db: str, name: str, a: dict[str, Any],
                         extra: dict[str, Any]) -> Any:
        command: dict[str, Any] = {"findAndModify": name, "query": a["filter"], **extra}
        for key, target in (("sort", "sort"), ("projection", "fields"), ("upsert", "upsert"),
                            ("arrayFilters", "arrayFilters"), ("hint", "hint"),
                            ("let", "let"), ("collation", "collation")):
            if key in a:
                command[target] = a[key]
        if a.get("returnDocument") == "After":
            command["new"] = True
        return self.command(db, command)["value"]

    def _findOneAndUpdate(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._find_and_modify(db, name, a, {"update": a["update"]})

    def _findOneAndReplace(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._find_and_modify(db, name, a, {"update": a["replacement"]})

    def _findOneAndDelete(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self._find_and_modify(db, name, a, {"remove": True})

    # --- reads ----------------------------------------------------------------------------

    def _find(self, db: str, name: str, a: dict[str, Any]) -> Any:
        command = {"find": name, **a}
        return self.cursor(db, self.command(db, command), name)

    def _findOne(self, db: str, name: str, a: dict[str, Any]) -> Any:
        found = self._find(db, name, {**a, "limit": -1})
        return found[0] if found else None

    def _aggregate(self, db: str, name: str, a: dict[str, Any]) -> Any:
        cursor = {"batchSize": a.pop("batchSize")} if "batchSize" in a else {}
        reply = self.command(db, {"aggregate": name, "pipeline": a.pop("pipeline"),
                                  "cursor": cursor, **a})
        return self.cursor(db, reply, name)

    def _countDocuments(self, db: str, name: str, a: dict[str, Any]) -> Any:
        pipeline: list[dict[str, Any]] = [{"$match": a.get("filter", {})}]
        if "skip" in a:
            pipeline.append({"$skip": a["skip"]})
        if "limit" in a:
            pipeline.append({"$limit": a["limit"]})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        options = {"collation": a["collation"]} if "collation" in a else {}
        found = self._aggregate(db, name, {"pipeline": pipeline, **options})
        return found[0]["n"] if found else 0

    def _estimatedDocumentCount(self, db: str, name: str,
                                a: dict[str, Any]) -> Any:
        return self.command(db, {"count": name})["n"]

    def _count(self, db: str, name: str, a: dict[str, Any]) -> Any:
        options = {k: a[k] for k in ("skip", "limit", "collation") if k in a}
        return self.command(db, {"count": name, "query": a.get("filter", {}), **options})["n"]

    def _distinct(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self.command(db, {"distinct": name, "key": a["fieldName"],
                                 "query": a.get("filter", {}),
                                 **({"collation": a["collation"]} if "collation" in a else {})}
                            )["values"]

    def _createIndex(self, db: str, name: str, a: dict[str, Any]) -> Any:
        index = {"key": a["keys"], "name": a.get("name", "_".join(
            f"{k}_{v}" for k, v in a["keys"].items()))}
        index.update({k: v for k, v in a.items() if k not in ("keys", "name")})
        return self.command(db, {"createIndexes": name, "indexes": [index]})

    def _listIndexes(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self.cursor(db, self.command(db, {"listIndexes": name}), name)

    def _dropIndex(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self.command(db, {"dropIndexes": name, "index": a["name"]})

    def _drop(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self.command(db, {"drop": name})


def matches(expected: Any, actual: Any, root: bool = True) -> bool:
    """The unified format's matching rules (extra fields allowed in root documents)."""
    if isinstance(expected, Mapping):
        if len(expected) == 1 and next(iter(expected)).startswith("$$"):
            return _special(next(iter(expected)), next(iter(expected.values())), actual)
        if not isinstance(actual, Mapping):
            return False
        for key, value in expected.items():
            if isinstance(value, Mapping) and list(value) == ["$$exists"]:
                if (key in actual) != value["$$exists"]:
                    return False
                continue
            if isinstance(value, Mapping) and list(value) == ["$$unsetOrMatches"]:
                if key in actual and not matches(value["$$unsetOrMatches"], actual[key], False):
                    return False
                continue
            if key not in actual or not matches(value, actual[key], False):
                return False
        return root or set(actual) <= set(expected)
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            matches(e, a, root) for e, a in zip(expected, actual, strict=True))
    if is_number(expected) and is_number(actual):
        return compare(expected, actual) == 0
    return (bool(expected == actual) and type(expected) is not bool) or actual is expected


def _special(operator: str, argument: Any, actual: Any) -> bool:
    if operator == "$$unsetOrMatches":
        return matches(argument, actual, False)
    if operator == "$$type":
        names = argument if isinstance(argument, list) else [argument]
        return any(_is_type(name, actual) for name in names)
    raise AssertionError(f"unsupported matcher {operator}")


def _is_type(name: str, value: Any) -> bool:
    if name == "number":
        return is_number(value)
    return type_name(value) == name or (name == "long" and type_name(value) == "int")


def check_error(error: dict[str, Any], raised: Exception | None) -> None:
    """The unified format's ``expectError`` assertions, for store replies."""
    assert raised is not None, f"expected an error {error}"
    if isinstance(raised, ClientError):
        server_only = {"errorCode", "errorCodeName", "errorLabelsContain", "errorLabelsOmit",
                       "errorResponse", "writeErrors", "writeConcernErrors"}
        assert error.get("isClientError", True) and not server_only & set(error), (
            f"unexpected client error {raised}")
        if "errorContains" in error:
            assert error["errorContains"].lower() in str(raised).lower()
        return
    assert isinstance(raised, ServerError) and not error.get("isClientError"), raised
    reply = raised.reply
    labels = reply.get("errorLabels", [])
    for label in error.get("errorLabelsContain", []):
        assert label in labels, reply
    for label in error.get("errorLabelsOmit", []):
        assert label not in labels, reply
    detail = reply if not reply.get("writeErrors") else reply["writeErrors"][0]
    if "errorCode" in error:
        assert detail["code"] == error["errorCode"], detail
    if "errorCodeName" in error and "codeName" in detail:
        assert detail["codeName"] == error["errorCodeName"], detail
    if "errorContains" in error:
        assert error["errorContains"].lower() in detail["errmsg"].lower(), detail




def run_test(spec: dict[str, Any], test: dict[str, Any]) -> None:
    """Run one unified test case against a fresh store (skipping with the reason if needed)."""
    reason = skip_reason(spec, test)
    if reason:
        pytest.skip(reason)
    runner = Runner(spec)
    for operation in test["operations"]:
        raised: Exception | None = None
        result: Any = None
        try:
            result = runner.run(operation)
        except (ServerError, ClientError) as exc:
            raised = exc
        if "expectError" in operation:
            check_error(operation["expectError"], raised)
            continue
        assert raised is None, f"{operation['name']} failed: {raised}"
        if "expectResult" in operation:
            assert matches(operation["expectResult"], result), (operation, result)
    for expected in test.get("outcome", []):
        found = runner.store.handle(expected["databaseName"], {
            "find": expected["collectionName"], "sort": {"_id": 1}, "batchSize": 100000})
        documents = found["cursor"]["firstBatch"]
        assert len(documents) == len(expected["documents"]), documents
        for want, got in zip(expected["documents"], documents, strict=True):
            assert compare(want, got) == 0 and list(want) == list(got), (want, got)
