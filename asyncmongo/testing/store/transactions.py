"""Sessions, multi-document transactions and retryable-write bookkeeping.

A transaction works on a :class:`TransactionView`: it reads the data as of its first command
(each collection is cloned when the transaction first touches it, or just before anyone else
changes it, whichever comes first) and its writes stay there until commit, which applies them to
the catalog in one step. Conflicts: a document written by another open transaction, or changed
outside since the transaction's snapshot of that collection, fails with 112 WriteConflict
(labelled TransientTransactionError inside a transaction); a plain write to a document an open
transaction has written also fails with 112 (a real server would block until the transaction
ends; a synchronous store cannot wait).

Retryable writes: a write command with ``lsid`` + ``txnNumber`` (outside a transaction) is
applied once; its reply is kept and returned again to a retry with the same pair. An older
``txnNumber`` than the session's newest fails with 225 TransactionTooOld.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.testing.store.collection import Collection
from asyncmongo.testing.store.database import Catalog, Namespace, TransactionView
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.snapshots import SnapshotHistory

TRANSIENT = "TransientTransactionError"
DocumentKey = tuple[str, str, Any]


class TransactionState(enum.Enum):
    """Where a session's newest transaction is."""

    IN_PROGRESS = "in progress"
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(slots=True)
class Transaction:
    """One multi-document transaction of a session."""

    txn_number: int
    view: TransactionView
    state: TransactionState = TransactionState.IN_PROGRESS
    snapshot_versions: dict[Namespace, int] = field(default_factory=dict)
    written: dict[Namespace, set[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class SessionState:
    """What the store remembers about one logical session (lsid)."""

    txn_number: int = -1
    transaction: Transaction | None = None
    retry_replies: dict[int, dict[str, Any]] = field(default_factory=dict)


def write_conflict(labels: tuple[str, ...] = ()) -> StoreError:
    return StoreError(112, "WriteConflict error: this operation conflicted with another "
                           "operation. Please retry your operation or multi-document "
                           "transaction.", labels=labels)


def no_such_transaction(txn_number: int, active: int) -> StoreError:
    return StoreError(251, f"Given transaction number {txn_number} does not match any "
                           f"in-progress transactions. The active transaction number is "
                           f"{active}", labels=(TRANSIENT,))


class TransactionManager:
    """Sessions, open transactions, document locks and write versions."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.sessions: dict[Any, SessionState] = {}
        self.locks: dict[DocumentKey, Transaction] = {}
        self.versions: dict[DocumentKey, int] = {}
        self.version = 0
        self.open_transactions: dict[int, Transaction] = {}
        #: Snapshot reads' retained states (copied before a change, like transactions).
        self.history = SnapshotHistory(catalog)

    def __repr__(self) -> str:
        open_count = sum(1 for s in self.sessions.values() if s.transaction is not None
                         and s.transaction.state is TransactionState.IN_PROGRESS)
        return (f"TransactionManager({len(self.sessions)} sessions, {open_count} open "
                f"transactions, {len(self.locks)} locked documents)")

    def session(self, lsid_key: Any) -> SessionState:
        return self.sessions.setdefault(lsid_key, SessionState())

    # --- plain writes ---------------------------------------------------------------------

    def direct_guard(self, collection: Collection, key: Any) -> None:
        """Installed on catalog collections: a write outside any transaction."""
        document_key = (collection.db_name, collection.name, key)
        if document_key in self.locks:
            raise write_conflict()
        self.snapshot_open_transactions(collection.db_name, collection.name)
        self.version += 1
        self.versions[document_key] = self.version

    def snapshot_open_transactions(self, db_name: str, name: str,
                                   skip: Transaction | None = None) -> None:
        """Before a collection changes: every open transaction that has not looked at it yet
        takes its snapshot now, so it reads the collection as of its own start."""
        for transaction in list(self.open_transactions.values()):
            if transaction is not skip:
                transaction.view.get(db_name, name)
        self.history.before_change(db_name, name)

    # --- retryable writes -----------------------------------------------------------------

    def retry_reply(self, lsid_key: Any, txn_number: int) -> dict[str, Any] | None:
        """The kept reply of an already applied retryable write, or None to apply it now."""
        state = self.session(lsid_key)
        if txn_number < state.txn_number:
            raise StoreError(225, f"Retryable write with txnNumber {txn_number} is prohibited "
                                  f"on session because a newer retryable write with txnNumber "
                                  f"{state.txn_number} has already started on this session.")
        if txn_number in state.retry_replies:
            return state.retry_replies[txn_number]
        self._advance(state, txn_number)
        return None

    def already_applied(self, lsid_key: Any, txn_number: int) -> bool:
        """True if a retryable write with this lsid + txnNumber would be answered from the
        bookkeeping (or refused as too old) instead of being applied (read-only)."""
        state = self.sessions.get(lsid_key)
        return state is not None and (txn_number < state.txn_number
                                      or txn_number in state.retry_replies)

    def remember_reply(self, lsid_key: Any, txn_number: int, reply: dict[str, Any]) -> None:
        self.session(lsid_key).retry_replies[txn_number] = reply

    def _advance(self, state: SessionState, txn_number: int) -> None:
        if txn_number > state.txn_number:
            if state.transaction is not None and (
                    state.transaction.state is TransactionState.IN_PROGRESS):
                self.abort(state.transaction)
            state.txn_number = txn_number
            state.retry_replies = {k: v for k, v in state.retry_replies.items()
                                   if k >= txn_number}

    # --- transactions ---------------------------------------------------------------------

    def transaction_for(self, lsid_key: Any, txn_number: int, start: bool) -> Transaction:
        """The open transaction a command with ``autocommit: false`` belongs to."""
        state = self.session(lsid_key)
        if txn_number < state.txn_number:
            raise StoreError(225, f"Cannot start transaction {txn_number} on session because "
                                  f"a newer transaction {state.txn_number} has already "
                                  "started.")
        if start:
            if txn_number == state.txn_number and state.transaction is not None:
                raise StoreError(251 if state.transaction.state is not
                                 TransactionState.IN_PROGRESS else 50911,
                                 f"Cannot start a transaction at given transaction number "
                                 f"{txn_number} a transaction with the same number is in "
                                 "state " + state.transaction.state.value)
            self._advance(state, txn_number)
            state.transaction = self._begin(txn_number)
            return state.transaction
        transaction = state.transaction
        if (transaction is None or transaction.txn_number != txn_number
                or transaction.state is not TransactionState.IN_PROGRESS):
            raise no_such_transaction(txn_number, state.txn_number)
        return transaction

    def _begin(self, txn_number: int) -> Transaction:
        def guard(collection: Collection, key: Any) -> None:
            self._transactional_write(transaction, collection, key)

        def on_touch(namespace: Namespace) -> None:
            transaction.snapshot_versions.setdefault(namespace, self.version)

        transaction = Transaction(txn_number, TransactionView(self.catalog, guard, on_touch))
        self.open_transactions[id(transaction)] = transaction
        return transaction

    def _transactional_write(self, transaction: Transaction, collection: Collection,
                             key: Any) -> None:
        namespace = (collection.db_name, collection.name)
        document_key = (collection.db_name, collection.name, key)
        owner = self.locks.get(document_key)
        snapshot = transaction.snapshot_versions.setdefault(namespace, self.version)
        if (owner is not None and owner is not transaction) or self.versions.get(
                document_key, 0) > snapshot:
            raise write_conflict((TRANSIENT,))
        self.locks[document_key] = transaction
        transaction.written.setdefault(namespace, set()).add(key)

    def commit(self, lsid_key: Any, txn_number: int) -> None:
        state = self.session(lsid_key)
        transaction = state.transaction
        if transaction is None or transaction.txn_number != txn_number:
            raise no_such_transaction(txn_number, state.txn_number)
        if transaction.state is TransactionState.COMMITTED:
            return
        if transaction.state is TransactionState.ABORTED:
            raise no_such_transaction(txn_number, state.txn_number)
        self._apply(transaction)
        transaction.state = TransactionState.COMMITTED
        self._release(transaction)

    def abort_command(self, lsid_key: Any, txn_number: int) -> None:
        state = self.session(lsid_key)
        transaction = state.transaction
        if transaction is None or transaction.txn_number != txn_number or (
                transaction.state is TransactionState.ABORTED):
            raise no_such_transaction(txn_number, state.txn_number)
        if transaction.state is TransactionState.COMMITTED:
            raise StoreError(256, f"Transaction {txn_number} has been committed.")
        self.abort(transaction)

    def abort(self, transaction: Transaction) -> None:
        transaction.state = TransactionState.ABORTED
        self._release(transaction)

    def abort_all(self) -> None:
        """Abort every session's open transaction (killAllSessions)."""
        for state in self.sessions.values():
            if state.transaction is not None and (
                    state.transaction.state is TransactionState.IN_PROGRESS):
                self.abort(state.transaction)

    def end_session(self, lsid_key: Any) -> None:
        state = self.sessions.pop(lsid_key, None)
        if state is not None and state.transaction is not None and (
                state.transaction.state is TransactionState.IN_PROGRESS):
            self.abort(state.transaction)

    def _release(self, transaction: Transaction) -> None:
        self.open_transactions.pop(id(transaction), None)
        for document_key in [k for k, owner in self.locks.items() if owner is transaction]:
            del self.locks[document_key]

    def _apply(self, transaction: Transaction) -> None:
        for (db_name, name), view in transaction.view.views.items():
            if view is None:
                continue
            self.snapshot_open_transactions(db_name, name, skip=transaction)
            real = self.catalog.get(db_name, name)
            if real is None:
                real = view.clone()
                self.catalog.adopt(real)
            for key in transaction.written.get((db_name, name), set()):
                real.put_raw(key, view.documents.get(key))
                self.version += 1
                self.versions[(db_name, name, key)] = self.version


def lsid_of(command: Mapping[str, Any]) -> Any:
    """A hashable key for the command's logical session id (None without one)."""
    from asyncmongo.testing.store.compare import hash_key

    lsid = command.get("lsid")
    return hash_key(lsid) if isinstance(lsid, Mapping) else None
