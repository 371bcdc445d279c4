"""MONGODB-OIDC authentication (auth spec, "MONGODB-OIDC"): the client's token cache, the
machine and human flows, speculative authentication and reauthentication.

One :class:`OidcAuthenticator` per client holds the spec's *Client Cache* (the last access
token, and for the human flow the IdP information and refresh token); each connection keeps
the token it authenticated with in ``conn.auth_cache`` (the *Connection Cache*), so a
ReauthenticationRequired (391) invalidates exactly that token.

- Only one callback call runs at a time (a lock around the cache and the call, never around a
  ``saslStart``), at least 100ms apart ("Credential Caching").
- A cached token that the server refuses with 18 (AuthenticationFailed) is invalidated and the
  callback asked once more; any other error is the user's.
- The hello carries a ``JwtStepRequest`` only when the cache has a token; a failed speculative
  attempt invalidates nothing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo.bson import decode
from asyncmongo.core.auth.oidc import (
    DEFAULT_ALLOWED_HOSTS,
    HUMAN_CALLBACK_TIMEOUT_SECONDS,
    MACHINE_CALLBACK_TIMEOUT_SECONDS,
    MIN_CALLBACK_INTERVAL_SECONDS,
    OIDC_SOURCE,
    OIDCCallbackContext,
    OIDCCallbackResult,
    OIDCIdPInfo,
    callback_function,
    callback_result,
    host_allowed,
    idp_info_from_reply,
    jwt_continue_command,
    jwt_start_command,
    principal_start_command,
    speculative_document,
)
from asyncmongo.core.auth.sasl import parse_sasl_reply
from asyncmongo.errors import ConfigurationError, OperationFailure
from asyncmongo.runtime.oidc_providers import environment_callback

if TYPE_CHECKING:
    from asyncmongo.core.auth.credential import MongoCredential
    from asyncmongo.runtime.connection import Authenticator, Connection

__all__ = ["OidcAuthenticator"]

_AUTHENTICATION_FAILED = 18



class OidcAuthenticator:
    """Authenticates a client's connections with MONGODB-OIDC; holds the Client Cache."""

    __slots__ = (
        "_callback",
        "_calls",
        "_credential",
        "_human",
        "_last_call",
        "_lock",
        "access_token",
        "idp_info",
        "refresh_token",
    )

    def __init__(self, credential: MongoCredential) -> None:
        properties = credential.mechanism_properties
        self._credential = credential
        self._human = "OIDC_HUMAN_CALLBACK" in properties
        if self._human:
            self._callback = callback_function(
                properties["OIDC_HUMAN_CALLBACK"], "OIDC_HUMAN_CALLBACK"
            )
        elif "OIDC_CALLBACK" in properties:
            self._callback = callback_function(properties["OIDC_CALLBACK"], "OIDC_CALLBACK")
        else:
            self._callback = environment_callback(properties, credential.username).fetch
        #: The Client Cache.
        self.access_token: str | None = None
        self.refresh_token: str | None = None
        self.idp_info: OIDCIdPInfo | None = None
        self._lock = asyncio.Lock()
        self._last_call: float | None = None
        self._calls = 0

    @property
    def callback_calls(self) -> int:
        """How many times the callback (or built-in environment) was called."""
        return self._calls

    # -- the connection contract -------------------------------------------------------------

    @property
    def sasl_supported_mechs(self) -> str | None:
        return None  # the mechanism is given, never negotiated

    def speculative_document(self) -> Mapping[str, Any] | None:
        """A ``JwtStepRequest`` with the cached token; None without one (spec: no speculative
        attempt without a cached access token)."""
        token = self.access_token
        return speculative_document(token) if token is not None else None

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        if hello_reply.get("arbiterOnly") is True:
            return
        answer = hello_reply.get("speculativeAuthenticate")
        sent = conn.speculative_authenticate
        if isinstance(answer, Mapping) and answer.get("done") is True and sent is not None:
            conn.auth_cache = _jwt_of(sent)
            return
        conn.auth_cache = None
        await self._authenticate(conn, deadline)

    async def reauthenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        """Invalidate the connection's token, fetch a new one, converse again (no hello, no
        speculative attempt)."""
        await self.invalidate(conn.auth_cache)
        conn.auth_cache = None
        await self._authenticate(conn, deadline)

    # -- the cache ---------------------------------------------------------------------------

    async def invalidate(self, token: str | None) -> None:
        """Clear the cached access token if it is ``token`` (compare-and-swap under the lock)."""
        async with self._lock:
            if token is not None and self.access_token == token:
                self.access_token = None

    async def _token(self, deadline: float | None) -> tuple[str, bool]:
        """(an access token, whether it came from the cache): the machine flow's read-through."""
        async with self._lock:
            token = self.access_token
            if token is not None:
                return token, True
            result = await self._call(self._context(deadline, None, None), deadline)
            self.access_token = result.access_token
            return result.access_token, False

    # -- the flows ---------------------------------------------------------------------------

    async def _authenticate(self, conn: Connection, deadline: float | None) -> None:
        if self._human:
            await self._authenticate_human(conn)
            return
        token, cached = await self._token(deadline)
        if cached:
            conn.auth_cache = token
            try:
                await _one_step(conn, token, deadline)
                return
            except OperationFailure as exc:
                if exc.code != _AUTHENTICATION_FAILED:
                    raise
                await self.invalidate(token)
                token, _ = await self._token(deadline)
        conn.auth_cache = token
        try:
            await _one_step(conn, token, deadline)
        except OperationFailure as exc:
            raise self._explained(exc) from exc

    async def _authenticate_human(self, conn: Connection) -> None:
        """The human flow: the cached token, else the refresh token, else the two steps."""
        self._check_allowed_host(conn.address[0])
        token = self.access_token
        if token is not None:
            conn.auth_cache = token
            try:
                await _one_step(conn, token, None)
                return
            except OperationFailure as exc:
                if exc.code != _AUTHENTICATION_FAILED:
                    raise
                await self.invalidate(token)
                conn.auth_cache = None
        if self.refresh_token is not None and self.idp_info is not None:
            token = await self._refresh()
            if token is not None:
                conn.auth_cache = token
                try:
                    await _one_step(conn, token, None)
                    return
                except OperationFailure as exc:
                    if exc.code != _AUTHENTICATION_FAILED:
                        raise
                    self.refresh_token = None
                    await self.invalidate(token)
                    conn.auth_cache = None
        await self._two_steps(conn)

    async def _refresh(self) -> str | None:
        """A new access token from the human callback given the cached refresh token."""
        async with self._lock:
            refresh, info = self.refresh_token, self.idp_info
            if refresh is None or info is None:
                return None
            result = await self._call(self._context(None, info, refresh), None)
            self._store_human(result, info)
            return result.access_token

    async def _two_steps(self, conn: Connection) -> None:
        reply = await conn.command(
            OIDC_SOURCE, principal_start_command(self._credential.username)
        )
        conversation_id, info = idp_info_from_reply(reply)
        async with self._lock:
            # Spec: never the cached refresh token on a new two-step conversation.
            result = await self._call(self._context(None, info, None), None)
            self._store_human(result, info)
        conn.auth_cache = result.access_token
        reply = await conn.command(
            OIDC_SOURCE, jwt_continue_command(conversation_id, result.access_token)
        )
        try:
            _check_done(reply)
        except OperationFailure as exc:
            raise self._explained(exc) from exc

    def _store_human(self, result: OIDCCallbackResult, info: OIDCIdPInfo) -> None:
        self.access_token = result.access_token
        self.refresh_token = result.refresh_token
        self.idp_info = info

    # -- calling back ------------------------------------------------------------------------

    def _context(
        self, deadline: float | None, info: OIDCIdPInfo | None, refresh: str | None
    ) -> OIDCCallbackContext:
        if self._human:
            timeout = HUMAN_CALLBACK_TIMEOUT_SECONDS  # spec: not subject to CSOT
        elif deadline is None:
            timeout = MACHINE_CALLBACK_TIMEOUT_SECONDS
        else:
            timeout = max(deadline - asyncio.get_running_loop().time(), 0.0)
        return OIDCCallbackContext(
            timeout_seconds=timeout,
            username=self._credential.username,
            refresh_token=refresh,
            idp_info=info,
        )

    async def _call(
        self, context: OIDCCallbackContext, deadline: float | None
    ) -> OIDCCallbackResult:
        """Call the callback (under the lock), 100ms after the previous call at the earliest."""
        loop = asyncio.get_running_loop()
        if self._last_call is not None:
            wait = self._last_call + MIN_CALLBACK_INTERVAL_SECONDS - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
        name = "OIDC_HUMAN_CALLBACK" if self._human else "OIDC_CALLBACK"
        self._last_call = loop.time()
        self._calls += 1
        value: Any = self._callback(context)
        if inspect.isawaitable(value):
            limit = loop.time() + context.timeout_seconds
            if deadline is not None and not self._human:
                limit = min(limit, deadline)
            try:
                async with asyncio.timeout_at(limit):
                    value = await value
            except TimeoutError:
                raise OperationFailure(
                    f"MONGODB-OIDC: {name} did not answer within "
                    f"{context.timeout_seconds:.1f}s"
                ) from None
        self._last_call = loop.time()
        return callback_result(value, name)

    def _explained(self, exc: OperationFailure) -> OperationFailure:
        """The server's refusal of a fresh token, saying who, where from and what to check
        (the code and reply kept, so ``exc.code`` is still the server's)."""
        if exc.code != _AUTHENTICATION_FAILED:
            return exc
        properties = self._credential.mechanism_properties
        if self._human:
            origin = "OIDC_HUMAN_CALLBACK"
        elif "OIDC_CALLBACK" in properties:
            origin = "OIDC_CALLBACK"
        else:
            origin = f"ENVIRONMENT:{properties.get('ENVIRONMENT')}"
        return OperationFailure(
            f"MONGODB-OIDC authentication failed for user {self._credential.username!r} on "
            f"'$external' with a token from {origin}: the server refused the access token; "
            "check that it has not expired and that its issuer and audience are the ones the "
            "server's oidcIdentityProviders configure",
            exc.code,
            exc.details,
        )

    def _check_allowed_host(self, host: str) -> None:
        allowed = self._credential.mechanism_properties.get("ALLOWED_HOSTS")
        hosts = DEFAULT_ALLOWED_HOSTS if allowed is None else tuple(allowed)
        if not host_allowed(host, hosts):
            raise ConfigurationError(
                f"MONGODB-OIDC: host {host!r} is not in ALLOWED_HOSTS {list(hosts)}; the human "
                "callback is only called for allowed hosts (set ALLOWED_HOSTS to add it)"
            )

    def __repr__(self) -> str:
        flow = "human" if self._human else "machine"
        cached = "a token" if self.access_token is not None else "no token"
        return f"<OidcAuthenticator {flow} flow, {cached} cached, {self._calls} callback calls>"


async def _one_step(conn: Connection, token: str, deadline: float | None) -> None:
    reply = await conn.command(OIDC_SOURCE, jwt_start_command(token), deadline=deadline)
    _check_done(reply)


def _check_done(reply: Mapping[str, Any]) -> None:
    if not parse_sasl_reply(reply).done:
        raise OperationFailure("MONGODB-OIDC: the server did not finish the conversation")


def _jwt_of(document: Mapping[str, Any]) -> str | None:
    payload = document.get("payload")
    if not isinstance(payload, bytes | bytearray | memoryview):
        return None
    token = decode(bytes(payload)).get("jwt")
    return token if isinstance(token, str) else None


if TYPE_CHECKING:
    # Static proof (mypy) that this class fits the connection contract.
    def _fits_the_contract(authenticator: OidcAuthenticator) -> Authenticator:
        return authenticator
