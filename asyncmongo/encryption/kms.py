"""KMS round trips for libmongocrypt, over asyncio TLS connections.

libmongocrypt builds each KMS request (AWS KMS, Azure Key Vault, GCP KMS, KMIP) and parses
each reply; the driver only carries bytes: it connects to the context's ``endpoint`` over TLS
(client-side encryption spec, "KMS provider TLS options"), sends ``message``, and feeds the
reply until ``bytes_needed`` is 0. A network failure is reported to libmongocrypt
(``fail()``), which decides whether the request is retried (it then hands the same request
out again, after ``usleep``); when it gives up, the network error is raised.

Each attempt is limited to :data:`KMS_TIMEOUT_S`, or to what is left of the operation's
timeoutMS (an ``asyncmongo.timeout`` block, which AsyncClientEncryption's ``timeout_ms``
opens) if that is less; an attempt cut by timeoutMS is not retried. With a
``kms_connect_callback`` the callback opens each attempt's connection (and is given that
limit); the TLS to the KMS host is still the driver's (:mod:`~asyncmongo.encryption.kms_connect`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.encryption.kms_connect import KmsConnectCallback, open_kms_stream
from asyncmongo.errors import AutoReconnect, ConfigurationError, InvalidArgument, NetworkTimeout
from asyncmongo.runtime.timeout import current_deadline

__all__ = ["KMS_TIMEOUT_S", "KmsSession", "kms_ssl_contexts", "parse_endpoint"]

#: The limit on one KMS round trip (connect, send, receive) when no timeoutMS applies:
#: the spec's default connectTimeoutMS.
KMS_TIMEOUT_S = 10.0
HTTPS_PORT = 443

#: Client-side encryption spec, "KMS provider TLS options": these are refused.
INSECURE_TLS_OPTIONS = frozenset({
    "tlsInsecure", "tlsAllowInvalidCertificates", "tlsAllowInvalidHostnames",
    "tlsDisableCertificateRevocationCheck",
})
ALLOWED_TLS_OPTIONS = frozenset({
    "tlsCAFile", "tlsCertificateKeyFile", "tlsCertificateKeyFilePassword",
    "tlsDisableOCSPEndpointCheck",
})


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """``host[:port]`` (port 443 by default; an IPv6 literal in brackets) as (host, port)."""
    host, port = endpoint, HTTPS_PORT
    if endpoint.startswith("["):
        host, _, rest = endpoint[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:])
    elif endpoint.count(":") == 1:
        host, _, port_text = endpoint.partition(":")
        port = int(port_text)
    return host, port


def _provider_context(provider: str, options: Mapping[str, Any]) -> ssl.SSLContext:
    """The TLS client context for one provider's ``kms_tls_options`` entry."""
    insecure = sorted(INSECURE_TLS_OPTIONS.intersection(options))
    if insecure:
        raise ConfigurationError(
            f"Insecure TLS options prohibited: kms_tls_options[{provider!r}] sets {insecure}"
        )
    if options.get("tls") is False or options.get("ssl") is False:
        raise ConfigurationError(f"TLS is required: kms_tls_options[{provider!r}] disables it")
    unknown = sorted(set(options) - ALLOWED_TLS_OPTIONS - {"tls", "ssl"})
    if unknown:
        raise ConfigurationError(f"kms_tls_options[{provider!r}]: unknown options {unknown}")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        if "tlsCAFile" in options:
            context.load_verify_locations(cafile=options["tlsCAFile"])
        if "tlsCertificateKeyFile" in options:
            context.load_cert_chain(options["tlsCertificateKeyFile"],
                                    password=options.get("tlsCertificateKeyFilePassword"))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(
            f"kms_tls_options[{provider!r}]: cannot load TLS certificates: {exc}"
        ) from exc
    return context


def kms_ssl_contexts(
    kms_tls_options: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, ssl.SSLContext]:
    """One TLS context per provider named in ``kms_tls_options`` (PyMongo's option: provider
    name -> ``tlsCAFile`` / ``tlsCertificateKeyFile`` / ``tlsCertificateKeyFilePassword``)."""
    contexts: dict[str, ssl.SSLContext] = {}
    for provider, options in (kms_tls_options or {}).items():
        if not isinstance(options, Mapping):
            raise InvalidArgument(
                f"kms_tls_options[{provider!r}] must be a mapping, not {type(options)!r}"
            )
        contexts[provider] = _provider_context(provider, options)
    return contexts


@dataclass(slots=True)
class KmsSession:
    """How KMS requests are sent: a TLS context per provider (the named provider
    ``"kmip:name"`` has its own entry; the default context verifies against the system CAs),
    the limit on each round trip, and the user's ``kms_connect_callback`` if any (which then
    opens every connection, see :mod:`~asyncmongo.encryption.kms_connect`)."""

    contexts: dict[str, ssl.SSLContext]
    timeout_s: float = KMS_TIMEOUT_S
    connect_callback: KmsConnectCallback | None = None

    def context_for(self, provider: str) -> ssl.SSLContext:
        context = self.contexts.get(provider)
        if context is None:
            context = self.contexts[provider] = ssl.create_default_context()
        return context

    async def request(self, kms_context: Any, mongocrypt_error: type[Exception]) -> None:
        """One attempt at ``kms_context``'s round trip. A network failure libmongocrypt will
        retry returns normally (the request comes back from ``kms_contexts()``); one it will
        not retry raises AutoReconnect (NetworkTimeout when it timed out)."""
        delay_us = kms_context.usleep
        if delay_us:
            await asyncio.sleep(delay_us / 1_000_000)
        endpoint = kms_context.endpoint
        host, port = parse_endpoint(endpoint)
        context = self.context_for(kms_context.kms_provider)
        limit, by_timeout_ms = self._attempt_limit()
        try:
            async with asyncio.timeout(limit):
                await _round_trip(kms_context, host, port, context,
                                  self.connect_callback, limit)
        except mongocrypt_error:
            raise
        except (OSError, EOFError, TimeoutError) as exc:
            if by_timeout_ms and isinstance(exc, TimeoutError):
                raise NetworkTimeout(
                    f"KMS request to {endpoint} failed: timeoutMS expired"
                ) from exc
            try:
                kms_context.fail()
            except mongocrypt_error:
                error_type = NetworkTimeout if isinstance(exc, TimeoutError) else AutoReconnect
                reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)
                raise error_type(f"KMS request to {endpoint} failed: {reason}") from exc


    def _attempt_limit(self) -> tuple[float, bool]:
        """(seconds this attempt may take, whether that is the rest of timeoutMS)."""
        deadline = current_deadline()
        if deadline is None or deadline == math.inf:
            return self.timeout_s, False
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining < self.timeout_s:
            return max(remaining, 0.0), True
        return self.timeout_s, False


async def _round_trip(kms_context: Any, host: str, port: int, context: ssl.SSLContext,
                      connect_callback: KmsConnectCallback | None, limit: float) -> None:
    reader, writer = await open_kms_stream(host, port, context, connect_callback, limit)
    try:
        writer.write(kms_context.message)
        await writer.drain()
        while (needed := kms_context.bytes_needed) > 0:
            data = await reader.read(needed)
            if not data:
                raise EOFError("the KMS server closed the connection")
            kms_context.feed(data)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(writer.wait_closed()), 1.0)
