"""The connection of one KMS round trip: opened by the driver, or by the user's
``kms_connect_callback`` (client-side encryption spec, "kmsConnectCallback").

The callback is how KMS traffic goes through an HTTP proxy (HTTP CONNECT) or any other
tunnel: it is called with the KMS host, port and the seconds the round trip may take, and
returns a connection to that host, not yet TLS:

- a connected ``socket.socket`` (``SOCK_STREAM``, not an ``ssl.SSLSocket``), or
- an ``(asyncio.StreamReader, asyncio.StreamWriter)`` pair, e.g. from
  ``asyncio.open_connection``; this is the shape for a tunnel that is itself TLS (an HTTPS
  proxy), since asyncio cannot layer TLS on an ``ssl.SSLSocket``.

It may be a plain function or a coroutine function; an async one is preferred, since a plain
one runs on the event loop and blocks it while it connects. The driver then negotiates TLS
end to end with the KMS host over that connection, with the provider's ``kms_tls_options``:
SNI and certificate and hostname verification name the KMS host, never the address the
callback connected to. An ``OSError`` (or ``TimeoutError``) from the callback is a network
error, retried as a KMS network failure is (the callback is called again); any other error
fails the operation, as :class:`KmsConnectCallbackError`.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import TypeAlias

__all__ = ["KmsConnectCallback", "KmsConnectCallbackError", "KmsConnection", "open_kms_stream"]

Streams: TypeAlias = tuple[asyncio.StreamReader, asyncio.StreamWriter]
#: What a ``kms_connect_callback`` returns: a connected socket or a stream pair, without the
#: TLS to the KMS host (the driver adds it).
KmsConnection: TypeAlias = socket.socket | Streams
#: ``(host, port, timeout_s) -> KmsConnection`` (or an awaitable of one); ``timeout_s`` is
#: what is left for the whole round trip: the rest of timeoutMS when that is less than the
#: KMS default of 10 s, else the default.
KmsConnectCallback: TypeAlias = Callable[
    [str, int, float], KmsConnection | Awaitable[KmsConnection]]


class KmsConnectCallbackError(Exception):
    """The ``kms_connect_callback`` failed other than by a network error, or returned
    something that is not a connection; not retried."""


async def open_kms_stream(host: str, port: int, context: ssl.SSLContext,
                          callback: KmsConnectCallback | None, timeout_s: float) -> Streams:
    """A TLS stream to the KMS at ``host``:``port`` (verified as ``host``): connected by
    the driver, or over what ``callback`` returns."""
    if callback is None:
        return await asyncio.open_connection(host, port, ssl=context, server_hostname=host)
    connection = await _call(callback, host, port, timeout_s)
    if isinstance(connection, socket.socket):
        return await _over_socket(connection, host, context)
    reader, writer = connection
    try:
        await writer.start_tls(context, server_hostname=host)
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def _call(callback: KmsConnectCallback, host: str, port: int,
                timeout_s: float) -> KmsConnection:
    """The callback's connection; network errors (OSError, TimeoutError) and cancellation
    pass unchanged, anything else is a KmsConnectCallbackError."""
    try:
        result = callback(host, port, timeout_s)
        if inspect.isawaitable(result):
            result = await result
    except (OSError, TimeoutError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise KmsConnectCallbackError(
            f"kms_connect_callback failed for {host}:{port}: {exc!r}") from exc
    if isinstance(result, ssl.SSLSocket):
        result.close()
        raise KmsConnectCallbackError(
            "kms_connect_callback returned an ssl.SSLSocket: asyncio cannot add TLS on top "
            "of it; return the (reader, writer) pair of asyncio.open_connection instead")
    if isinstance(result, socket.socket) or _is_stream_pair(result):
        return result
    raise KmsConnectCallbackError(
        f"kms_connect_callback must return a socket.socket or an (asyncio.StreamReader, "
        f"asyncio.StreamWriter) pair, not {type(result).__name__}")


def _is_stream_pair(value: object) -> bool:
    return (isinstance(value, tuple) and len(value) == 2
            and isinstance(value[0], asyncio.StreamReader)
            and isinstance(value[1], asyncio.StreamWriter))


async def _over_socket(sock: socket.socket, host: str, context: ssl.SSLContext) -> Streams:
    try:
        return await asyncio.open_connection(sock=sock, ssl=context, server_hostname=host)
    except BaseException:
        sock.close()
        raise
