"""The commands the simulated server answers itself, not the store: ``ping``, ``buildInfo``,
``configureFailPoint``, ``replSetStepDown``, ``replSetFreeze``, ``replSetGetStatus``,
``serverStatus``, ``whatsmyuri``, ``connectionStatus`` and a few that only need ``ok: 1``.

Each takes the server, the connection's view (:class:`ConnectionInfo`), the database and the
command, and returns the reply document.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self

from asyncmongo.bson import Int64
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import configure_failpoint, stable_api
from asyncmongo.testing.member import Role
from asyncmongo.testing.replies import error_reply

if TYPE_CHECKING:
    from asyncmongo.testing.failpoint import FailPointState
    from asyncmongo.testing.replset import ReplicaSetGroup
    from asyncmongo.testing.scram import User
    from asyncmongo.testing.store import Store

#: The server version the simulator claims (maxWireVersion 25, member.MAX_WIRE_VERSION).
SERVER_VERSION = "8.0.0"


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """What a built-in command may know about the connection it arrived on."""

    peer: str
    authenticated_users: tuple[User, ...]


class ServerView(Protocol):
    """What the built-in commands read and change on the server they run on (a
    :class:`~asyncmongo.testing.server.SimServer` is one)."""

    @property
    def host(self) -> str: ...

    @property
    def role(self) -> Role: ...

    @property
    def replica_set(self) -> ReplicaSetGroup | None: ...

    @property
    def on_step_down(self) -> Callable[[Self], Awaitable[None]] | None:
        """The deployment's replSetStepDown hook, called with this server."""
        ...

    @property
    def fail_points(self) -> dict[str, FailPointState]: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    @property
    def store(self) -> Store: ...

    @property
    def connection_count(self) -> int: ...

    @property
    def total_connections(self) -> int: ...


Reply = dict[str, Any]
Builtin = Callable[[ServerView, ConnectionInfo, str, dict[str, Any]], Awaitable[Reply]]


async def ping(server: ServerView, conn: ConnectionInfo, db: str, command: dict[str, Any]
               ) -> Reply:
    return {"ok": 1.0}


async def build_info(server: ServerView, conn: ConnectionInfo, db: str,
                     command: dict[str, Any]) -> Reply:
    return {"version": SERVER_VERSION, "gitVersion": "asyncmongo.testing",
            "versionArray": [*map(int, SERVER_VERSION.split(".")), 0], "bits": 64, "debug": False,
            "maxBsonObjectSize": 16 * 1024 * 1024, "storageEngines": ["inMemory"], "ok": 1.0}


async def configure_fail_point(server: ServerView, conn: ConnectionInfo, db: str,
                               command: dict[str, Any]) -> Reply:
    if db != "admin":
        return error_reply(13, "configureFailPoint may only be run against the admin database.")
    try:
        configure_failpoint.configure(server.fail_points, command)
    except (ConfigurationError, TypeError, ValueError) as exc:
        return error_reply(2, str(exc))
    return {"count": 0, "ok": 1.0}


async def repl_set_step_down(server: ServerView, conn: ConnectionInfo, db: str,
                             command: dict[str, Any]) -> Reply:
    if server.replica_set is None:
        return error_reply(76, "not running with --replSet")
    if server.role is not Role.PRIMARY:
        return error_reply(10107, "not primary so can't step down")
    if server.on_step_down is not None:
        await server.on_step_down(server)
    return {"ok": 1.0}


async def repl_set_freeze(server: ServerView, conn: ConnectionInfo, db: str,
                          command: dict[str, Any]) -> Reply:
    """mongod's replSetFreeze: a secondary stands for no election for N seconds (0 unfreezes,
    answering ``info: "unfreezing"``); a primary refuses with 95 NotSecondary."""
    if db != "admin":
        return error_reply(13, "replSetFreeze may only be run against the admin database.")
    group = server.replica_set
    if group is None:
        return error_reply(76, "not running with --replSet")
    seconds = command["replSetFreeze"]
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return error_reply(14, "replSetFreeze: the number of seconds must be a number, not "
                               f"{type(seconds).__name__}")
    if server.role is Role.PRIMARY:
        return error_reply(95, "cannot freeze node when primary or running for election. "
                               "state: Primary")
    group.freeze(server.host, float(seconds), asyncio.get_running_loop().time())
    if seconds <= 0:
        return {"info": "unfreezing", "ok": 1.0}
    if seconds == 1:
        return {"warning": "you really want to freeze for only 1 second?", "ok": 1.0}
    return {"ok": 1.0}


