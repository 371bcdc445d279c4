"""The simulated server's half of GSSAPI (Kerberos) authentication, as mongod does it.

mongod accepts a GSSAPI saslStart with its service key (a keytab), establishes the security
context with the client's tokens, then sends a wrapped security-layer offer (RFC 4752 section
3.1: "no security layer" only) and checks the client's wrapped answer: the chosen layer and the
authorization identity, which must be the authenticated principal. The user is the ``$external``
user named by that principal.

The acceptor needs the ``gssapi`` package and a keytab holding the service principal (see
:class:`asyncmongo.testing.kdc.KerberosRealm`), given to
:meth:`asyncmongo.testing.scram.UserDirectory.enable_gssapi`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from asyncmongo.errors import ConfigurationError, OperationFailure

__all__ = ["GssapiAcceptor"]

#: RFC 4752: the offer's first byte is a bit mask of layers (1: none); three bytes of buffer size.
_OFFER = b"\x01\x00\x00\x00"


def _import_gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise ConfigurationError(
            "GSSAPI in asyncmongo.testing needs the 'gssapi' package") from None
    return gssapi


def _failed(reason: str) -> OperationFailure:
    # mongod logs the reason and answers the client only "Authentication failed.".
    return OperationFailure("Authentication failed.", 18,
                            {"codeName": "AuthenticationFailed", "reason": reason})


class GssapiAcceptor:
    """One GSSAPI conversation on the server: ``step(payload) -> (payload, done)``.

    ``principal`` is the authenticated client principal once the conversation is done.
    """

    __slots__ = ("_context", "_gssapi", "_stage", "principal")

    def __init__(self, keytab: Path | str) -> None:
        self._gssapi = gssapi = _import_gssapi()
        try:
            credentials = gssapi.Credentials(usage="accept", store={"keytab": str(keytab)})
        except gssapi.exceptions.GSSError as exc:
            raise _failed(f"no acceptor credentials in {keytab}: {exc}") from exc
        self._context = gssapi.SecurityContext(creds=credentials, usage="accept")
        self._stage = "establishing"
        self.principal: str | None = None

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        gssapi = self._gssapi
        try:
            if self._stage == "establishing":
                if self._context.complete:
                    # The client's (empty) message after the context completed: make the offer.
                    self._stage = "offered"
                    return self._context.wrap(_OFFER, False).message, False
                token = self._context.step(payload) or b""
                return token, False
            if self._stage == "offered":
                answer = self._context.unwrap(payload).message
                return b"", self._finish(answer)
        except gssapi.exceptions.GSSError as exc:
            raise _failed(f"GSS-API: {exc}") from exc
        raise OperationFailure("GSSAPI: unexpected message after the conversation ended", 17)

    def _finish(self, answer: bytes) -> bool:
        if len(answer) < 4 or answer[0] != 1:
            raise _failed("the client chose a security layer other than none")
        authenticated = str(self._context.initiator_name)
        authzid = answer[4:].decode("utf-8", "replace")
        if authzid and authzid != authenticated:
            raise _failed(f"authorization identity {authzid!r} is not {authenticated!r}")
        self._stage = "done"
        self.principal = authenticated
        return True
