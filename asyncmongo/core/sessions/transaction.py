"""The client-side transaction state machine (transactions spec, "Transaction states").

Everything that changes a session's transaction state is in this one table (h11's rule):
``transition(state, action)`` returns the next state and whether the action must be sent to
the server, or raises InvalidOperation with the spec's message. COMMITTED_EMPTY is a commit
of a transaction that ran no command: nothing was sent, and retrying the commit sends
nothing either. It reports as "committed" to the outside.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from asyncmongo.errors import InvalidOperation

__all__ = ["Step", "TxnAction", "TxnState", "transition"]


class TxnState(Enum):
    """Transactions spec states (values are the unified format's names)."""

    NONE = "none"
    STARTING = "starting"
    IN_PROGRESS = "in_progress"
    COMMITTED = "committed"
    COMMITTED_EMPTY = "committed_empty"
    ABORTED = "aborted"

    @property
    def public_name(self) -> str:
        """What ``assertSessionTransactionState`` compares with."""
        return "committed" if self is TxnState.COMMITTED_EMPTY else self.value

    @property
    def in_transaction(self) -> bool:
        return self in (TxnState.STARTING, TxnState.IN_PROGRESS)


class TxnAction(Enum):
    """What the application does with the session."""

    START = "startTransaction"
    OPERATE = "operation"
    COMMIT = "commitTransaction"
    ABORT = "abortTransaction"


@dataclass(frozen=True, slots=True)
class Step:
    """The outcome of an action: the next state and whether a command goes to the server."""

    state: TxnState
    send: bool


_S = TxnState
_A = TxnAction
_TABLE: dict[tuple[TxnState, TxnAction], Step | str] = {
    (_S.NONE, _A.START): Step(_S.STARTING, False),
    (_S.STARTING, _A.START): "Transaction already in progress",
    (_S.IN_PROGRESS, _A.START): "Transaction already in progress",
    (_S.COMMITTED, _A.START): Step(_S.STARTING, False),
    (_S.COMMITTED_EMPTY, _A.START): Step(_S.STARTING, False),
    (_S.ABORTED, _A.START): Step(_S.STARTING, False),
    # An operation in a transaction starts it on the server; one after the transaction ended
    # runs outside any transaction and resets the state (the session is unpinned).
    (_S.NONE, _A.OPERATE): Step(_S.NONE, True),
    (_S.STARTING, _A.OPERATE): Step(_S.IN_PROGRESS, True),
    (_S.IN_PROGRESS, _A.OPERATE): Step(_S.IN_PROGRESS, True),
    (_S.COMMITTED, _A.OPERATE): Step(_S.NONE, True),
    (_S.COMMITTED_EMPTY, _A.OPERATE): Step(_S.NONE, True),
    (_S.ABORTED, _A.OPERATE): Step(_S.NONE, True),
    (_S.NONE, _A.COMMIT): "No transaction started",
    (_S.STARTING, _A.COMMIT): Step(_S.COMMITTED_EMPTY, False),
    (_S.IN_PROGRESS, _A.COMMIT): Step(_S.COMMITTED, True),
    (_S.COMMITTED, _A.COMMIT): Step(_S.COMMITTED, True),
    (_S.COMMITTED_EMPTY, _A.COMMIT): Step(_S.COMMITTED_EMPTY, False),
    (_S.ABORTED, _A.COMMIT): "Cannot call commitTransaction after calling abortTransaction",
    (_S.NONE, _A.ABORT): "No transaction started",
    (_S.STARTING, _A.ABORT): Step(_S.ABORTED, False),
    (_S.IN_PROGRESS, _A.ABORT): Step(_S.ABORTED, True),
    (_S.COMMITTED, _A.ABORT): "Cannot call abortTransaction after calling commitTransaction",
    (_S.COMMITTED_EMPTY, _A.ABORT): (
        "Cannot call abortTransaction after calling commitTransaction"
    ),
    (_S.ABORTED, _A.ABORT): "Cannot call abortTransaction twice",
}


def transition(state: TxnState, action: TxnAction) -> Step:
    """The next step for ``action`` in ``state`` (InvalidOperation when not allowed)."""
    outcome = _TABLE[(state, action)]
    if isinstance(outcome, str):
        raise InvalidOperation(outcome)
    return outcome
