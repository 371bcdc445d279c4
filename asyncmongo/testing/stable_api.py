"""What mongod 8.0 does with a command's Stable API parameters (versioned-api spec).

A command may carry ``apiVersion``, ``apiStrict`` and ``apiDeprecationErrors``; mongod checks
them before it runs the command, in this order:

1. ``apiStrict`` / ``apiDeprecationErrors`` without ``apiVersion``: error 4886600.
2. an ``apiVersion`` it does not know: ``APIVersionError`` (322). It knows "1", and "2" when
   the ``acceptApiVersion2`` test parameter is on.
3. no ``apiVersion`` while ``requireApiVersion`` is on: error 498870 (hello and the
   authentication commands are exempt: a driver sends them before it can say anything).
4. ``apiStrict: true`` and a command outside that API version, an option of it marked
   unstable, or an aggregation stage outside it: ``APIStrictError`` (323).
5. ``apiDeprecationErrors: true`` and a command deprecated in that version:
   ``APIDeprecationError`` (324).

The server parameters this reads (``requireApiVersion``, ``acceptApiVersion2``) and the
test commands of mongod's Stable API suite (``testVersion2``, ``testDeprecation``, ...) live
here too, so the rules are in one place. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.testing.replies import error_reply

__all__ = [
    "API_V1_COMMANDS",
    "DEFAULT_PARAMETERS",
    "TEST_COMMANDS",
    "UNSTABLE_FIELDS",
    "V1_REFUSED_STAGES",
    "ApiCommand",
    "ApiParameterMemory",
    "api_parameters",
    "api_refusal",
    "get_parameter",
    "set_parameter",
]

API_VERSION_ERROR = 322
API_STRICT_ERROR = 323
API_DEPRECATION_ERROR = 324
#: mongod's location code: apiStrict / apiDeprecationErrors sent without apiVersion.
MISSING_API_VERSION = 4886600
#: mongod's location code: requireApiVersion is on and the command declares no apiVersion.
API_VERSION_REQUIRED = 498870

#: The commands of API Version 1 (MongoDB 8.0's "Stable API Commands"; ``count`` since 5.0.9).
API_V1_COMMANDS = frozenset({
    "abortTransaction", "aggregate", "authenticate", "collMod", "commitTransaction", "count",
    "create", "createIndexes", "delete", "drop", "dropDatabase", "dropIndexes", "endSessions",
    "find", "findAndModify", "getMore", "hello", "insert", "killCursors", "listCollections",
    "listDatabases", "listIndexes", "ping", "refreshSessions", "saslContinue", "saslStart",
    "update",
})

#: Fields of a V1 command that are not part of API Version 1 (mongod's IDL marks them
#: ``unstable``); ``apiStrict: true`` refuses them.
UNSTABLE_FIELDS: Mapping[str, frozenset[str]] = {
    "find": frozenset({
        "min", "max", "returnKey", "showRecordId", "oplogReplay", "term", "readOnce",
        "allowSpeculativeMajorityRead", "$_requestResumeToken", "$_resumeAfter",
    }),
}

#: Aggregation stages mongod refuses under ``apiStrict: true`` in API Version 1.
V1_REFUSED_STAGES = frozenset({
    "$collStats", "$currentOp", "$indexStats", "$listCatalog", "$listLocalSessions",
    "$listSearchIndexes", "$listSessions", "$planCacheStats", "$querySettings",
    "$shardedDataDistribution",
})


@dataclass(frozen=True, slots=True)
class ApiCommand:
    """A test command of mongod's Stable API suite: the versions it belongs to and the
    versions it is deprecated in."""

    versions: frozenset[str]
    deprecated_in: frozenset[str] = frozenset()


#: mongod's Stable API test commands (enableTestCommands); each just answers ``ok: 1``.
TEST_COMMANDS: Mapping[str, ApiCommand] = {
    "testVersion1And2": ApiCommand(frozenset({"1", "2"})),
    "testVersion2": ApiCommand(frozenset({"2"})),
    "testDeprecation": ApiCommand(frozenset({"1", "2"}), frozenset({"1"})),
    "testDeprecationInVersion2": ApiCommand(frozenset({"1", "2"}), frozenset({"2"})),
    "testRemoval": ApiCommand(frozenset({"1"})),
}

#: The parameters getParameter/setParameter know, as mongod runs in the drivers' test
#: matrix: test commands on and ``acceptApiVersion2`` on (the versioned-api suite needs it),
#: ``requireApiVersion`` off.
DEFAULT_PARAMETERS: Mapping[str, Any] = {
    "enableTestCommands": True,
    "acceptApiVersion2": True,
    "requireApiVersion": False,
    "authenticationMechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"],
    # client backpressure: a positive value is sent as baseBackoffMS with overload errors
    "externalClientBaseBackoffMS": 0,
}
#: Parameters fixed at startup (setParameter refuses to change them at runtime).
_STARTUP_ONLY = frozenset({"enableTestCommands", "authenticationMechanisms"})
#: Command fields that are not parameter names (the envelope drivers add).
_NOT_PARAMETERS = frozenset({"$db", "$readPreference", "$clusterTime", "lsid", "txnNumber",
                             "comment", "apiVersion", "apiStrict", "apiDeprecationErrors",
                             "maxTimeMS"})
#: Commands exempt from requireApiVersion (the handshake and authentication).
_EXEMPT_FROM_REQUIRE = frozenset({"hello", "isMaster", "ismaster", "saslStart", "saslContinue",
                                  "authenticate", "getnonce"})


def _versions(name: str) -> frozenset[str]:
    test = TEST_COMMANDS.get(name)
    if test is not None:
        return test.versions
    return frozenset({"1"}) if name in API_V1_COMMANDS else frozenset()


def api_refusal(name: str, command: Mapping[str, Any], parameters: Mapping[str, Any]
                ) -> dict[str, Any] | None:
    """mongod's error reply for ``command`` (named ``name``) given its API parameters and
    the server ``parameters``; None when it may run."""
    version = command.get("apiVersion")
    strict = command.get("apiStrict")
    deprecation = command.get("apiDeprecationErrors")
    if version is None:
        if strict is not None or deprecation is not None:
            return error_reply(MISSING_API_VERSION, "Provided apiStrict and/or "
                               "apiDeprecationErrors without passing apiVersion", command)
        if parameters.get("requireApiVersion") and name not in _EXEMPT_FROM_REQUIRE:
            return error_reply(API_VERSION_REQUIRED, "The apiVersion parameter is required, "
                               "please configure your MongoClient's driver API version",
                               command)
        return None
    accepted = {"1", "2"} if parameters.get("acceptApiVersion2") else {"1"}
    if not isinstance(version, str) or version not in accepted:
        return error_reply(API_VERSION_ERROR, 'API version must be "1"', command)
    for field, value in (("apiStrict", strict), ("apiDeprecationErrors", deprecation)):
        if value is not None and not isinstance(value, bool):
            return error_reply(14, f"BSON field '{field}' is the wrong type "
                               f"'{type(value).__name__}', expected type 'bool'", command)
    if strict:
        refused = _strict_refusal(name, version, command)
        if refused is not None:
            return refused
    test = TEST_COMMANDS.get(name)
    if deprecation and test is not None and version in test.deprecated_in:
        return error_reply(API_DEPRECATION_ERROR, f"Provided apiDeprecationErrors:true, but "
                           f"the command {name} is deprecated in API Version {version}",
                           command)
    return None


def _strict_refusal(name: str, version: str, command: Mapping[str, Any]
                    ) -> dict[str, Any] | None:
    if version not in _versions(name):
        return error_reply(API_STRICT_ERROR, f"Provided apiStrict:true, but the command "
                           f"{name} is not in API Version {version}", command)
    for field in UNSTABLE_FIELDS.get(name, frozenset()) & command.keys():
        return error_reply(API_STRICT_ERROR, f"BSON field '{name}.{field}' is not allowed "
                           "with apiStrict:true.", command)
    if name == "aggregate":
        pipeline = command.get("pipeline")
        for stage in pipeline if isinstance(pipeline, list) else ():
            if isinstance(stage, Mapping) and stage.keys() & V1_REFUSED_STAGES:
                stage_name = next(iter(stage.keys() & V1_REFUSED_STAGES))
                return error_reply(API_STRICT_ERROR, f"{stage_name} is not allowed with "
                                   f"'apiStrict: true' in API Version {version}", command)
    return None


API_MISMATCH_ERROR = 325
_API_FIELDS = ("apiVersion", "apiStrict", "apiDeprecationErrors")


def api_parameters(command: Mapping[str, Any]) -> dict[str, Any]:
    """The command's Stable API parameters (only those it carries)."""
    return {field: command[field] for field in _API_FIELDS if field in command}


