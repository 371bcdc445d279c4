"""mongod's ``onPrimaryTransactionalWrite`` fail point, which the retryable-writes tests use.

mongod evaluates it on the primary each time a statement of a retryable write (a write with
``lsid`` + ``txnNumber`` outside a transaction) is applied, i.e. once per document inserted
or per update/delete statement, never for a statement the retry answers from the session's
retryable-write bookkeeping. When it fires it ends the client connection (``closeConnection``,
true unless given as false) and, with ``failBeforeCommitExceptionCode``, throws that code
before the write commits, so the statement is not applied. Without that code the write is
applied and recorded, so the driver's retry must be answered from the bookkeeping.

This module decides, for one command, which statement (if any) the fail point fires on; the
server (``asyncmongo.testing.server``) carries out the verdict. Pure: no asyncio.

Simplification: the store remembers retryable writes per command, not per statement, so when
``failBeforeCommitExceptionCode`` fires on statement *i* of a multi-statement command with the
connection closed, none of the command is applied (mongod keeps statements 0..i-1 and answers
them from its bookkeeping on the retry). The client sees the same outcome whenever its retry
runs; it differs only if the command is never retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.failpoint import FailPointMode, FailPointState, parse_mode

NAME = "onPrimaryTransactionalWrite"

#: The field holding a write command's statements (findAndModify has exactly one).
_STATEMENTS = {"insert": "documents", "update": "updates", "delete": "deletes",
               "bulkWrite": "ops"}


@dataclass(frozen=True, slots=True)
class PrimaryWriteFault:
    """The ``data`` of an ``onPrimaryTransactionalWrite`` fail point."""

    close_connection: bool = True
    fail_before_commit_code: int | None = None

    @classmethod
    def from_document(cls, data: Mapping[str, Any]) -> PrimaryWriteFault:
        """Parse ``data``; a malformed one is a ConfigurationError (the server's BadValue)."""
        code = data.get("failBeforeCommitExceptionCode")
        if code is not None and (isinstance(code, bool) or not isinstance(code, (int, float))):
            raise ConfigurationError("failBeforeCommitExceptionCode must be a number")
        return cls(close_connection=bool(data.get("closeConnection", True)),
                   fail_before_commit_code=int(code) if code is not None else None)


@dataclass(slots=True)
class PrimaryWritePoint(FailPointState):
    """A configured ``onPrimaryTransactionalWrite``: the mode (counted per statement) and its
    :class:`PrimaryWriteFault`."""

    fault: PrimaryWriteFault = field(default_factory=PrimaryWriteFault)

    @classmethod
    def from_command(cls, command: Mapping[str, Any]) -> PrimaryWritePoint:
        """Parse a ``configureFailPoint: "onPrimaryTransactionalWrite"`` command."""
        mode, remaining = parse_mode(command.get("mode"))
        data = command.get("data", {})
        if not isinstance(data, Mapping):
            raise ConfigurationError("configureFailPoint data must be a document")
        return cls(mode=mode, remaining=remaining, fault=PrimaryWriteFault.from_document(data))

    def __repr__(self) -> str:
        return f"<FailPoint {NAME} {self.mode.value} remaining={self.remaining} {self.fault}>"


@dataclass(frozen=True, slots=True)
class PrimaryWriteVerdict:
    """The fail point fired on statement ``index`` of the command."""

    fault: PrimaryWriteFault
    index: int

    @property
    def applies_write(self) -> bool:
        """True when the statement is applied before the fault (no failBeforeCommit code)."""
        return self.fault.fail_before_commit_code is None


def statement_count(command: Mapping[str, Any]) -> int:
    """How many statements a write command carries (a malformed list counts as none: the
    store answers its error)."""
    name = next(iter(command), "")
    if name in ("findAndModify", "findandmodify"):
        return 1
    statements = command.get(_STATEMENTS.get(name, ""))
    return len(statements) if isinstance(statements, list) else 0


def evaluate(point: FailPointState | None, command: Mapping[str, Any]
             ) -> PrimaryWriteVerdict | None:
    """Count the fail point's activations over the statements the primary is about to apply
    for ``command`` and say where it fires, if it does.

    The caller passes only commands the store will apply now (not a retry answered from the
    bookkeeping) on a primary; this checks that the command is a retryable write (``txnNumber``
    outside a transaction: a transaction's writes commit through another path)."""
    if not isinstance(point, PrimaryWritePoint) or point.mode is FailPointMode.OFF:
        return None
    if next(iter(command), "") not in (*_STATEMENTS, "findAndModify", "findandmodify"):
        return None
    if "txnNumber" not in command or "lsid" not in command or "autocommit" in command:
        return None
    for index in range(statement_count(command)):
        if point.activate():
            return PrimaryWriteVerdict(point.fault, index)
    return None
