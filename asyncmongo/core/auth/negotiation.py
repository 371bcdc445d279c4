"""Which mechanism to use and how to start it (auth spec: "Mechanism Negotiation via
Handshake", "Default Authentication Methods"; handshake spec: "Speculative Authentication").

- No mechanism given: the hello asks ``saslSupportedMechs: "<source>.<username>"`` and carries
  a speculative SCRAM-SHA-256 first message. If the server answered it, SCRAM-SHA-256 goes on;
  otherwise SCRAM-SHA-256 if listed in ``saslSupportedMechs``, else SCRAM-SHA-1 (even if not
  listed, even if the field is absent; never anything else, e.g. PLAIN).
- A mechanism given: it is honoured whatever the server lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from asyncmongo.core.auth.conversation import Conversation, ScramConversation
from asyncmongo.core.auth.plain import PLAIN, PLAIN_DEFAULT_SOURCE, PlainConversation
from asyncmongo.core.auth.scram import ScramCache, ScramMechanism, generate_nonce
from asyncmongo.core.auth.x509 import MONGODB_X509, X509Conversation
from asyncmongo.errors import ConfigurationError

__all__ = [
    "SUPPORTED_MECHANISMS",
    "Credential",
    "negotiated_mechanism",
    "new_conversation",
    "sasl_supported_mechs_query",
    "speculative_mechanism",
]

SCRAM_SHA_1 = ScramMechanism.SCRAM_SHA_1.value
SCRAM_SHA_256 = ScramMechanism.SCRAM_SHA_256.value
SUPPORTED_MECHANISMS = frozenset({SCRAM_SHA_1, SCRAM_SHA_256, PLAIN, MONGODB_X509})
_SCRAM_DEFAULT_SOURCE = "admin"


class Credential(Protocol):
    """What authentication reads from a credential (``MongoCredential`` fits)."""

    @property
    def mechanism(self) -> str | None: ...

    @property
    def source(self) -> str | None: ...

    @property
    def username(self) -> str | None: ...

    @property
    def password(self) -> str | None: ...


def sasl_supported_mechs_query(credential: Credential) -> str | None:
    """The hello's ``saslSupportedMechs`` value: ``"<source>.<username>"`` (username as given,
    not SASLprep'ed) when the mechanism is to be negotiated, else None."""
    if credential.mechanism is not None or credential.username is None:
        return None
    return f"{_source(credential, SCRAM_SHA_256)}.{credential.username}"


def speculative_mechanism(credential: Credential) -> str | None:
    """The mechanism to try in the hello: SCRAM-SHA-256 when negotiating, the given SCRAM
    variant or MONGODB-X509, and None for mechanisms without a speculative form."""
    mechanism = credential.mechanism
    if mechanism is None:
        return SCRAM_SHA_256
    if mechanism in (SCRAM_SHA_1, SCRAM_SHA_256, MONGODB_X509):
        return mechanism
    return None


def negotiated_mechanism(credential: Credential, hello_reply: Mapping[str, Any]) -> str:
    """The mechanism for a full (non-speculative) conversation after the hello."""
    if credential.mechanism is not None:
        return credential.mechanism
    # Not validated (spec: unknown names in the list are no error).
    mechs = hello_reply.get("saslSupportedMechs")
    if isinstance(mechs, list | tuple) and SCRAM_SHA_256 in mechs:
        return SCRAM_SHA_256
    return SCRAM_SHA_1


def new_conversation(
    mechanism: str,
    credential: Credential,
    cache: ScramCache,
    nonce_factory: Callable[[], str] = generate_nonce,
) -> Conversation:
    """A fresh conversation of ``mechanism`` for ``credential``.

    Raises ConfigurationError for a mechanism asyncmongo does not implement or a credential
    missing what the mechanism needs.
    """
    if mechanism in (SCRAM_SHA_1, SCRAM_SHA_256):
        username, password = _username_and_password(credential, mechanism)
        return ScramConversation(
            ScramMechanism(mechanism),
            _source(credential, mechanism),
            username,
            password,
            nonce=nonce_factory(),
            cache=cache,
        )
    if mechanism == PLAIN:
        username, password = _username_and_password(credential, mechanism)
        return PlainConversation(_source(credential, mechanism), username, password)
    if mechanism == MONGODB_X509:
        if credential.password is not None:
            raise ConfigurationError("MONGODB-X509 takes no password")
        return X509Conversation(credential.username)
    raise ConfigurationError(f"authentication mechanism {mechanism!r} is not supported")


def _username_and_password(credential: Credential, mechanism: str) -> tuple[str, str]:
    if not credential.username:
        raise ConfigurationError(f"{mechanism} needs a username")
    if credential.password is None:
        raise ConfigurationError(f"{mechanism} needs a password")
    return credential.username, credential.password


def _source(credential: Credential, mechanism: str) -> str:
    if credential.source:
        return credential.source
    return PLAIN_DEFAULT_SOURCE if mechanism == PLAIN else _SCRAM_DEFAULT_SOURCE
