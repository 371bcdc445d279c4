"""The store's front door: ``Store.handle(db_name, command)`` returns the reply document.

Routing: the first key names the command (unknown ones get 59 CommandNotFound). A command
with ``autocommit: false`` runs inside its session's transaction (``startTransaction`` opens
it; any error aborts it); a write with ``lsid`` + ``txnNumber`` outside a transaction is a
retryable write, applied at most once. Every ``StoreError`` becomes the server's error reply.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.testing.store import (
    admin,
    change_streams,
    client_bulk,
    crud,
    explain,
    rename,
    search_indexes,
    snapshots,
    stats_commands,
    tailable,
    views,
)
from asyncmongo.testing.store.change_events import ChangeLog
from asyncmongo.testing.store.collation import parse_collation, using
from asyncmongo.testing.store.collection import new_uuid
from asyncmongo.testing.store.context import CommandContext, SessionContext
from asyncmongo.testing.store.cursors import CursorManager
from asyncmongo.testing.store.database import Catalog, Namespaces, check_database_name
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.local_sessions import LocalSessionCache
from asyncmongo.testing.store.transactions import (
    TRANSIENT,
    TransactionManager,
    TransactionState,
    lsid_of,
)

Reply = dict[str, Any]
Handler = Callable[[CommandContext, Mapping[str, Any]], Reply]

RETRYABLE_WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify",
                              "bulkWrite"})
_IN_TRANSACTION = frozenset({"find", "insert", "update", "delete", "findAndModify",
                             "findandmodify", "aggregate", "distinct", "getMore", "killCursors",
                             "create", "createIndexes", "commitTransaction",
                             "abortTransaction", "bulkWrite"})


class Store:
    """An in-memory MongoDB: databases, collections, indexes, cursors, sessions.

    ``clock`` returns the current UTC time (tests pass a fixed one); ``rng`` makes collection
    UUIDs reproducible. Thread-unsafe by design: one asyncio server calls it from one loop.
    """

    def __init__(self, *, clock: Callable[[], datetime.datetime] | None = None,
                 rng: random.Random | None = None) -> None:
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._rng = rng or random.Random()
        self.catalog = Catalog(lambda: new_uuid(self._rng.randbytes(16)))
        self.transactions = TransactionManager(self.catalog)
        self.catalog.guard = self.transactions.direct_guard
        self.catalog.before_change = self.transactions.snapshot_open_transactions
        #: Every committed change, for change streams (store/change_events.py).
        self.changes = ChangeLog(self._clock)
        self.catalog.journal = self.changes
        self.cursors = CursorManager()
        self.local_sessions = LocalSessionCache()
        self._handlers: dict[str, Handler] = {
            "insert": crud.insert,
            "update": crud.update,
            "delete": crud.delete,
            "findAndModify": crud.find_and_modify,
            "findandmodify": crud.find_and_modify,
            "find": crud.find,
            "explain": explain.explain,
            "getMore": self._get_more,
            "killCursors": crud.kill_cursors,
            "count": crud.count,
            "distinct": crud.distinct,
            "aggregate": self._aggregate,
            "bulkWrite": client_bulk.bulk_write,
            "create": admin.create,
            "collMod": self._with_ddl_event(admin.coll_mod, "collMod"),
            "renameCollection": self._rename_collection,
            "drop": admin.drop,
            "dropDatabase": self._drop_database,
            "listCollections": admin.list_collections,
            "listDatabases": admin.list_databases,
            "createIndexes": self._with_ddl_event(admin.create_indexes, "createIndexes"),
            "listIndexes": admin.list_indexes,
            "dropIndexes": self._with_ddl_event(admin.drop_indexes, "dropIndexes"),
            "deleteIndexes": self._with_ddl_event(admin.drop_indexes, "deleteIndexes"),
            "createSearchIndexes": search_indexes.create_search_indexes,
            "updateSearchIndex": search_indexes.update_search_index,
            "dropSearchIndex": search_indexes.drop_search_index,
            "endSessions": self._end_sessions,
            "collStats": stats_commands.coll_stats,
            "dbStats": stats_commands.db_stats,
            "dbstats": stats_commands.db_stats,
        }

    def __repr__(self) -> str:
        return f"Store({self.catalog!r}, {self.cursors!r}, {self.transactions!r})"

    def supports(self, command_name: str) -> bool:
        """True if ``handle`` answers this command (the server answers the rest itself)."""
        return command_name in self._handlers or command_name in (
            "commitTransaction", "abortTransaction")

    def handle(self, db_name: str, command: Mapping[str, Any],
               session: SessionContext | None = None) -> Reply:
        """Run one command document against database ``db_name`` and return the reply."""
        try:
            return self._dispatch(db_name, command, session or SessionContext())
        except StoreError as exc:
            return exc.to_reply()
        except Exception as exc:
            # The fuzz test (tests/store/test_store_fuzz.py) asserts this never happens.
            return StoreError(1, f"asyncmongo store bug: {type(exc).__name__}: {exc}").to_reply()

    def _dispatch(self, db_name: str, command: Mapping[str, Any],
                  session: SessionContext) -> Reply:
        if not command:
            raise StoreError(59, "no such command: ''")
        name = next(iter(command))
        if not self.supports(name):
            raise StoreError(59, f"no such command: '{name}'")
        check_database_name(db_name)
        lsid_key = lsid_of(command)
        if lsid_key is not None:
            self.local_sessions.touch(lsid_key, command["lsid"], session.now or self._clock())
        txn_number = command.get("txnNumber")
        if txn_number is not None and (isinstance(txn_number, bool)
                                       or not isinstance(txn_number, int)):
            raise StoreError(14, "BSON field 'txnNumber' is the wrong type, expected type 'long'")
        if command.get("autocommit") is False:
            return self._in_transaction(name, db_name, command, session, lsid_key, txn_number)
        if _check_snapshot_read_concern(name, command) and session.cluster_time is not None:
            return self._snapshot_read(name, db_name, command, session, lsid_key)
        if name in ("commitTransaction", "abortTransaction"):
            raise StoreError(50768, f"txnNumber and autocommit=false are required for {name}"
                             if txn_number is None else "autocommit must be false")
        if lsid_key is not None and txn_number is not None and name in RETRYABLE_WRITES:
            kept = self.transactions.retry_reply(lsid_key, int(txn_number))
            if kept is not None:
                return kept
            reply = self._run(name, db_name, command, session, self.catalog, False, lsid_key)
            self.transactions.remember_reply(lsid_key, int(txn_number), reply)
            return reply
        return self._run(name, db_name, command, session, self.catalog, False, lsid_key)

    def _snapshot_read(self, name: str, db_name: str, command: Mapping[str, Any],
                       session: SessionContext, lsid_key: Any) -> Reply:
        """A read with readConcern {level: snapshot} outside a transaction: run against the
        retained state at its atClusterTime (or now), which the reply reports back."""
        assert session.cluster_time is not None
        read_concern = command.get("readConcern")
        requested = snapshots.requested_time(
            read_concern if isinstance(read_concern, Mapping) else None)
        view, at = self.transactions.history.view_at(requested, session.cluster_time)
        reply = self._run(name, db_name, command, session, view, False, lsid_key)
        cursor = reply.get("cursor")
        if isinstance(cursor, dict):
            cursor["atClusterTime"] = at
        else:
            reply["atClusterTime"] = at
        return reply

    def _in_transaction(self, name: str, db_name: str, command: Mapping[str, Any],
                        session: SessionContext, lsid_key: Any, txn_number: Any) -> Reply:
        if lsid_key is None or txn_number is None:
            raise StoreError(50768, "txnNumber and lsid are required for a transaction")
        if name == "commitTransaction":
            self.transactions.commit(lsid_key, int(txn_number))
            return {"ok": 1.0}
        if name == "abortTransaction":
            self.transactions.abort_command(lsid_key, int(txn_number))
            return {"ok": 1.0}
        if name not in _IN_TRANSACTION:
            raise StoreError(263,
                             f"Cannot run '{name}' in a multi-document transaction.")
        start = command.get("startTransaction") is True
        transaction = self.transactions.transaction_for(lsid_key, int(txn_number), start)
        try:
            reply = self._run(name, db_name, command, session, transaction.view, True, lsid_key)
        except StoreError as exc:
            self.transactions.abort(transaction)
            if exc.code in (112, 251) and TRANSIENT not in exc.labels:
                exc.labels = (*exc.labels, TRANSIENT)
            raise
        if reply.get("writeErrors") or reply.get("nErrors"):
            self.transactions.abort(transaction)
        return reply

    def _run(self, name: str, db_name: str, command: Mapping[str, Any],
             session: SessionContext, namespaces: Namespaces, in_transaction: bool,
             lsid_key: Any) -> Reply:
        target = command.get(name)
        if name in views.REFUSED_ON_VIEW and isinstance(target, str):
            views.refuse_on_view(name, namespaces.get(db_name, target))
        if in_transaction and name in RETRYABLE_WRITES and isinstance(target, str):
            tailable.refuse_capped_write_in_transaction(namespaces.get(db_name, target))
        context = CommandContext(
            db_name=db_name,
            namespaces=namespaces,
            cursors=self.cursors,
            now=session.now or self._clock(),
            timestamp=session.timestamp,
            in_transaction=in_transaction,
            lsid_key=lsid_key,
            new_object_id=ObjectId,
            local_sessions=self.local_sessions,
        )
        with using(parse_collation(command.get("collation"))):
            return self._handlers[name](context, command)

    def _aggregate(self, ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
        if change_streams.is_change_stream(command):
            return change_streams.open_stream(ctx, command, self.changes)
        return crud.aggregate(ctx, command)

    def _get_more(self, ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
        cursor_id = command.get("getMore")
        collection = command.get("collection")
        cursor = (self.cursors.cursors.get(int(cursor_id)) if isinstance(cursor_id, int)
                  and not isinstance(cursor_id, bool) else None)
        if cursor is None or cursor.stream is None or not isinstance(collection, str):
            return crud.get_more(ctx, command)
        found = self.cursors.find(cursor_id, collection, ctx.db_name)
        return change_streams.get_more(ctx, command, found, self.changes)

    def _rename_collection(self, ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
        return rename.rename_collection(ctx, command, self.catalog, self.changes)

    def _with_ddl_event(self, handler: Handler, name: str) -> Handler:
        """``handler``, then the change stream event of its success (createIndexes,
        dropIndexes, collMod: shown with showExpandedEvents)."""

        def run(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
            target = command.get(name)
            collection = (ctx.namespaces.get(ctx.db_name, target)
                          if isinstance(target, str) else None)
            before = ({n: i.spec for n, i in collection.indexes.items()}
                      if collection is not None else None)
            reply = handler(ctx, command)
            if reply.get("ok") and not ctx.in_transaction:
                change_streams.record_ddl(self.changes, name, ctx, command, before)
            return reply

        return run

    def _drop_database(self, ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
        for name in list(self.catalog.names(ctx.db_name)):
            self.cursors.kill_namespace(f"{ctx.db_name}.{name}")
        self.catalog.drop_database(ctx.db_name)
        return {"dropped": ctx.db_name, "ok": 1.0}

    def _end_sessions(self, ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
        sessions = command.get("endSessions")
        for lsid in sessions if isinstance(sessions, list) else []:
            self.transactions.end_session(lsid_of({"lsid": lsid}))
            self.local_sessions.end(lsid_of({"lsid": lsid}))
        return {"ok": 1.0}

    def kill_all_sessions(self) -> None:
        """``killAllSessions``: abort every open transaction (releasing its document locks)
        and close every cursor opened in a session, as mongod kills the sessions'
        operations. The sessions' retryable-write bookkeeping stays (mongod keeps it in
        config.transactions), and so does the session cache."""
        self.transactions.abort_all()
        self.cursors.kill([cursor_id for cursor_id, cursor in self.cursors.cursors.items()
                           if cursor.lsid_key is not None])

    def awaits_data(self, command: Mapping[str, Any]) -> bool:
        """True when ``command`` is a getMore on an open awaitData cursor: if it answers an
        empty batch, the server front end may wait (up to the getMore's maxTimeMS, else
        tailable.DEFAULT_AWAIT_MS) for new documents and ask again, as mongod waits."""
        cursor_id = command.get("getMore")
        if isinstance(cursor_id, bool) or not isinstance(cursor_id, int):
            return False
        cursor = self.cursors.cursors.get(int(cursor_id))
        if cursor is not None and cursor.stream is not None:
            return True  # a change stream's getMore waits for new events
        return tailable.await_data(cursor)

    def transaction_state(self, lsid: Mapping[str, Any]) -> TransactionState | None:
        """The state of the session's newest transaction (for tests and the server)."""
        state = self.transactions.sessions.get(lsid_of({"lsid": lsid}))
        if state is None or state.transaction is None:
            return None
        return state.transaction.state


#: What mongod runs with readConcern {level: "snapshot"} outside a transaction (snapshot reads).
_SNAPSHOT_READS = frozenset({"find", "aggregate", "distinct"})


def _check_snapshot_read_concern(name: str, command: Mapping[str, Any]) -> bool:
    """True for a snapshot read. mongod refuses a snapshot read concern on any other command
    outside a transaction (InvalidOptions), e.g. a write or listCollections in a snapshot
    session."""
    read_concern = command.get("readConcern")
    if (isinstance(read_concern, Mapping) and read_concern.get("level") == "snapshot"
            and name not in _SNAPSHOT_READS):
        raise StoreError(72, f'Command {name} does not support {{ readConcern: {{ level: '
                             f'"snapshot" }} }}')
    return isinstance(read_concern, Mapping) and read_concern.get("level") == "snapshot"
