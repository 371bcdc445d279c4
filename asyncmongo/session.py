"""Sessions: the public names, in one place (``from asyncmongo.session import ...``).

``async with client.start_session() as s:`` gives a session; pass it as ``session=s`` to any
operation. ``await s.with_transaction(callback)`` runs ``callback(s)`` in a transaction and
retries it (sessions spec, transactions spec, convenient transactions API). The pieces:

- :mod:`asyncmongo.session_options`: SessionOptions and TransactionOptions.
- :mod:`asyncmongo.client_session`: AsyncClientSession, assembled from
  :mod:`asyncmongo.session_state` (its fields and bookkeeping), :mod:`asyncmongo.session_hooks`
  (what the executor asks of a session) and :mod:`asyncmongo.session_transactions` (start /
  commit / abort).
- :mod:`asyncmongo.with_transaction`: the convenient API's retry loop and its time budget.
- :mod:`asyncmongo.session_binding`: ``session=`` on API methods and cursors.
- :mod:`asyncmongo.session_pool`: the client's side (start_session, the server session pool,
  endSessions on close).
- :mod:`asyncmongo.core.sessions`: the pure rules all of these apply.
"""

from __future__ import annotations

from asyncmongo.client_session import AsyncClientSession, SessionStep, session_scope
from asyncmongo.core.sessions.labels import TRANSIENT_TRANSACTION_ERROR, UNKNOWN_COMMIT_RESULT
from asyncmongo.runtime.executor import bound_session
from asyncmongo.session_binding import SessionRunner, sessions_bound
from asyncmongo.session_options import SessionOptions, TransactionOptions
from asyncmongo.session_pool import END_SESSIONS_BATCH, ClientSessions
from asyncmongo.with_transaction import (
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
    "ClientSessions",
    "SessionOptions",
    "SessionRunner",
    "SessionStep",
    "TransactionOptions",
    "bound_session",
    "session_scope",
    "sessions_bound",
]
