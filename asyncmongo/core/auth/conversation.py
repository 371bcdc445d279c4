"""An authentication conversation as a pure step function over command documents.

Every mechanism is a :class:`Conversation`: :meth:`~Conversation.first_command` gives the first
command, :meth:`~Conversation.step` takes the server's reply and gives the next command or
``None`` when authentication is complete. The runtime only loops::

    command = conversation.first_command()
    while command is not None:
        command = conversation.step(await conn.command(conversation.source, command))

Speculative authentication (handshake spec) is the same loop with its first round trip carried
by the hello: :meth:`~Conversation.speculative_document` goes into the hello and
:meth:`~Conversation.resume` takes the hello reply's ``speculativeAuthenticate`` document.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol

from asyncmongo.core.auth.sasl import (
    parse_sasl_reply,
    sasl_continue_command,
    sasl_start_command,
)
from asyncmongo.core.auth.scram import (
    ScramCache,
    ScramClient,
    ScramMechanism,
    parse_attributes,
    prepare_password,
)
from asyncmongo.errors import InvalidOperation, OperationFailure

__all__ = ["Conversation", "ScramConversation"]


class Conversation(Protocol):
    """One authentication attempt of one mechanism on one connection."""

    @property
    def mechanism(self) -> str:
        """The mechanism name, e.g. ``SCRAM-SHA-256``."""
        ...

    @property
    def source(self) -> str:
        """The database the commands are sent to."""
        ...

    def first_command(self) -> dict[str, Any]:
        """The first command of the conversation."""
        ...

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        """Feed the server's reply; the next command, or None when authenticated."""
        ...

    def speculative_document(self) -> dict[str, Any] | None:
        """The hello's ``speculativeAuthenticate`` value, or None if the mechanism has none.

        Calling it counts as sending the first command.
        """
        ...

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        """Whether a hello's ``speculativeAuthenticate`` reply answers this conversation."""
        ...

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        """Feed the ``speculativeAuthenticate`` reply; the next command or None when done."""
        ...


class _ScramStage(enum.Enum):
    NOT_STARTED = "not started"
    AWAITING_SERVER_FIRST = "awaiting server-first"
    AWAITING_SERVER_FINAL = "awaiting server-final"
    AWAITING_DONE = "awaiting done"
    DONE = "done"


class ScramConversation:
    """SCRAM-SHA-1 / SCRAM-SHA-256 over saslStart/saslContinue (auth spec, both sections).

    Handles both the short conversation (a 4.4+ server honours ``skipEmptyExchange`` and says
    ``done`` with the server signature) and the long one (one more empty ``saslContinue``).
    """

    __slots__ = ("_client", "_conversation_id", "_source", "_stage")

    def __init__(
        self,
        mechanism: ScramMechanism,
        source: str,
        username: str,
        password: str,
        *,
        nonce: str,
        cache: ScramCache,
    ) -> None:
        prepared = prepare_password(mechanism, username, password)
        self._client = ScramClient(mechanism, username, prepared, nonce=nonce, cache=cache)
        self._source = source
        self._conversation_id: Any = None
        self._stage = _ScramStage.NOT_STARTED

    @property
    def mechanism(self) -> str:
        return self._client.mechanism.value

    @property
    def source(self) -> str:
        return self._source

    @property
    def nonce(self) -> str:
        return self._client.nonce

    def first_command(self) -> dict[str, Any]:
        self._expect(_ScramStage.NOT_STARTED)
        payload = self._client.client_first()
        self._stage = _ScramStage.AWAITING_SERVER_FIRST
        return sasl_start_command(self.mechanism, payload, skip_empty_exchange=True)

    def speculative_document(self) -> dict[str, Any]:
        # Handshake spec: the saslStart fields plus the authentication database as "db".
        return {**self.first_command(), "db": self._source}

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        if self._stage is not _ScramStage.AWAITING_SERVER_FIRST:
            return False
        payload = reply.get("payload")
        if not isinstance(payload, bytes | bytearray | memoryview):
            return False
        try:
            server_nonce = parse_attributes(bytes(payload), "server-first-message").get("r")
        except OperationFailure:
            return False
        return server_nonce is not None and server_nonce.startswith(self.nonce)

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._advance(reply, speculative=True)

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._advance(reply, speculative=False)

    def _advance(self, reply: Mapping[str, Any], *, speculative: bool) -> dict[str, Any] | None:
        sasl = parse_sasl_reply(reply, speculative=speculative)
        stage = self._stage
        if stage is _ScramStage.AWAITING_SERVER_FIRST:
            if sasl.done:
                raise OperationFailure("SCRAM: the server ended the conversation too early")
            self._conversation_id = sasl.conversation_id
            client_final = self._client.client_final(sasl.payload)
            self._stage = _ScramStage.AWAITING_SERVER_FINAL
            return sasl_continue_command(self._conversation_id, client_final)
        if stage is _ScramStage.AWAITING_SERVER_FINAL:
            self._client.verify_server_final(sasl.payload)
            if sasl.done:
                self._stage = _ScramStage.DONE
                return None
            # Pre-4.4 servers: one empty round trip more (auth spec, Backwards Compatibility).
            self._stage = _ScramStage.AWAITING_DONE
            return sasl_continue_command(self._conversation_id, b"")
        if stage is _ScramStage.AWAITING_DONE:
            if not sasl.done:
                raise OperationFailure("SCRAM: the server did not finish the conversation")
            self._stage = _ScramStage.DONE
            return None
        raise InvalidOperation(f"SCRAM conversation cannot take a reply when {stage.value}")

    def _expect(self, stage: _ScramStage) -> None:
        if self._stage is not stage:
            raise InvalidOperation(f"SCRAM conversation is {self._stage.value}")

    def __repr__(self) -> str:
        return f"<ScramConversation {self.mechanism} on {self._source!r}: {self._stage.value}>"
