"""Running one command on the simulated server, once the dispatcher has routed it here.

:class:`CommandRunner` checks in mongod's order: the legacy opcode, the Stable API
parameters, authentication (SASL conversations are answered here), the built-in commands
(:mod:`asyncmongo.testing.builtins`), what the role refuses; the rest goes to the
:class:`~asyncmongo.testing.store.Store`. Around the synchronous store it does what takes
time on a mongod: waiting for a transaction's document lock, the ``sleep`` of ``$where``
scripts, an awaitData getMore, a replica set's write concern.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from asyncmongo.core.wire.opcodes import OpCode
from asyncmongo.testing import stable_api
from asyncmongo.testing.builtins import BUILTINS, ConnectionInfo, ServerView
from asyncmongo.testing.protocol import Request
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.scram import SaslServer, UserDirectory
from asyncmongo.testing.server.command_fields import (
    NO_AUTH_COMMANDS,
    WRITE_COMMANDS,
    max_time_exceeded,
)
from asyncmongo.testing.server.network import Connection
from asyncmongo.testing.server.role import RoleState
from asyncmongo.testing.store import SessionContext, Store
from asyncmongo.testing.store.tailable import DEFAULT_AWAIT_MS
from asyncmongo.testing.store.transactions import lsid_of
from asyncmongo.testing.store.where import javascript_sleeps

#: Fields of the command envelope the store does not need.
_ENVELOPE = frozenset({"$db", "$readPreference", "$clusterTime", "apiVersion", "apiStrict",
                       "apiDeprecationErrors", "$audit", "maxTimeMS"})

#: Pauses (seconds) between tries of a plain write an open transaction's document lock refused:
#: mongod blocks the write until the transaction ends, the synchronous store answers
#: WriteConflict at once, so the front end waits a little (0.3 s in all) before giving up.
LOCK_WAIT_PAUSES = (0.005, 0.01, 0.02, 0.04, 0.08, 0.145)
#: How often an awaitData getMore looks for new documents while it waits (seconds).
AWAIT_DATA_POLL_S = 0.005


class CommandRunner:
    """Runs commands for one server; see the module docstring.

    The built-in commands take the server (they report on it and change it), so the runner
    is given the server it works for, as the built-ins see it
    (:class:`~asyncmongo.testing.builtins.ServerView`), besides its own collaborators.
    """

    __slots__ = ("_role", "_server", "api_memory", "parameters", "store", "users")

    def __init__(self, server: ServerView, *, role: RoleState, store: Store,
                 users: UserDirectory) -> None:
        self._server = server
        self._role = role
        self.store = store
        self.users = users
        #: Server parameters (getParameter/setParameter; requireApiVersion and
        #: acceptApiVersion2 steer the Stable API checks, see stable_api).
        self.parameters: dict[str, Any] = dict(stable_api.DEFAULT_PARAMETERS)
        #: The API parameters open cursors and transactions began with.
        self.api_memory = stable_api.ApiParameterMemory()

    def api_refusal(self, name: str, command: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Stable API error for the command's API parameters, if any (hello included:
        a strict isMaster is refused, it is not in API Version 1)."""
        return stable_api.api_refusal(name, command, self.parameters)

    def record_api(self, name: str, command: Mapping[str, Any], reply: Mapping[str, Any]
                   ) -> None:
        """Remember the API parameters a cursor or transaction the reply opened began with."""
        self.api_memory.record(name, command, reply, lsid_of(command))

    async def run(self, conn: Connection, request: Request) -> dict[str, Any]:
        """The reply to one (non-hello) command."""
        name, command, db = request.name, request.command, request.db
        if request.opcode is OpCode.OP_QUERY:
            return error_reply(352, f"Unsupported OP_QUERY command: {name}. The client driver "
                               "may require an upgrade. For more details see "
                               "https://dochub.mongodb.org/core/legacy-opcode-removal")
        refused = self.api_refusal(name, command) or (
            self.api_memory.refusal(name, command, lsid_of(command)))
        if refused is not None:
            return refused
        body = _strip(command)
        if SaslServer.handles(name):
            return conn.sasl.handle(db, body, peer_subject=conn.peer_subject)
        if self.users.requires_auth and name not in NO_AUTH_COMMANDS:
            if not conn.sasl.authenticated_users:
                return error_reply(13, f"Command {name} requires authentication")
            if conn.sasl.reauthentication_required():
                return error_reply(391, "Reauthentication required: the access token this "
                                   "connection authenticated with has expired")
        builtin = BUILTINS.get(name)
        if builtin is not None:
            info = ConnectionInfo(conn.peer, tuple(conn.sasl.authenticated_users))
            return await builtin(self._server, info, db, command)
        refused = self._role.refusal(name, command, body)
        if refused is not None:
            return refused
        return await self._run_in_store(name, db, body, command)

    async def _run_in_store(self, name: str, db: str, body: Mapping[str, Any],
                            command: Mapping[str, Any]) -> dict[str, Any]:
        """The store's reply, after the waits a mongod would make."""
        reply = await self._handle_in_store(name, db, body, command)
        if name == "getMore" and self.store.awaits_data(body):
            reply = await self._await_data(db, body, command, reply)
        if name in WRITE_COMMANDS and reply.get("ok"):
            return await self._role.replicate(command.get("writeConcern"), reply)
        return reply

    async def _handle_in_store(self, name: str, db: str, body: Mapping[str, Any],
                               command: Mapping[str, Any]) -> dict[str, Any]:
        """Run the command in the store. A plain write refused because an open transaction
        holds its document (112 without labels) that wrote nothing is tried again after
        short pauses, as mongod waits for the lock; then the 112 goes out as it came."""
        for pause in LOCK_WAIT_PAUSES:
            version = self.store.transactions.version
            reply = await self._store_handle(db, body, command)
            if not _locked_out(name, body, reply) or self.store.transactions.version != version:
                return reply
            await asyncio.sleep(pause)
        return await self._store_handle(db, body, command)

    async def _store_handle(self, db: str, body: Mapping[str, Any], command: Mapping[str, Any]
                            ) -> dict[str, Any]:
        """``store.handle``, then the ``sleep`` of its ``$where`` scripts (store/where.py),
        awaited so only this command waits; past a positive maxTimeMS it answers 50
        MaxTimeMSExpired, as mongod interrupts the script."""
        with javascript_sleeps() as slept:
            session = SessionContext(cluster_time=self._role.store_time())
            reply = self.store.handle(db, body, session)
        if slept.ms <= 0:
            return reply
        if max_time_exceeded(command, slept.ms):
            await asyncio.sleep(float(command["maxTimeMS"]) / 1000)
            return error_reply(50, "operation exceeded time limit")
        await asyncio.sleep(slept.ms / 1000)
        return reply

    async def _await_data(self, db: str, body: Mapping[str, Any], command: Mapping[str, Any],
                          reply: dict[str, Any]) -> dict[str, Any]:
        """An awaitData getMore that found nothing waits for new documents up to its
        maxTimeMS (mongod's default: 1 s), asking the store again every few ms; then it
        answers what came, or the empty batch (mongod: no error when the wait ends)."""
        limit = command.get("maxTimeMS")
        wait_ms = limit if isinstance(limit, int) and not isinstance(limit, bool) and (
            limit > 0) else DEFAULT_AWAIT_MS
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while _empty_open_batch(reply) and self.store.awaits_data(body):
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.sleep(min(AWAIT_DATA_POLL_S, left))
            if not self.store.awaits_data(body):
                break  # killed meanwhile (killCursors): the wait ends with nothing
            reply = await self._store_handle(db, body, command)
        return reply


def open_cursor(reply: Mapping[str, Any]) -> bool:
    """A successful cursor reply whose cursor stays open (id != 0)."""
    cursor = reply.get("cursor")
    return bool(reply.get("ok")) and isinstance(cursor, Mapping) and cursor.get("id", 0) != 0


def _strip(command: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in command.items() if key not in _ENVELOPE}


def _locked_out(name: str, command: Mapping[str, Any], reply: Mapping[str, Any]) -> bool:
    """A plain (non-transaction) write the store refused with an unlabelled WriteConflict:
    an open transaction holds a document it writes."""
    return (name in WRITE_COMMANDS and "autocommit" not in command and reply.get("code") == 112
            and "errorLabels" not in reply)


def _empty_open_batch(reply: Mapping[str, Any]) -> bool:
    """A getMore reply with no documents whose cursor stays open."""
    cursor = reply.get("cursor")
    return open_cursor(reply) and isinstance(cursor, Mapping) and not cursor.get("nextBatch")
