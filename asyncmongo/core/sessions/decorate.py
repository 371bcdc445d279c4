"""What a command gets when it runs in a session (sessions, causal-consistency, transactions,
snapshot-reads and retryable-writes specs), as one pure function of a :class:`SessionFields`.

- every command: ``lsid``; ``$clusterTime`` when the deployment gossips it;
- a retryable write: ``txnNumber``;
- in a transaction: ``txnNumber`` and ``autocommit: false`` on every command,
  ``startTransaction: true`` and the transaction's ``readConcern`` (with ``afterClusterTime``
  in a causally consistent session) on the first one only; no other ``readConcern`` and no
  ``writeConcern`` except on commitTransaction/abortTransaction;
- a read outside a transaction: ``readConcern.afterClusterTime`` (causal consistency); a write
  that accepts it (read-write-concern spec, "afterClusterTime"): ``{afterClusterTime}``;
- in a snapshot session, EVERY command except getMore/killCursors: ``{level: snapshot,
  atClusterTime}`` (atClusterTime once known). Snapshot sessions spec, "Sending readConcern
  to the server on all commands": writes and list commands carry it too, so the server
  refuses them (InvalidOptions) instead of running them outside the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.sessions.cluster_time import as_timestamp

__all__ = [
    "READ_CONCERN_COMMANDS",
    "PlainSessionFields",
    "SessionFields",
    "abort_command",
    "commit_command",
    "decorate",
    "decorate_plain",
    "snapshot_time_of",
]

#: Commands that accept a readConcern (outside transactions): causal consistency and
#: snapshot reads apply to these only.
READ_CONCERN_COMMANDS: Final = frozenset(
    {"find", "aggregate", "distinct", "count", "geoNear", "mapReduce"}
)
#: Read-write-concern spec, "afterClusterTime": writes that accept a readConcern carrying only
#: afterClusterTime (causal consistency orders them too).
AFTER_CLUSTER_TIME_WRITE_COMMANDS: Final = frozenset(
    {
        "insert",
        "update",
        "findAndModify",
        "delete",
        "bulkWrite",
        "create",
        "createIndexes",
        "drop",
        "dropDatabase",
        "dropIndexes",
    }
)
TRANSACTION_END_COMMANDS: Final = frozenset({"commitTransaction", "abortTransaction"})
#: Commands of a cursor already opened in the session: they never carry a readConcern.
CURSOR_COMMANDS: Final = frozenset({"getMore", "killCursors"})
#: Transactions spec: a retried commitTransaction uses w: majority and this wtimeout.
COMMIT_RETRY_WTIMEOUT_MS: Final = 10_000


class SessionFields:
    """The session state one command needs (built by the session for each attempt).

    A plain ``__slots__`` class rather than a frozen dataclass: one is built per operation
    attempt, and a frozen dataclass's ``__init__`` costs an ``object.__setattr__`` call per
    field. Treat it as immutable all the same.
    """

    __slots__ = (
        "after_cluster_time",
        "cluster_time",
        "in_transaction",
        "lsid",
        "snapshot",
        "snapshot_time",
        "starting_transaction",
        "transaction_read_concern",
        "txn_number",
    )

    #: True for a :class:`PlainSessionFields`: only lsid, txnNumber and $clusterTime to add.
    plain: bool = False

    def __init__(
        self,
        lsid: Mapping[str, Any] | None = None,
        txn_number: int | None = None,
        in_transaction: bool = False,
        starting_transaction: bool = False,
        transaction_read_concern: Mapping[str, Any] | None = None,
        after_cluster_time: Timestamp | None = None,
        snapshot: bool = False,
        snapshot_time: Timestamp | None = None,
        cluster_time: Mapping[str, Any] | None = None,
    ) -> None:
        self.lsid = lsid
        self.txn_number = txn_number
        self.in_transaction = in_transaction
        self.starting_transaction = starting_transaction
        self.transaction_read_concern = transaction_read_concern
        self.after_cluster_time = after_cluster_time
        self.snapshot = snapshot
        self.snapshot_time = snapshot_time
        self.cluster_time = cluster_time

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELD_ORDER)
        return f"SessionFields({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionFields):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _FIELD_ORDER)

    __hash__ = None  # type: ignore[assignment]  # its documents are dicts


class PlainSessionFields(SessionFields):
    """The fields of a session outside a transaction, neither snapshot nor causally
    consistent (an implicit session's, every operation): lsid, txnNumber and $clusterTime.

    The other fields are class-level constants, so an instance is three stores, and
    ``decorate`` takes its short path for it (``plain``)."""

    __slots__ = ()

    plain = True
    in_transaction = False
    starting_transaction = False
    transaction_read_concern = None
    after_cluster_time = None
    snapshot = False
    snapshot_time = None

    def __init__(
        self,
        lsid: Mapping[str, Any] | None,
        txn_number: int | None,
        cluster_time: Mapping[str, Any] | None,
    ) -> None:
        self.lsid = lsid
        self.txn_number = txn_number
        self.cluster_time = cluster_time


_FIELD_ORDER: Final = (
    "lsid",
    "txn_number",
    "in_transaction",
    "starting_transaction",
    "transaction_read_concern",
    "after_cluster_time",
    "snapshot",
    "snapshot_time",
    "cluster_time",
)


def decorate(command: Mapping[str, Any], fields: SessionFields) -> dict[str, Any]:
    """A copy of ``command`` with the session's fields (see the module docstring)."""
    if fields.plain:  # every operation of an implicit session: the short path
        return decorate_plain(command, fields.lsid, fields.txn_number, fields.cluster_time)
    document = dict(command)
    name = next(iter(document), "")
    if fields.lsid is not None:
        document["lsid"] = fields.lsid
    if fields.in_transaction:
        _transaction_fields(document, name, fields)
    else:
        if fields.txn_number is not None:
            document["txnNumber"] = fields.txn_number
        if name in READ_CONCERN_COMMANDS or (fields.snapshot and name not in CURSOR_COMMANDS):
            if (
                fields.snapshot
                or fields.after_cluster_time is not None
                or "readConcern" in document
            ):
                _read_concern(document, fields)  # else there is no read concern to write
        elif name in AFTER_CLUSTER_TIME_WRITE_COMMANDS and fields.after_cluster_time is not None:
            document["readConcern"] = {"afterClusterTime": fields.after_cluster_time}
    if fields.cluster_time is not None:
        document["$clusterTime"] = fields.cluster_time
    return document


def decorate_plain(
    command: Mapping[str, Any],
    lsid: Mapping[str, Any] | None,
    txn_number: int | None,
    cluster_time: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """``decorate`` for a session outside a transaction, neither snapshot nor causally
    consistent (``PlainSessionFields``; an implicit session's, every operation), given its
    three fields without an object to hold them."""
    document = dict(command)
    if lsid is not None:
        document["lsid"] = lsid
    if txn_number is not None:
        document["txnNumber"] = txn_number
    # what the general path does when there is neither snapshot nor afterClusterTime:
    # an existing readConcern of a read command is written back as a copy
    if "readConcern" in document and next(iter(document)) in READ_CONCERN_COMMANDS:
        concern = dict(document["readConcern"] or {})
        if concern:
            document["readConcern"] = concern
    if cluster_time is not None:
        document["$clusterTime"] = cluster_time
    return document


def _transaction_fields(document: dict[str, Any], name: str, fields: SessionFields) -> None:
    document.pop("readConcern", None)
    if name not in TRANSACTION_END_COMMANDS:
        document.pop("writeConcern", None)
    document["txnNumber"] = fields.txn_number
    if fields.starting_transaction:
        document["startTransaction"] = True
        concern = dict(fields.transaction_read_concern or {})
        if fields.after_cluster_time is not None:
            concern["afterClusterTime"] = fields.after_cluster_time
        if concern:
            document["readConcern"] = concern
    document["autocommit"] = False


def _read_concern(document: dict[str, Any], fields: SessionFields) -> None:
    concern = dict(document.get("readConcern") or {})
    if fields.snapshot:
        concern["level"] = "snapshot"
        if fields.snapshot_time is not None:
            concern["atClusterTime"] = fields.snapshot_time
    elif fields.after_cluster_time is not None:
        concern["afterClusterTime"] = fields.after_cluster_time
    if concern:
        document["readConcern"] = concern


def commit_command(
    write_concern: Mapping[str, Any] | None,
    max_commit_time_ms: int | None,
    recovery_token: Mapping[str, Any] | None,
    *,
    retry: bool,
) -> dict[str, Any]:
    """commitTransaction; a retry (or a second commit) upgrades to w: majority keeping the
    other write concern fields, with wtimeout 10 s unless one was given (transactions spec,
    "Majority write concern is used when retrying commitTransaction")."""
    command: dict[str, Any] = {"commitTransaction": 1}
    concern = dict(write_concern or {})
    if retry:
        concern["w"] = "majority"
        concern.setdefault("wtimeout", COMMIT_RETRY_WTIMEOUT_MS)
    if concern:
        command["writeConcern"] = concern
    if max_commit_time_ms is not None:
        command["maxTimeMS"] = max_commit_time_ms
    if recovery_token is not None:
        command["recoveryToken"] = recovery_token
    return command


def abort_command(
    write_concern: Mapping[str, Any] | None, recovery_token: Mapping[str, Any] | None
) -> dict[str, Any]:
    """abortTransaction with the transaction's write concern and recovery token."""
    command: dict[str, Any] = {"abortTransaction": 1}
    if write_concern:
        command["writeConcern"] = dict(write_concern)
    if recovery_token is not None:
        command["recoveryToken"] = recovery_token
    return command


def snapshot_time_of(reply: Mapping[str, Any]) -> Timestamp | None:
    """Snapshot reads: the ``atClusterTime`` of the first read (in ``cursor`` or top level)."""
    cursor = reply.get("cursor")
    if isinstance(cursor, Mapping):
        value = as_timestamp(cursor.get("atClusterTime"))
        if value is not None:
            return value
    return as_timestamp(reply.get("atClusterTime"))
