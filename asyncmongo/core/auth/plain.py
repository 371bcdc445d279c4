"""PLAIN (RFC 4616), MongoDB's LDAP proxy authentication: one saslStart, source $external.

The payload is ``authzid NUL authcid NUL passwd`` with an empty authzid (the auth spec shows both
forms; MongoDB accepts either). The password is sent as given (no SASLprep), as the other
MongoDB drivers do: LDAP compares the exact string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.core.auth.sasl import parse_sasl_reply, sasl_start_command
from asyncmongo.errors import InvalidOperation, OperationFailure

__all__ = ["PLAIN", "PlainConversation", "plain_payload"]

PLAIN = "PLAIN"
#: auth spec: "the $external database must be used for authentication".
PLAIN_DEFAULT_SOURCE = "$external"


def plain_payload(username: str, password: str) -> bytes:
    """``\\x00username\\x00password`` in UTF-8."""
    return b"\x00" + username.encode() + b"\x00" + password.encode()


class PlainConversation:
    """The one-step PLAIN conversation: the saslStart reply must say ``done``."""

    __slots__ = ("_password", "_source", "_started", "_username")

    def __init__(self, source: str, username: str, password: str) -> None:
        self._source = source
        self._username = username
        self._password = password
        self._started = False

    @property
    def mechanism(self) -> str:
        return PLAIN

    @property
    def source(self) -> str:
        return self._source

    def first_command(self) -> dict[str, Any]:
        if self._started:
            raise InvalidOperation("PLAIN conversation already started")
        self._started = True
        return sasl_start_command(PLAIN, plain_payload(self._username, self._password))

    def step(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        if not self._started:
            raise InvalidOperation("PLAIN conversation not started")
        if not parse_sasl_reply(reply).done:
            raise OperationFailure("PLAIN: the server did not finish the conversation", None, reply)
        return None

    def speculative_document(self) -> None:
        """PLAIN has no speculative form (handshake spec: only X509, SCRAM and OIDC)."""
        return None

    def accepts_speculative(self, reply: Mapping[str, Any]) -> bool:
        return False

    def resume(self, reply: Mapping[str, Any]) -> dict[str, Any] | None:
        raise InvalidOperation("PLAIN does not authenticate speculatively")

    def __repr__(self) -> str:
        return f"<PlainConversation on {self._source!r}>"
