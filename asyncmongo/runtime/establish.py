"""Opening a pooled connection, with SDAM told about a failure before the pool reacts to it.

SDAM "Network error when reading or writing" distinguishes where establishment failed: a
network error or timeout while connecting or in the hello changes nothing, one during the
authentication step marks the server Unknown and clears the pool, and a command error in
either (a failing hello, a refused authentication, a shutdown error) does too. Only the code
that drives the handshake knows which step failed, so the pool's ``establish`` factory is this
object: it records when authentication starts and hands the error, with its phase and the
pool generation the connection was made in, to the topology before re-raising it. The pool
then closes the half-made connection and fails the checkout, so events come out in the order
the spec tests expect (PoolCleared before ConnectionClosed and ConnectionCheckOutFailed), for
checkouts and for the minPoolSize filler alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asyncmongo.bson import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.core.error_policy import ErrorPhase
from asyncmongo.runtime.connection import Authenticator, Connection, ConnectionSettings, connect

__all__ = ["Establisher"]

#: (the error, the pool generation, the phase, the serviceId the hello named if it got that far)
ReportError = Callable[[BaseException, int, ErrorPhase, ObjectId | None], Awaitable[None]]


class _PhaseRecorder:
    """An Authenticator that notes when the authentication step begins (and the serviceId
    the hello named, load-balanced: the error is that service's)."""

    __slots__ = ("_inner", "authenticating", "service_id")

    def __init__(self, inner: Authenticator) -> None:
        self._inner = inner
        self.authenticating = False
        self.service_id: ObjectId | None = None

    @property
    def sasl_supported_mechs(self) -> str | None:
        return self._inner.sasl_supported_mechs

    def speculative_document(self) -> Mapping[str, Any] | None:
        return self._inner.speculative_document()

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        self.authenticating = True
        self.service_id = conn.service_id
        await self._inner.authenticate(conn, hello_reply, deadline=deadline)

    async def reauthenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        await self._inner.reauthenticate(conn, hello_reply, deadline=deadline)


class Establisher:
    """The pool's ``establish(connection_id)`` for one server."""

    __slots__ = (
        "_address",
        "_authenticator",
        "_background_timeout",
        "_generation",
        "_report",
        "_settings",
    )

    def __init__(
        self,
        address: Address,
        settings: ConnectionSettings,
        authenticator: Authenticator | None,
        generation: Callable[[], int],
        report: ReportError,
        *,
        background_timeout: float | None = None,
    ) -> None:
        self._address = address
        self._settings = settings
        self._authenticator = authenticator
        self._generation = generation
        self._report = report
        #: CSOT "Background Connection Pooling": the client's timeoutMS (seconds) for each
        #: authentication command of a minPoolSize connection, refreshed per command; None
        #: (timeoutMS unset or 0): socketTimeoutMS, as for any connection. The hello keeps
        #: connectTimeoutMS: the spec's unified tests (command-execution.json) hold a
        #: minPoolSize connection's hello longer than timeoutMS and expect the pool to fill.
        self._background_timeout = background_timeout

    def __repr__(self) -> str:
        return f"<Establisher {self._address}>"

    @property
    def settings(self) -> ConnectionSettings:
        """What the next connection is made with. ``AsyncMongoClient.append_metadata`` swaps
        it: connections made from then on carry the new handshake metadata, connections
        already made keep theirs (handshake spec)."""
        return self._settings

    @settings.setter
    def settings(self, settings: ConnectionSettings) -> None:
        self._settings = settings

    async def __call__(self, connection_id: int) -> Connection:
        """A connection for a checkout (the operation's deadline is the pool's to apply)."""
        return await self._connect(connection_id, None)

    async def background(self, connection_id: int) -> Connection:
        """A connection for the pool's minPoolSize maintenance: connectTimeoutMS for the
        socket and the hello, the client's timeoutMS (refreshed per command) for each
        authentication command."""
        return await self._connect(connection_id, self._background_timeout)

    async def _connect(self, connection_id: int, auth_timeout: float | None) -> Connection:
        generation = self._generation()
        recorder = _PhaseRecorder(self._authenticator) if self._authenticator else None
        try:
            return await connect(
                self._address,
                self._settings,
                id=connection_id,
                authenticator=recorder,
                auth_timeout=auth_timeout,
            )
        except Exception as exc:
            authenticating = recorder is not None and recorder.authenticating
            phase = ErrorPhase.AUTHENTICATING if authenticating else ErrorPhase.CONNECTING
            service_id = recorder.service_id if recorder is not None else None
            await self._report(exc, generation, phase, service_id)
            raise
