"""The CRUD spec's unified tests, run straight against the store (no driver, no server).

Each operation is translated into the command a driver sends (``insertOne`` -> ``insert``,
``countDocuments`` -> an ``aggregate`` with ``$group``, ``bulkWrite`` -> one command per
request, ...). The test checks what only the server decides: the final collection contents
(``outcome``, exact, in ``_id`` order), the results the driver derives from the replies
(``expectResult``) and that server errors happen (``expectError``). Cases that test the driver
itself (client-side validation, command monitoring only, failpoints, client bulkWrite) are
skipped with that reason. The store plays MongoDB 8.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.bson import json_util
from asyncmongo.testing.store import Store
from asyncmongo.testing.store.compare import compare, is_number, type_name

SUITE = Path(__file__).resolve().parents[2] / "spec_tests" / "data" / "crud" / "unified"
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


def _cases() -> list[Any]:
    cases = []
    for path in sorted(SUITE.glob("**/*.json")):
        spec = json_util.loads(path.read_text())
        for test in spec["tests"]:
            cases.append(pytest.param(spec, test, id=f"{path.stem}/{test['description']}"))
    return cases


# Arguments the store cannot honour, with the reason a case using them is skipped.
UNSUPPORTED_ARGUMENTS = {
    "collation": "the store does not implement collation (simple binary comparison only)",
    "rawData": "rawData is a time-series/sharding option the store does not have",
}
UNSUPPORTED_FEATURES = {
    "$listLocalSessions": "$listLocalSessions lists the server's sessions, not stored data",
    "viewOn": "the store does not implement views",
}
DRIVER_ONLY_OPERATIONS = {
    "clientBulkWrite": "client bulkWrite is the admin bulkWrite command, not in the store",
    "failPoint": "failpoints belong to the simulated server, not the store",
    "modifyCollection": "collMod is not a store command",
}


def _skip_reason(spec: dict[str, Any], test: dict[str, Any]) -> str | None:
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
        if error.get("isClientError"):
            return "tests client-side validation (the driver raises before sending)"
        arguments = _all_arguments(operation.get("arguments", {}))
        for name, why in UNSUPPORTED_ARGUMENTS.items():
            if name in arguments:
                return why
        if _unacknowledged(arguments.get("writeConcern")):
            return "unacknowledged writes are the driver's and server front end's concern"
    for entity in spec.get("createEntities", []):
        options = entity.get("collection", {}).get("collectionOptions", {})
        if _unacknowledged(options.get("writeConcern")):
            return "unacknowledged writes are the driver's and server front end's concern"
    if "outcome" not in test and all("expectResult" not in o and "expectError" not in o
                                     for o in test["operations"]):
        return "asserts command monitoring events only (the driver's business)"
    return None


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


class Runner:
    """Entities (databases and collections by id) over one Store."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.store = Store()
        self.databases: dict[str, str] = {}
        self.collections: dict[str, tuple[str, str]] = {}
        self.read_concerns: dict[str, dict[str, Any]] = {}
        for entity in spec.get("createEntities", []):
            if "database" in entity:
                self.databases[entity["database"]["id"]] = entity["database"]["databaseName"]
            if "collection" in entity:
                c = entity["collection"]
                self.collections[c["id"]] = (self.databases[c["database"]], c["collectionName"])
                read_concern = c.get("collectionOptions", {}).get("readConcern")
                if read_concern:
                    self.read_concerns[c["id"]] = read_concern
        for data in spec.get("initialData", []):
            db, name = data["databaseName"], data["collectionName"]
            self.command(db, {"drop": name})
            self.command(db, {"create": name, **data.get("createOptions", {})})
            if data["documents"]:
                self.command(db, {"insert": name, "documents": data["documents"]})

    def command(self, db: str, command: dict[str, Any]) -> dict[str, Any]:
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
        if target in self.databases:
            return self._database_operation(self.databases[target], operation["name"],
                                            arguments)
        db, name = self.collections[target]
        if target in self.read_concerns and operation["name"] == "aggregate":
            arguments["readConcern"] = self.read_concerns[target]
        return getattr(self, "_" + operation["name"])(db, name, arguments)

    def _database_operation(self, db: str, op: str, arguments: dict[str, Any]) -> Any:
        if op == "aggregate":
            options = {k: v for k, v in arguments.items() if k not in ("pipeline", "batchSize")}
            reply = self.command(db, {"aggregate": 1, "pipeline": arguments["pipeline"],
                                      "cursor": {}, **options})
            return self.cursor(db, reply, "$cmd.aggregate")
        if op == "dropCollection":
            return self.command(db, {"drop": arguments["collection"]})
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
        spec: dict[str, Any] = {"q": a["filter"], "u": a.get("update", a.get("replacement")),
                                "multi": multi}
        for key in ("upsert", "arrayFilters", "hint", "sort", "let"):
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
        spec = {"q": a["filter"], "limit": limit, **({"hint": a["hint"]} if "hint" in a else {})}
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
                            ("let", "let")):
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
        found = self._aggregate(db, name, {"pipeline": pipeline})
        return found[0]["n"] if found else 0

    def _estimatedDocumentCount(self, db: str, name: str,
                                a: dict[str, Any]) -> Any:
        return self.command(db, {"count": name})["n"]

    def _count(self, db: str, name: str, a: dict[str, Any]) -> Any:
        options = {k: a[k] for k in ("skip", "limit") if k in a}
        return self.command(db, {"count": name, "query": a.get("filter", {}), **options})["n"]

    def _distinct(self, db: str, name: str, a: dict[str, Any]) -> Any:
        return self.command(db, {"distinct": name, "key": a["fieldName"],
                                 "query": a.get("filter", {})})["values"]

    def _createIndex(self, db: str, name: str, a: dict[str, Any]) -> Any:
        index = {"key": a["keys"], "name": a.get("name", "_".join(
            f"{k}_{v}" for k, v in a["keys"].items()))}
        index.update({k: v for k, v in a.items() if k not in ("keys", "name")})
        return self.command(db, {"createIndexes": name, "indexes": [index]})

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


def _check_error(error: dict[str, Any], raised: ServerError | None) -> None:
    assert raised is not None, f"expected an error {error}"
    reply = raised.reply
    detail = reply if not reply.get("writeErrors") else reply["writeErrors"][0]
    if "errorCode" in error:
        assert detail["code"] == error["errorCode"], detail
    if "errorCodeName" in error and "codeName" in detail:
        assert detail["codeName"] == error["errorCodeName"], detail
    if "errorContains" in error:
        assert error["errorContains"].lower() in detail["errmsg"].lower(), detail


@pytest.mark.parametrize(("spec", "test"), _cases())
def test_crud_unified_against_the_store(spec: dict[str, Any], test: dict[str, Any]) -> None:
    reason = _skip_reason(spec, test)
    if reason:
        pytest.skip(reason)
    runner = Runner(spec)
    for operation in test["operations"]:
        raised: ServerError | None = None
        try:
            result = runner.run(operation)
        except ServerError as exc:
            raised = exc
        if "expectError" in operation:
            _check_error(operation["expectError"], raised)
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
