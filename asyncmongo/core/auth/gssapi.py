"""GSSAPI (Kerberos, RFC 4752) as a pure conversation over a security context.

The Kerberos work itself (tickets, tokens, wrapping) belongs to the GSS-API library; this module
only drives the SASL exchange the auth spec describes, over a :class:`SecurityContext` the
runtime builds (``asyncmongo.runtime.gssapi`` wraps the ``gssapi`` package):

1. ``saslStart`` carries the context's first token; each reply's payload is stepped into the
   context and the answer sent with ``saslContinue`` until the context is complete;
2. the server then sends a wrapped 4-byte security-layer offer (RFC 4752 section 3.1): the
   client unwraps it and answers, wrapped, ``0x01 0x00 0x00 0x00`` (no security layer, no
   buffer) followed by the username as the authorization identity;
3. the server answers ``done``.

Also here: the service principal name the context targets, from the SERVICE_NAME, SERVICE_HOST
and SERVICE_REALM mechanism properties.
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
from asyncmongo.errors import InvalidOperation, OperationFailure

__all__ = [
    "GSSAPI",
    "GssapiConversation",
    "SecurityContext",
    "canonicalize_mode",
    "service_principal",
]

GSSAPI = "GSSAPI"
#: RFC 4752 3.1: the client's choice of "no security layer" and a zero maximum buffer size.
NO_SECURITY_LAYER = b"\x01\x00\x00\x00"
#: How many context-establishment round trips a conversation allows (Kerberos needs one or
#: two): a bound against a library or server that never completes.
_MAX_CONTEXT_STEPS = 10


class SecurityContext(Protocol):
    """The initiator's GSS-API security context, as the conversation uses it."""

    @property
    def complete(self) -> bool:
        """Whether the context is established."""
        ...

    def step(self, token: bytes) -> bytes | None:
        """Feed the acceptor's token (empty for the first call); the token to send, if any."""
        ...

    def wrap(self, message: bytes) -> bytes:
        """``message`` protected for integrity only (no confidentiality), as RFC 4752 asks."""
        ...

    def unwrap(self, message: bytes) -> bytes:
        """The content of a wrapped ``message`` from the acceptor."""
        ...


def canonicalize_mode(properties: Mapping[str, Any]) -> str:
    """CANONICALIZE_HOST_NAME as one of "none", "forward" or "forwardAndReverse" (auth spec:
    the legacy ``true`` means forwardAndReverse and ``false`` none)."""
    value = properties.get("CANONICALIZE_HOST_NAME", "none")
    if value is True or value == "true":
        return "forwardAndReverse"
    if value is False or value in ("false", None):
        return "none"
    return str(value)


def service_principal(properties: Mapping[str, Any], host: str) -> tuple[str, bool]:
    """The acceptor's name and whether it is a full Kerberos principal.

    Without SERVICE_REALM it is the host-based service name ``service@host`` (the library maps
    it to ``service/host`` in the default realm); with it, the principal
    ``service/host@realm``. SERVICE_HOST replaces the connection's host.
    """
    service = str(properties.get("SERVICE_NAME") or "mongodb")
    service_host = str(properties.get("SERVICE_HOST") or host)
    realm = properties.get("SERVICE_REALM")
    if realm:
        return f"{service}/{service_host}@{realm}", True
    return f"{service}@{service_host}", False


class _Stage(enum.Enum):
    NOT_STARTED = "not started"
    ESTABLISHING = "establishing the security context"
    AWAITING_OFFER = "awaiting the security layer offer"
    AWAITING_DONE = "awaiting done"
    DONE = "done"


class GssapiConversation:
    """One GSSAPI authentication over one security context; source ``$external``."""

    __slots__ = ("_context", "_conversation_id", "_stage", "_steps", "_username")

    def __init__(self, context: SecurityContext, username: str) -> None:
        self._context = context
        self._username = username
        self._stage = _Stage.NOT_STARTED
        self._conversation_id: Any = None
        self._steps = 0

    @property
    def mechanism(self) -> str:
        return GSSAPI

    @property
    def source(self) -> str:
        return "$external"

    def first_command(self) -> dict[str, Any]:
        if self._stage is not _Stage.NOT_STARTED:
            raise InvalidOperation("GSSAPI conversation already started")
        self._stage = _Stage.ESTABLISHING
        return sasl_start_command(GSSAPI, self._context.step(b"") or b"")

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        parsed = parse_sasl_reply(reply)
        self._conversation_id = parsed.conversation_id
        if self._stage is _Stage.AWAITING_DONE:
            if not parsed.done:
                raise OperationFailure(
                    "GSSAPI: the server did not finish the conversation", None, reply)
            self._stage = _Stage.DONE
            return None
        if parsed.done:
            raise OperationFailure(
                f"GSSAPI: the server ended the conversation while {self._stage.value}",
                None, reply)
        if self._stage is _Stage.ESTABLISHING:
            return self._establish(parsed.payload)
        if self._stage is _Stage.AWAITING_OFFER:
            return self._answer_offer(parsed.payload)
        raise InvalidOperation(f"GSSAPI conversation {self._stage.value}")

    def _establish(self, payload: bytes) -> dict[str, Any]:
        if self._context.complete:
            # The context completed with our last token: this payload is the offer.
            return self._answer_offer(payload)
        self._steps += 1
        if self._steps > _MAX_CONTEXT_STEPS:
            raise OperationFailure(
                f"GSSAPI: no security context after {_MAX_CONTEXT_STEPS} round trips")
        token = self._context.step(payload) or b""
        if self._context.complete:
            self._stage = _Stage.AWAITING_OFFER
        return sasl_continue_command(self._conversation_id, token)

    def _answer_offer(self, payload: bytes) -> dict[str, Any]:
        offer = self._context.unwrap(payload)
        if len(offer) < 4 or not offer[0] & 1:
            raise OperationFailure(
                "GSSAPI: the server does not offer the 'no security layer' option")
        self._stage = _Stage.AWAITING_DONE
        answer = self._context.wrap(NO_SECURITY_LAYER + self._username.encode())
        return sasl_continue_command(self._conversation_id, answer)

    def speculative_document(self) -> None:
        """GSSAPI has no speculative form (handshake spec: only X509, SCRAM and OIDC)."""
        return None

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        return False

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        raise InvalidOperation("GSSAPI does not authenticate speculatively")

    def __repr__(self) -> str:
        return f"<GssapiConversation {self._username!r} {self._stage.value}>"