class ApiParameterMemory:
    """The API parameters a cursor or a transaction began with (versioned-api spec,
    "Cursors" and "Transactions"): a getMore, or a command continuing a transaction, must
    repeat them, else mongod answers an API parameter mismatch (325)."""

    __slots__ = ("_cursors", "_transactions")

    def __init__(self) -> None:
        self._cursors: dict[Any, dict[str, Any]] = {}
        #: By session: (txnNumber, the parameters of the transaction's first command).
        self._transactions: dict[Any, tuple[Any, dict[str, Any]]] = {}

    def refusal(self, name: str, command: Mapping[str, Any], session: Any
                ) -> dict[str, Any] | None:
        """The mismatch error for a getMore or a transaction-continuing command, or None.

        ``session`` is a hashable key of the command's lsid (None without one)."""
        used = api_parameters(command)
        if name == "getMore":
            began = self._cursors.get(command.get("getMore"))
            if began is not None and began != used:
                return error_reply(API_MISMATCH_ERROR, f"API parameter mismatch: getMore used "
                                   f"params {used}, the cursor-creating command used {began}",
                                   command)
        if (session is not None and command.get("autocommit") is False
                and not command.get("startTransaction")):
            txn_number, began = self._transactions.get(session, (None, None))
            if (began is not None and txn_number == command.get("txnNumber")
                    and began != used):
                return error_reply(API_MISMATCH_ERROR, "API parameter mismatch: "
                                   f"transaction-continuing command used {used}, the "
                                   f"transaction's first command used {began}", command)
        return None

    def record(self, name: str, command: Mapping[str, Any], reply: Mapping[str, Any],
               session: Any) -> None:
        """Note the parameters of a command that opened a cursor or began a transaction;
        forget cursors that are exhausted or killed."""
        if session is not None and command.get("startTransaction") and reply.get("ok"):
            self._transactions[session] = (command.get("txnNumber"), api_parameters(command))
        if name == "killCursors":
            ids = command.get("cursors")
            for cursor_id in ids if isinstance(ids, list) else ():
                self._cursors.pop(cursor_id, None)
            return
        cursor = reply.get("cursor")
        if not reply.get("ok") or not isinstance(cursor, Mapping):
            return
        cursor_id = cursor.get("id", 0)
        if name != "getMore" and cursor_id:
            self._cursors[cursor_id] = api_parameters(command)
        elif name == "getMore" and not cursor_id:
            self._cursors.pop(command.get("getMore"), None)