async def repl_set_get_status(server: ServerView, conn: ConnectionInfo, db: str,
                              command: dict[str, Any]) -> Reply:
    group = server.replica_set
    if group is None:
        return error_reply(76, "not running with --replSet")
    states = {Role.PRIMARY: 1, Role.SECONDARY: 2, Role.ARBITER: 7}
    members = [{"_id": index, "name": member.host,
                "stateStr": "PRIMARY" if member.host == group.primary else (
                    "ARBITER" if member.arbiter else "SECONDARY")}
               for index, member in enumerate(group.members)]
    return {"set": group.set_name, "myState": states.get(server.role, 10),
            "term": Int64(group.term), "members": members, "ok": 1.0}


async def server_status(server: ServerView, conn: ConnectionInfo, db: str,
                        command: dict[str, Any]) -> Reply:
    return {"host": server.host, "version": SERVER_VERSION,
            "process": "mongos" if server.role is Role.MONGOS else "mongod",
            "pid": Int64(os.getpid()),
            "connections": {"current": server.connection_count,
                            "totalCreated": server.total_connections},
            "ok": 1.0}


async def whats_my_uri(server: ServerView, conn: ConnectionInfo, db: str,
                       command: dict[str, Any]) -> Reply:
    return {"you": conn.peer, "ok": 1.0}


async def connection_status(server: ServerView, conn: ConnectionInfo, db: str,
                            command: dict[str, Any]) -> Reply:
    users = [{"user": user.name, "db": user.db} for user in conn.authenticated_users]
    return {"authInfo": {"authenticatedUsers": users, "authenticatedUserRoles": []}, "ok": 1.0}


async def get_parameter(server: ServerView, conn: ConnectionInfo, db: str,
                        command: dict[str, Any]) -> Reply:
    if db != "admin":
        return error_reply(13, "getParameter may only be run against the admin database.")
    return stable_api.get_parameter(command, server.parameters)


async def set_parameter(server: ServerView, conn: ConnectionInfo, db: str,
                        command: dict[str, Any]) -> Reply:
    if db != "admin":
        return error_reply(13, "setParameter may only be run against the admin database.")
    return stable_api.set_parameter(command, server.parameters)


async def api_test_command(server: ServerView, conn: ConnectionInfo, db: str,
                           command: dict[str, Any]) -> Reply:
    """mongod's Stable API test commands (testVersion2, ...): there only with test commands
    enabled; the API checks happen before (stable_api.api_refusal)."""
    if not server.parameters.get("enableTestCommands"):
        return error_reply(59, f"no such command: '{next(iter(command))}'")
    return {"ok": 1.0}


async def kill_all_sessions(server: ServerView, conn: ConnectionInfo, db: str,
                            command: dict[str, Any]) -> Reply:
    """mongod's killAllSessions (``[]``: every user's sessions): their open transactions are
    aborted and their cursors closed (the store is shared by a replica set's members, so one
    member's command ends them set-wide, as the unified runner expects before each test)."""
    if db != "admin":
        return error_reply(13, "killAllSessions may only be run against the admin database.")
    server.store.kill_all_sessions()
    return {"ok": 1.0}


async def ok(server: ServerView, conn: ConnectionInfo, db: str, command: dict[str, Any]
             ) -> Reply:
    return {"ok": 1.0}


BUILTINS: dict[str, Builtin] = {
    "ping": ping,
    "buildInfo": build_info,
    "buildinfo": build_info,
    "configureFailPoint": configure_fail_point,
    "replSetStepDown": repl_set_step_down,
    "replSetFreeze": repl_set_freeze,
    "replSetGetStatus": repl_set_get_status,
    "serverStatus": server_status,
    "whatsmyuri": whats_my_uri,
    "connectionStatus": connection_status,
    "getParameter": get_parameter,
    "setParameter": set_parameter,
    **{name: api_test_command for name in stable_api.TEST_COMMANDS},
    "killAllSessions": kill_all_sessions,
    "refreshSessions": ok,
    "logout": ok,
    "getLastError": ok,
}
