"""MONGODB-X509: one ``authenticate`` command on $external (auth spec, "MONGODB-X509").

The client certificate's subject is the identity. The ``user`` field is sent only when the
application gave a username (the spec: MUST NOT send one otherwise). Speculatively, the same
document travels in the hello (handshake spec) and a ``speculativeAuthenticate`` reply means
the server authenticated the connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.core.auth.sasl import check_ok
from asyncmongo.errors import InvalidOperation

__all__ = ["MONGODB_X509", "X509Conversation", "x509_authenticate_command"]

MONGODB_X509 = "MONGODB-X509"
X509_SOURCE = "$external"


def x509_authenticate_command(username: str | None) -> dict[str, Any]:
    """``{authenticate: 1, mechanism: "MONGODB-X509"[, user]}``."""
    command: dict[str, Any] = {"authenticate": 1, "mechanism": MONGODB_X509}
    if username is not None:
        command["user"] = username
    return command


class X509Conversation:
    """One ``authenticate`` round trip (or none, when the hello carried it)."""

    __slots__ = ("_started", "_username")

    def __init__(self, username: str | None) -> None:
        self._username = username
        self._started = False

    @property
    def mechanism(self) -> str:
        return MONGODB_X509

    @property
    def source(self) -> str:
        return X509_SOURCE

    def first_command(self) -> dict[str, Any]:
        if self._started:
            raise InvalidOperation("MONGODB-X509 conversation already started")
        self._started = True
        return x509_authenticate_command(self._username)

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        if not self._started:
            raise InvalidOperation("MONGODB-X509 conversation not started")
        check_ok(reply)
        return None

    def speculative_document(self) -> dict[str, Any]:
        return self.first_command()

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        # Stateless: any speculativeAuthenticate reply to an X509 hello is the server's yes.
        return self._started

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        if not self._started:
            raise InvalidOperation("MONGODB-X509 conversation not started")
        return None

    def __repr__(self) -> str:
        return f"<X509Conversation user={self._username!r}>"