def get_parameter(command: Mapping[str, Any], parameters: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """mongod's getParameter: ``{getParameter: "*"}`` answers every parameter, otherwise
    the ones the command names (``{getParameter: 1, requireApiVersion: 1}``)."""
    if command.get("getParameter") == "*":
        return {**parameters, "ok": 1.0}
    names = [key for key in command if key != "getParameter" and key not in _NOT_PARAMETERS]
    if not names:
        return error_reply(72, "no option found to get")
    reply: dict[str, Any] = {}
    for key in names:
        if key not in parameters:
            return error_reply(72, "no option found to get")
        reply[key] = parameters[key]
    return {**reply, "ok": 1.0}


def set_parameter(command: Mapping[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """mongod's setParameter: ``{setParameter: 1, name: value}`` for one runtime parameter;
    the reply's ``was`` holds the old value."""
    names = [key for key in command if key != "setParameter" and key not in _NOT_PARAMETERS]
    if len(names) != 1:
        return error_reply(2, "setParameter takes exactly one parameter"
                           if names else "no option found to set, use help:true to see options ")
    (name,) = names
    if name not in parameters:
        return error_reply(72, f"attempted to set unrecognized parameter [{name}], "
                           "use help:true to see options ")
    if name in _STARTUP_ONLY:
        return error_reply(2, f"not allowed to change [{name}] at runtime")
    value = command[name]
    if isinstance(parameters[name], bool) and not isinstance(value, (bool, int, float)):
        return error_reply(14, f"BSON field '{name}' must be a boolean")
    was = parameters[name]
    parameters[name] = bool(value) if isinstance(parameters[name], bool) else value
    return {"was": was, "ok": 1.0}
