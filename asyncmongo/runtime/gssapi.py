"""The GSS-API security context for GSSAPI (Kerberos) authentication, on the ``gssapi`` package.

``gssapi`` (the optional extra ``asyncmongo[gssapi]``) is imported only when a GSSAPI
credential is used. :func:`security_context` resolves the service host (CANONICALIZE_HOST_NAME,
with the event loop's resolver), acquires the initiator's credentials (with the password when
one is given, else from the credential cache a ``kinit`` filled) and returns a context for the
pure conversation in :mod:`asyncmongo.core.auth.gssapi`.

The Kerberos library is synchronous: acquiring credentials with a password, and the first step
towards a service the credential cache holds no ticket for, wait for the KDC on the event loop's
thread. That is one round trip to a KDC per new service ticket (tickets are cached), which we
accept rather than bring a thread into the driver.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import Any

from asyncmongo.core.auth.gssapi import (
    SecurityContext,
    canonicalize_mode,
    service_principal,
)
from asyncmongo.errors import ConfigurationError, OperationFailure

__all__ = ["canonical_host", "security_context"]


async def canonical_host(host: str, mode: str) -> str:
    """``host`` canonicalized as the auth spec's algorithm says ("forward": the name the
    CNAME chain ends at; "forwardAndReverse": the reverse lookup of its first address), or
    ``host`` itself for "none" and whenever a lookup fails or finds nothing."""
    if mode == "none":
        return host
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None, flags=socket.AI_CANONNAME)
    except OSError:
        return host
    if not infos:
        return host
    _, _, _, canonname, address = infos[0]
    if mode == "forward":
        return (canonname or host).lower()
    try:
        name, _ = await loop.getnameinfo((str(address[0]), 0), socket.NI_NAMEREQD)
    except OSError:
        return host
    return name.lower() or host


class _GssapiContext:
    """The ``gssapi`` package's initiator context behind the conversation's protocol; the
    library's errors become OperationFailure naming the mechanism, user and target."""

    __slots__ = ("_context", "_describe", "_gssapi")

    def __init__(self, gssapi: Any, context: Any, describe: str) -> None:
        self._gssapi = gssapi
        self._context = context
        self._describe = describe

    @property
    def complete(self) -> bool:
        return bool(self._context.complete)

    def step(self, token: bytes) -> bytes | None:
        try:
            out: bytes | None = self._context.step(token or None)
        except self._gssapi.exceptions.GSSError as exc:
            raise self._failure(exc) from exc
        return out

    def wrap(self, message: bytes) -> bytes:
        try:
            wrapped: bytes = self._context.wrap(message, False).message
        except self._gssapi.exceptions.GSSError as exc:
            raise self._failure(exc) from exc
        return wrapped

    def unwrap(self, message: bytes) -> bytes:
        try:
            unwrapped: bytes = self._context.unwrap(message).message
        except self._gssapi.exceptions.GSSError as exc:
            raise self._failure(exc) from exc
        return unwrapped

    def _failure(self, exc: Exception) -> OperationFailure:
        return OperationFailure(
            f"GSSAPI authentication {self._describe} failed in the Kerberos library: "
            f"{' '.join(str(exc).split())}. Check that the user has a ticket (kinit) or a "
            "correct password, that the service principal exists in the KDC, and that "
            "KRB5_CONFIG points at the right realm.")


def _import_gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise ConfigurationError(
            "authMechanism=GSSAPI needs the 'gssapi' package (pip install "
            "'asyncmongo[gssapi]'; it builds against the system's Kerberos, e.g. Debian's "
            "libkrb5-dev)") from None
    return gssapi


async def security_context(
    username: str, password: str | None, properties: Mapping[str, Any], host: str
) -> SecurityContext:
    """An initiator context for ``username`` towards the MongoDB service on ``host``."""
    gssapi = _import_gssapi()
    host = await canonical_host(host, canonicalize_mode(properties))
    target, is_principal = service_principal(properties, host)
    describe = f"of {username!r} to {target!r}"
    name_type = gssapi.NameType.kerberos_principal
    try:
        user = gssapi.Name(username, name_type)
        if password is not None:
            credentials = gssapi.raw.acquire_cred_with_password(
                user, password.encode(), usage="initiate").creds
        else:
            credentials = gssapi.Credentials(name=user, usage="initiate")
        service = gssapi.Name(
            target, name_type if is_principal else gssapi.NameType.hostbased_service)
        context = gssapi.SecurityContext(name=service, creds=credentials, usage="initiate")
    except gssapi.exceptions.GSSError as exc:
        raise _GssapiContext(gssapi, None, describe)._failure(exc) from exc
    return _GssapiContext(gssapi, context, describe)
