"""Sessions, causal consistency, transactions and retryability as pure decisions.

- :mod:`.server_session`: a server session (lsid, txnNumber, last use, dirty) and the pool's
  LIFO / about-to-expire / dirty rules (sessions spec, "Server Session Pool").
- :mod:`.cluster_time`: ``$clusterTime`` gossip (keep the greatest) and operationTime.
- :mod:`.transaction`: the transaction state machine as a transition table.
- :mod:`.decorate`: what a command gets inside a session (lsid, txnNumber, startTransaction,
  autocommit, readConcern with afterClusterTime/atClusterTime, writeConcern rules,
  recoveryToken, $clusterTime).
- :mod:`.retryability`: which commands are retryable writes/reads and which errors retry.

Nothing here does I/O or reads a clock: time and random ids come in as arguments.
"""

from asyncmongo.core.sessions.cluster_time import greater_cluster_time, greater_operation_time
from asyncmongo.core.sessions.server_session import ServerSession, ServerSessionPool
from asyncmongo.core.sessions.transaction import TxnAction, TxnState, transition

__all__ = [
    "ServerSession",
    "ServerSessionPool",
    "TxnAction",
    "TxnState",
    "greater_cluster_time",
    "greater_operation_time",
    "transition",
]
