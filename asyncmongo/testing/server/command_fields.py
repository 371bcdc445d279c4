"""What the simulated server reads off a command: which kind it is (hello, write, read, allowed
before authentication) and the fields several parts of the server consult (``maxTimeMS``,
the read concern level, the read preference, the handshake's application name). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})
WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify",
                            "create", "drop", "dropDatabase", "createIndexes", "dropIndexes",
                            "deleteIndexes", "collMod", "commitTransaction",
                            "abortTransaction", "bulkWrite"})
READ_COMMANDS = frozenset({"find", "aggregate", "count", "distinct", "listCollections",
                           "listIndexes", "listDatabases"})
#: Commands an unauthenticated connection may run when the server has users.
NO_AUTH_COMMANDS = HELLO_NAMES | {"saslStart", "saslContinue", "authenticate", "ping",
                                  "buildInfo", "buildinfo", "getnonce", "logout", "endSessions"}


def max_time_exceeded(command: Mapping[str, Any], spent_ms: float) -> bool:
    """True when the command set a positive ``maxTimeMS`` that ``spent_ms`` has used up."""
    limit = command.get("maxTimeMS")
    if isinstance(limit, bool) or not isinstance(limit, int | float):
        return False
    return 0 < int(limit) <= spent_ms


def read_concern_level(command: Mapping[str, Any]) -> object:
    read_concern = command.get("readConcern")
    return read_concern.get("level") if isinstance(read_concern, Mapping) else None


def secondary_ok(command: Mapping[str, Any]) -> bool:
    """The read preference lets a secondary answer (any mode but primary)."""
    preference = command.get("$readPreference")
    return isinstance(preference, Mapping) and preference.get("mode", "primary") != "primary"


def app_name(command: Mapping[str, Any]) -> str | None:
    """The handshake's ``client.application.name``, if it has one."""
    client = command.get("client")
    application = client.get("application") if isinstance(client, Mapping) else None
    name = application.get("name") if isinstance(application, Mapping) else None
    return name if isinstance(name, str) else None
