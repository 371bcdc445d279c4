"""MONGODB-OIDC: the callback protocol and the SASL documents (auth spec, "MONGODB-OIDC").

The callback protocol carries PyMongo's names (``pymongo.auth_oidc``) so a callback written
for PyMongo works unchanged: an :class:`OIDCCallback` is given an :class:`OIDCCallbackContext`
(timeout, API version, username, and for the human flow the server's :class:`OIDCIdPInfo` and
a cached refresh token) and returns an :class:`OIDCCallbackResult`. ``fetch`` may be a plain
method or a coroutine; a bare callable taking the context fits as well.

The conversation documents are pure functions:

- one step: ``saslStart`` with a ``JwtStepRequest`` payload ``{jwt}`` (machine callbacks,
  built-in environments, and any cached access token); the same fields plus ``db`` go into
  the hello as ``speculativeAuthenticate``;
- two steps (human flow without a cached token): ``saslStart`` with a
  ``PrincipalStepRequest`` ``{n?}``, the server answers the ``IdpInfo``, then ``saslContinue``
  with the ``JwtStepRequest``.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from asyncmongo.bson import decode, encode
from asyncmongo.core.auth.sasl import parse_sasl_reply, sasl_continue_command, sasl_start_command
from asyncmongo.errors import ConfigurationError, OperationFailure

__all__ = [
    "CALLBACK_VERSION",
    "DEFAULT_ALLOWED_HOSTS",
    "HUMAN_CALLBACK_TIMEOUT_SECONDS",
    "MACHINE_CALLBACK_TIMEOUT_SECONDS",
    "MIN_CALLBACK_INTERVAL_SECONDS",
    "MONGODB_OIDC",
    "OIDCCallback",
    "OIDCCallbackContext",
    "OIDCCallbackResult",
    "OIDCIdPInfo",
    "callback_result",
    "host_allowed",
    "idp_info_from_reply",
    "jwt_continue_command",
    "jwt_start_command",
    "principal_start_command",
    "speculative_document",
]

MONGODB_OIDC = "MONGODB-OIDC"
OIDC_SOURCE = "$external"
#: Auth spec, "OIDC Callback": "Drivers MUST pass 1 for the initial callback API version".
CALLBACK_VERSION = 1
#: Without CSOT the machine callback gets 1 minute; the human callback always 5 minutes.
MACHINE_CALLBACK_TIMEOUT_SECONDS = 60.0
HUMAN_CALLBACK_TIMEOUT_SECONDS = 300.0
#: "Credential Caching": at least 100ms between two callback invocations.
MIN_CALLBACK_INTERVAL_SECONDS = 0.1
#: ALLOWED_HOSTS' default (the human flow refuses other hosts before calling back).
DEFAULT_ALLOWED_HOSTS = (
    "*.mongodb.net",
    "*.mongodb-qa.net",
    "*.mongodb-dev.net",
    "*.mongodbgov.net",
    "localhost",
    "127.0.0.1",
    "::1",
    "*.mongo.com",
)


@dataclass(frozen=True, slots=True)
class OIDCIdPInfo:
    """The identity provider the server names in the two-step conversation's first reply."""

    issuer: str
    clientId: str | None = None
    requestScopes: list[str] | None = None


@dataclass(frozen=True, slots=True)
class OIDCCallbackContext:
    """What a callback is told: how long it may take (``timeout_seconds``; it should give up
    after that), the callback API ``version``, the ``username`` of the credential, and in the
    human flow the server's ``idp_info`` and the cached ``refresh_token``, if any."""

    timeout_seconds: float
    username: str | None
    version: int = CALLBACK_VERSION
    refresh_token: str | None = None
    idp_info: OIDCIdPInfo | None = None


@dataclass(frozen=True, slots=True)
class OIDCCallbackResult:
    """A callback's answer: the access token, optionally its lifetime and a refresh token
    (the human flow passes the refresh token back on the next call)."""

    access_token: str
    expires_in_seconds: float | None = None
    refresh_token: str | None = field(default=None, repr=False)


class OIDCCallback(abc.ABC):
    """Fetches OIDC credentials (the ``OIDC_CALLBACK`` or ``OIDC_HUMAN_CALLBACK`` property).

    ``fetch`` may be ``def`` or ``async def``. A ``def`` runs on the event loop, so it should
    return quickly (an ``async def`` should be preferred for network calls).
    """

    @abc.abstractmethod
    def fetch(
        self, context: OIDCCallbackContext
    ) -> OIDCCallbackResult | Awaitable[OIDCCallbackResult]:
        """The credentials for ``context``."""


