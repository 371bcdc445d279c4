"""Authenticating a new connection: the ``Authenticator`` of the connection contract.

:class:`CredentialAuthenticator` drives the pure conversations of
:mod:`asyncmongo.core.auth` over ``conn.command(...)``; it does no I/O of its own. The
connection's ``connect()`` uses it in two steps:

1. ``speculative_document()`` before the hello (and :attr:`sasl_supported_mechs` for the hello's
   ``saslSupportedMechs`` when the mechanism is negotiated);
2. ``await authenticate(conn, hello_reply)`` after it: continue the speculative conversation if
   the server answered it, otherwise run a full one with the negotiated mechanism.

One instance per connection attempt is the simple use (the SCRAM key cache, passed in, is what
is shared across connections). Sharing one instance between concurrent handshakes is also
safe: the speculative conversations started but not yet finished are kept (a bounded few) and
matched to a hello reply by their nonce.

Errors: the server's refusal is an :class:`~asyncmongo.errors.OperationFailure` with the
server's code (18, AuthenticationFailed); a bad server signature, nonce or iteration count is
an OperationFailure too (as in PyMongo); a credential unusable for its mechanism is a
ConfigurationError.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from asyncmongo.core.auth.aws import MONGODB_AWS, NONCE_SIZE, AwsConversation
from asyncmongo.core.auth.aws_sources import AwsCredentialCache
from asyncmongo.core.auth.conversation import Conversation
from asyncmongo.core.auth.failure import explain_failure
from asyncmongo.core.auth.gssapi import GSSAPI, GssapiConversation
from asyncmongo.core.auth.negotiation import (
    Credential,
    negotiated_mechanism,
    new_conversation,
    sasl_supported_mechs_query,
    speculative_mechanism,
)
from asyncmongo.core.auth.scram import ScramCache, generate_nonce
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.runtime.aws_credentials import fetch_aws_credentials
from asyncmongo.runtime.gssapi import security_context

if TYPE_CHECKING:
    from asyncmongo.runtime.connection import Authenticator, Connection

__all__ = ["CommandConnection", "CredentialAuthenticator"]

#: How many speculative conversations may wait for their hello reply at once.
_MAX_PENDING = 16


class CommandConnection(Protocol):
    """The part of ``runtime.connection.Connection`` authentication uses."""

    async def command(
        self, db: str, command: Mapping[str, Any], *, deadline: float | None = None
    ) -> Mapping[str, Any]: ...


class CredentialAuthenticator:
    """Authenticates connections with one credential (SCRAM-SHA-1/256, PLAIN, MONGODB-X509,
    MONGODB-AWS, GSSAPI)."""

    __slots__ = ("_aws_cache", "_cache", "_credential", "_nonce_factory", "_pending")

    def __init__(
        self,
        credential: Credential,
        cache: ScramCache | None = None,
        *,
        aws_cache: AwsCredentialCache | None = None,
        nonce_factory: Callable[[], str] = generate_nonce,
    ) -> None:
        self._credential = credential
        self._cache = cache if cache is not None else ScramCache()
        #: MONGODB-AWS's temporary credentials, shared by the client's connections.
        self._aws_cache = aws_cache if aws_cache is not None else AwsCredentialCache()
        self._nonce_factory = nonce_factory
        self._pending: deque[Conversation] = deque(maxlen=_MAX_PENDING)

    @property
    def credential(self) -> Credential:
        return self._credential

    @property
    def sasl_supported_mechs(self) -> str | None:
        """The hello's ``saslSupportedMechs`` value (``"<source>.<user>"``) or None."""
        return sasl_supported_mechs_query(self._credential)

    def speculative_document(self) -> Mapping[str, Any] | None:
        """The hello's ``speculativeAuthenticate`` document, or None (e.g. for PLAIN)."""
        mechanism = speculative_mechanism(self._credential)
        if mechanism is None:
            return None
        try:
            conversation = self._new(mechanism)
        except ConfigurationError:
            if self._credential.mechanism is not None:
                raise
            # A password SASLprep refuses can still be a SCRAM-SHA-1 user's password (SHA-1
            # does not SASLprep): skip speculation and let negotiation decide.
            return None
        document = conversation.speculative_document()
        if document is not None:
            self._pending.append(conversation)
        return document

    async def authenticate(
        self,
        conn: CommandConnection,
        hello_reply: Mapping[str, Any],
        *,
        deadline: float | None = None,
    ) -> None:
        """Finish (or run) the conversation on ``conn``; raises OperationFailure on refusal."""
        if hello_reply.get("arbiterOnly") is True:
            return  # auth spec: no authentication is possible on an arbiter.
        conversation, command = self._resume(hello_reply)
        origin = None
        if conversation is None:
            mechanism = negotiated_mechanism(self._credential, hello_reply)
            conversation, origin = await self._start(mechanism, conn, deadline)
            command = conversation.first_command()
        await self._converse(conn, conversation, command, deadline, origin)

    async def reauthenticate(
        self,
        conn: CommandConnection,
        hello_reply: Mapping[str, Any],
        *,
        deadline: float | None = None,
    ) -> None:
        """Authenticate ``conn`` again after a ReauthenticationRequired (391) error.

        Auth spec, "Reauthentication": no new hello, a fresh conversation of the mechanism the
        connection's handshake reply (``hello_reply``) negotiates.
        """
        mechanism = negotiated_mechanism(self._credential, hello_reply)
        conversation, origin = await self._start(mechanism, conn, deadline)
        await self._converse(conn, conversation, conversation.first_command(), deadline, origin)

    async def _converse(
        self,
        conn: CommandConnection,
        conversation: Conversation,
        command: dict[str, Any] | None,
        deadline: float | None,
        origin: str | None,
    ) -> None:
        """Run the conversation; a refusal is explained (mechanism, user, where the
        credentials came from, what to check). Auth spec, "Caching Credentials": any
        MONGODB-AWS failure clears the credential cache."""
        try:
            await _converse(conn, conversation, command, deadline)
        except Exception as exc:
            if conversation.mechanism == MONGODB_AWS:
                self._aws_cache.clear()
            if type(exc) is not OperationFailure:
                raise
            key_id = (
                conversation.access_key_id if isinstance(conversation, AwsConversation) else None
            )
            raise explain_failure(
                exc, conversation.mechanism, self._credential, origin, key_id
            ) from exc

    def _resume(
        self, hello_reply: Mapping[str, Any]
    ) -> tuple[Conversation | None, dict[str, Any] | None]:
        """The speculative conversation this hello reply answers and its next command."""
        speculative = hello_reply.get("speculativeAuthenticate")
        if not isinstance(speculative, Mapping):
            return None, None
        for conversation in self._pending:
            if conversation.accepts_speculative(speculative):
                self._pending.remove(conversation)
                return conversation, conversation.resume(speculative)
        return None, None

    async def _start(
        self, mechanism: str, conn: CommandConnection, deadline: float | None
    ) -> tuple[Conversation, str | None]:
        """A new conversation and, for MONGODB-AWS, where its credentials came from (they
        are fetched first; the clock and the random nonce are taken here: the conversation
        itself is pure). GSSAPI builds the Kerberos security context for the connection's
        host."""
        if mechanism == GSSAPI:
            return await self._gssapi(conn), None
        if mechanism != MONGODB_AWS:
            return self._new(mechanism), None
        properties = getattr(self._credential, "mechanism_properties", {})
        fetched = await fetch_aws_credentials(properties, self._aws_cache, deadline=deadline)
        conversation = AwsConversation(
            fetched.credentials, secrets.token_bytes(NONCE_SIZE), datetime.now(UTC)
        )
        return conversation, fetched.source

    async def _gssapi(self, conn: CommandConnection) -> Conversation:
        credential = self._credential
        if not credential.username:
            raise ConfigurationError("GSSAPI needs a username (the Kerberos principal)")
        address = getattr(conn, "address", None)
        host = address[0] if isinstance(address, tuple) else None
        if not isinstance(host, str):
            raise ConfigurationError("GSSAPI needs the server's host name for its principal")
        properties = getattr(credential, "mechanism_properties", None) or {}
        context = await security_context(credential.username, credential.password,
                                         properties, host)
        return GssapiConversation(context, credential.username)

    def _new(self, mechanism: str) -> Conversation:
        return new_conversation(mechanism, self._credential, self._cache, self._nonce_factory)

    def __repr__(self) -> str:
        credential = self._credential
        return (
            f"<CredentialAuthenticator {credential.mechanism or 'negotiated'} "
            f"user={credential.username!r} source={credential.source!r}, "
            f"{len(self._pending)} speculative pending>"
        )


async def _converse(
    conn: CommandConnection,
    conversation: Conversation,
    command: dict[str, Any] | None,
    deadline: float | None,
) -> None:
    """Send commands and feed replies until the conversation says it is done."""
    while command is not None:
        reply = await conn.command(conversation.source, command, deadline=deadline)
        command = conversation.step(reply)


if TYPE_CHECKING:
    # Static proof (mypy) that this class fits the connection contract.
    def _fits_the_contract(authenticator: CredentialAuthenticator) -> Authenticator:
        return authenticator

    def _connection_fits(conn: Connection) -> CommandConnection:
        return conn
