"""Sessions: ``async with client.start_session() as s:`` and ``session=s`` on any operation.

``await s.with_transaction(callback)`` runs ``callback(s)`` in a transaction and retries it
(sessions spec, transactions spec, convenient transactions API). The pieces:

- :mod:`.options`: SessionOptions and TransactionOptions.
- :mod:`.session`: AsyncClientSession, one class: its public surface, its transactions and
  what the executor asks of it (``asyncmongo.runtime.attempt.OperationSession``).
- :mod:`.implicit`: ImplicitSession, what an operation without ``session=`` runs in.
- :mod:`.transaction`: the commands that end a transaction, and its ``async with`` form.
- :mod:`.with_transaction`: the convenient API's retry loop and its time budget.
- :mod:`.pool`: the client's server session pool and endSessions on close.
- :mod:`asyncmongo.core.sessions`: the pure rules all of these apply.

The package stands on the runtime and the core; it knows the client only through
:class:`~asyncmongo.sessions.session.SessionOwner`.
"""

from __future__ import annotations

from asyncmongo.core.sessions.labels import TRANSIENT_TRANSACTION_ERROR, UNKNOWN_COMMIT_RESULT
from asyncmongo.runtime.attempt import SessionStep
from asyncmongo.sessions.options import SessionOptions, TransactionOptions
from asyncmongo.sessions.pool import END_SESSIONS_BATCH, ServerSessions
from asyncmongo.sessions.session import AsyncClientSession, SessionOwner
from asyncmongo.sessions.with_transaction import (
    BACKOFF_INITIAL_S,
    BACKOFF_MAX_S,
    WITH_TRANSACTION_TIMEOUT_S,
)

__all__ = [
    "BACKOFF_INITIAL_S",
    "BACKOFF_MAX_S",
    "END_SESSIONS_BATCH",
    "TRANSIENT_TRANSACTION_ERROR",
    "UNKNOWN_COMMIT_RESULT",
    "WITH_TRANSACTION_TIMEOUT_S",
    "AsyncClientSession",
    "ServerSessions",
    "SessionOptions",
    "SessionOwner",
    "SessionStep",
    "TransactionOptions",
]
