"""A simulated mongos' transaction router: which transactions it routed, and what it answers
when a commit reaches it for a transaction another mongos routed.

A real mongos keeps the participants of each transaction it routes. A commitTransaction for
a transaction it never routed (a driver retrying on another mongos after a network error) is
recovered from the ``recoveryToken``: the recovery shard answers with the commit decision if
one was made, otherwise NoSuchTransaction, and the transaction is aborted (transactions spec,
mongos-recovery-token tests). The simulated shards share one store, so the decision is the
store's transaction state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.store.transactions import (
    TransactionManager,
    TransactionState,
    lsid_of,
)

__all__ = ["RECOVERY_SHARD_ID", "TransactionRouter"]

#: The shard a simulated mongos names in its transactions' recoveryToken.
RECOVERY_SHARD_ID = "shard0"


class TransactionRouter:
    """The transactions (lsid, txnNumber) one mongos started, and commit recovery for the
    others."""

    __slots__ = ("_routed",)

    def __init__(self) -> None:
        self._routed: set[tuple[Any, int]] = set()

    def refusal(self, name: str, command: Mapping[str, Any],
                transactions: TransactionManager) -> dict[str, Any] | None:
        """The reply to a commitTransaction of a transaction this mongos did not route and
        that was not committed (NoSuchTransaction, the transaction aborted); None: go on."""
        if command.get("autocommit") is not False:
            return None
        lsid_key, txn_number = lsid_of(command), command.get("txnNumber")
        if lsid_key is None or not isinstance(txn_number, int):
            return None
        key = (lsid_key, txn_number)
        if command.get("startTransaction") is True:
            self._routed.add(key)
            return None
        if name != "commitTransaction" or key in self._routed:
            return None
        state = transactions.sessions.get(lsid_key)
        transaction = state.transaction if state is not None else None
        if transaction is not None and transaction.txn_number == txn_number:
            if transaction.state is TransactionState.COMMITTED:
                return None
            if transaction.state is TransactionState.IN_PROGRESS:
                transactions.abort(transaction)
        return error_reply(251, f"Transaction {txn_number} was not committed: recovered "
                                "from the recoveryToken, no commit decision was made",
                           command)

    @staticmethod
    def recovery_token() -> dict[str, Any]:
        """What mongos adds to every reply of a command in a transaction."""
        return {"recoveryShardId": RECOVERY_SHARD_ID}