#: What OIDC_CALLBACK / OIDC_HUMAN_CALLBACK may be: an OIDCCallback or a callable of the
#: context (either may return an awaitable).
CallbackLike = (
    OIDCCallback
    | Callable[[OIDCCallbackContext], OIDCCallbackResult | Awaitable[OIDCCallbackResult]]
)


def callback_function(
    callback: object, name: str
) -> Callable[[OIDCCallbackContext], Any]:
    """The function to call for an OIDC_CALLBACK / OIDC_HUMAN_CALLBACK property value."""
    if isinstance(callback, OIDCCallback):
        return callback.fetch
    fetch = getattr(callback, "fetch", None)
    if callable(fetch):  # PyMongo's OIDCCallback subclasses, duck-typed
        return cast(Callable[[OIDCCallbackContext], Any], fetch)
    if callable(callback):
        return cast(Callable[[OIDCCallbackContext], Any], callback)
    raise ConfigurationError(
        f"MONGODB-OIDC: {name} must be an OIDCCallback or a callable, "
        f"not {type(callback).__name__}"
    )


def callback_result(value: object, name: str) -> OIDCCallbackResult:
    """Check a callback's answer: the spec's ``accessToken`` and a non-negative ``expiresIn``.
    A PyMongo ``OIDCCallbackResult`` (same attribute names) is accepted too."""
    token = getattr(value, "access_token", None)
    if not isinstance(token, str) or not token:
        raise OperationFailure(
            f"MONGODB-OIDC: {name} must return an OIDCCallbackResult with an access_token, "
            f"got {type(value).__name__}"
        )
    expires = getattr(value, "expires_in_seconds", None)
    if expires is not None:
        if hasattr(expires, "total_seconds"):
            expires = expires.total_seconds()
        if not isinstance(expires, int | float) or expires < 0:
            raise OperationFailure(
                f"MONGODB-OIDC: {name} returned a negative or invalid expires_in_seconds"
            )
    refresh = getattr(value, "refresh_token", None)
    if isinstance(value, OIDCCallbackResult):
        return value
    return OIDCCallbackResult(token, expires, refresh if isinstance(refresh, str) else None)


def jwt_start_command(access_token: str) -> dict[str, Any]:
    """One-step ``saslStart`` with a ``JwtStepRequest``."""
    return sasl_start_command(MONGODB_OIDC, encode({"jwt": access_token}))


def speculative_document(access_token: str) -> dict[str, Any]:
    """The hello's ``speculativeAuthenticate``: the one-step saslStart plus ``db``."""
    return {**jwt_start_command(access_token), "db": OIDC_SOURCE}


def principal_start_command(username: str | None) -> dict[str, Any]:
    """Two-step ``saslStart`` with a ``PrincipalStepRequest`` (``n`` only with a username)."""
    request = {} if username is None else {"n": username}
    return sasl_start_command(MONGODB_OIDC, encode(request))


def jwt_continue_command(conversation_id: Any, access_token: str) -> dict[str, Any]:
    """Two-step ``saslContinue`` with the ``JwtStepRequest``."""
    return sasl_continue_command(conversation_id, encode({"jwt": access_token}))


def idp_info_from_reply(reply: Mapping[str, Any]) -> tuple[Any, OIDCIdPInfo]:
    """(conversationId, IdpInfo) from the reply to a ``PrincipalStepRequest``."""
    sasl = parse_sasl_reply(reply)
    try:
        info = decode(sasl.payload)
    except Exception as exc:
        raise OperationFailure("MONGODB-OIDC: the server's IdpInfo is not BSON") from exc
    issuer = info.get("issuer")
    client_id = info.get("clientId")
    scopes = info.get("requestScopes")
    if not isinstance(issuer, str):
        raise OperationFailure("MONGODB-OIDC: the server's IdpInfo has no issuer", None, reply)
    return sasl.conversation_id, OIDCIdPInfo(
        issuer,
        client_id if isinstance(client_id, str) else None,
        [str(s) for s in scopes] if isinstance(scopes, list) else None,
    )


def host_allowed(host: str, allowed: tuple[str, ...] | list[str]) -> bool:
    """ALLOWED_HOSTS matching: exact names, or ``*.suffix`` for any (nested) subdomain."""
    host = host.lower().rstrip(".")
    for pattern in allowed:
        pattern = pattern.lower()
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False
