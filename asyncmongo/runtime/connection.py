"""One connection to one server: send a command, read its reply (or an exhaust stream of them).

Transport design (measured with ``benchmarks/transport_bench.py``): an ``asyncio.Protocol``
whose ``data_received`` feeds the sans-I/O :class:`~asyncmongo.core.wire.reader.MessageReader`
and completes the one future of the outstanding request. There is no task per receive and no
``StreamReader`` layer; requests go out with one ``transport.write`` call. Median
microseconds per ``ping`` round trip over loopback (7 runs x 10,000, client and server in one
process, on a shared 2-core machine with load ~4, so differences under ~10% are noise):

=======================================  =========  =========
client                                   asyncio    uvloop
=======================================  =========  =========
this Connection (Protocol + bookkeeping)  75.2       43.8
minimal Protocol + reader                 67.9       43.3
minimal BufferedProtocol + reader         66.7       53.6
streams (readexactly) + reader            68.4       52.3
=======================================  =========  =========

On asyncio's loop the three transports are within noise of each other; on uvloop the plain
Protocol is clearly ahead (~20%): uvloop's BufferedProtocol path and the streams layer cost
more than the ``bytes`` allocation per chunk that ``data_received`` implies, and the reader
must copy each message out of any receive buffer anyway. So: plain Protocol, simplest of the
fast ones. The Connection's own bookkeeping (busy/drain state, ``$db``, server API, deadline
handling) costs a few microseconds on top; a profile showed IntFlag arithmetic on the hot path,
now plain ints.

The usual command is a straight line (:meth:`Connection.command`): one uncompressed OP_MSG
written at once; its reply, when it arrives whole in one ``data_received`` chunk, is checked
by :meth:`~asyncmongo.core.wire.reader.MessageReader.plain_reply` and its body handed to the
command's waiter as the future's result, without the reader's buffer, an ``OpMsg`` or the
reply queue. Everything else (split or several replies per chunk, compression, document
sequences over the one-write size, moreToCome/exhaust, socketTimeoutMS, a bad reply) takes
the general path: the reader's ``feed``/``next_reply``, the queue, ``_read``.

Cancellation (DESIGN: "cancelling any awaiting caller at any point must leave no connection
checked out"): a command cancelled while its request is out leaves the connection *draining*:
the reply is read and dropped when it comes, and the next command waits for that first, so
the connection is reusable and never half-read. A cancelled exhaust read, a timeout, a
malformed reply or a network error closes the connection instead.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import struct
from collections import deque
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

from asyncmongo.bson import CodecOptions, ObjectId
from asyncmongo.bson import codec as _codec
from asyncmongo.bson.codec import decode
from asyncmongo.bson.errors import BSONError
from asyncmongo.core.address import Address, format_address
from asyncmongo.core.uri.client_options import ClientOptions
from asyncmongo.core.wire.batching import COMMAND_OVERHEAD
from asyncmongo.core.wire.compression import (
    SUPPORTED_COMPRESSORS,
    CompressionSettings,
    Compressor,
    encode_op_compressed,
    may_compress,
    negotiate,
)
from asyncmongo.core.wire.handshake import (
    DriverInfo,
    HandshakeOptions,
    HostInfo,
    ServerApi,
    client_metadata,
    handshake_command,
)
from asyncmongo.core.wire.op_msg import (
    REQUEST_PREFIX,
    DocumentSequence,
    OpMsg,
    encode_op_msg_sized,
)
from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    OpCode,
)
from asyncmongo.core.wire.reader import MessageReader
from asyncmongo.errors import (
    AutoReconnect,
    ConfigurationError,
    ConnectionFailure,
    DocumentTooLarge,
    InvalidOperation,
    MongoError,
    NetworkTimeout,
    OperationFailure,
    ProtocolError,
)
from asyncmongo.runtime.network import (
    ProxySettings,
    TlsSettings,
    is_backpressure_candidate,
    open_transport,
    translate_error,
)

__all__ = [
    "BACKPRESSURE_LABELS",
    "Authenticator",
    "Connection",
    "ConnectionSettings",
    "add_backpressure_labels",
    "connect",
]

_request_ids = itertools.count(1)
_OP_MSG = int(OpCode.OP_MSG)
_REQUEST_PREFIX_SIZE = REQUEST_PREFIX.size
#: The usual request's prefix (REQUEST_PREFIX: messageLength, requestID, then responseTo 0,
#: opCode OP_MSG, flagBits 0, kind 0: ``_PLAIN_PREFIX_TAIL``, packed once here), the same
#: bytes as ``REQUEST_PREFIX.pack(length, request_id, 0, OP_MSG, 0, 0)``.
_pack_plain_prefix = struct.Struct(f"<ii{_REQUEST_PREFIX_SIZE - 8}s").pack
_PLAIN_PREFIX_TAIL = REQUEST_PREFIX.pack(0, 0, 0, _OP_MSG, 0, 0)[8:]
T = TypeVar("T")


class Authenticator(Protocol):
    """Authenticates a new connection (implemented by ``runtime.auth.CredentialAuthenticator``).

    ``sasl_supported_mechs`` is the hello's ``saslSupportedMechs`` value (``"<db>.<user>"``)
    when the mechanism must be negotiated, else None.
    """

    @property
    def sasl_supported_mechs(self) -> str | None: ...

    def speculative_document(self) -> Mapping[str, Any] | None: ...

    async def authenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None: ...

    async def reauthenticate(
        self, conn: Connection, hello_reply: Mapping[str, Any], *, deadline: float | None = None
    ) -> None:
        """Auth spec, "Reauthentication": after ReauthenticationRequired (391), a fresh
        conversation on ``conn``, without a hello."""
        ...


@functools.cache
def detected_host() -> HostInfo:
    """This process's host facts for the handshake metadata (read once)."""
    return HostInfo.detect(dict(os.environ), os.path.exists("/.dockerenv"))


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """What establishing and using a connection needs (times in seconds, None: no limit)."""

    connect_timeout: float | None = 20.0
    socket_timeout: float | None = None
    tls: TlsSettings = field(default_factory=TlsSettings)
    proxy: ProxySettings | None = None
    compression: CompressionSettings = field(default_factory=CompressionSettings)
    app_name: str | None = None
    driver_info: tuple[DriverInfo, ...] = ()
    server_api: ServerApi | None = None
    load_balanced: bool = False
    host: HostInfo | None = None
    codec_options: CodecOptions = field(default_factory=CodecOptions)

    def handshake_options(self) -> HandshakeOptions:
        metadata = client_metadata(self.host or detected_host(), self.app_name, self.driver_info)
        return HandshakeOptions(
            metadata, self.compression.compressors, self.load_balanced, self.server_api
        )

    @classmethod
    def from_client_options(cls, options: ClientOptions) -> ConnectionSettings:
        """Settings from the parsed connection string / client options (ms become seconds).

        The one way the client makes its connection settings. Unknown compressors were
        already warned about by the URI parser; they are dropped.
        """
        return cls(
            connect_timeout=_seconds(options.connect_timeout_ms),
            # CSOT: with timeoutMS on the client (0 included: it cannot be unset below) the
            # deprecated socketTimeoutMS is ignored everywhere, handshakes included
            socket_timeout=(
                None if options.timeout_ms is not None else _seconds(options.socket_timeout_ms)
            ),
            tls=TlsSettings(
                enabled=options.tls,
                ca_file=options.tls_ca_file,
                certificate_key_file=options.tls_certificate_key_file,
                certificate_key_file_password=options.tls_certificate_key_file_password,
                allow_invalid_certificates=options.tls_allow_invalid_certificates,
                allow_invalid_hostnames=options.tls_allow_invalid_hostnames,
                insecure=options.tls_insecure,
            ),
            proxy=_proxy(options),
            compression=CompressionSettings(
                tuple(c for c in options.compressors if c in SUPPORTED_COMPRESSORS),
                options.zlib_compression_level,
            ),
            app_name=options.appname,
            driver_info=options.driver_info,
            server_api=_server_api(options.server_api),
            load_balanced=options.load_balanced,
        )


def _proxy(options: ClientOptions) -> ProxySettings | None:
    """SOCKS5 spec, "MongoClient Configuration": a zero-length proxyUsername or
    proxyPassword is ignored (the URI rules already paired them and required proxyHost;
    ``check_supported`` their lengths)."""
    if options.proxy_host is None:
        return None
    username, password = options.proxy_username or None, options.proxy_password or None
    if username is None or password is None:
        return ProxySettings(options.proxy_host, options.proxy_port or 1080)
    return ProxySettings(options.proxy_host, options.proxy_port or 1080, username, password)


def _server_api(value: object) -> ServerApi | None:
    if value is None or isinstance(value, ServerApi):
        return value
    raise ConfigurationError(f"server_api must be a ServerApi, not {type(value).__name__}")


def _seconds(milliseconds: int | None) -> float | None:
    """URI milliseconds to seconds; 0 and None both mean "no limit"."""
    return milliseconds / 1000 if milliseconds else None


class _WireProtocol(asyncio.Protocol):
    """Feeds received bytes to the reader and hands complete replies to the connection.

    A read waits on one of two futures: ``_waiter`` is woken (result None) when a reply
    was queued in ``_replies`` or the connection was lost; ``_reply_waiter`` (the command
    fast path's) receives the body of a plain reply (:meth:`MessageReader.plain_reply`)
    as its result, and is woken with None like the other in every other case.
    """

    __slots__ = (
        "_draining",
        "_loop",
        "_lost",
        "_paused",
        "_replies",
        "_reply_waiter",
        "_waiter",
        "address",
        "connection",
        "reader",
        "transport",
    )

    def __init__(self, address: Address, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.address = address
        #: The loop the connection lives on, if known: asking asyncio for the running loop
        #: costs a getpid() system call, once per reply otherwise.
        self._loop = loop
        self.reader = MessageReader()
        self.transport: asyncio.Transport | None = None
        #: The Connection over this protocol, told (``is_closed``) when it is lost.
        self.connection: Connection | None = None
        self._replies: deque[OpMsg] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._reply_waiter: asyncio.Future[bytes | None] | None = None
        self._lost: MongoError | None = None
        self._draining = False
        self._paused: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only duck-typed ones
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        """The fast path's waiter takes a plain reply's body; anything else, and a reply
        whose waiter is already done (cancelled or failed, its task not yet resumed), goes
        through the reader's buffer to the queue."""
        waiter = self._reply_waiter
        if waiter is not None and not waiter.done():
            # the usual case: the chunk is the one whole reply the fast path awaits
            body = self.reader.plain_reply(data)
            if body is not None:
                waiter.set_result(body)
                return
        reader = self.reader
        reader.feed(data)
        try:
            while (message := reader.next_reply()) is not None:
                self._deliver(message)
        except ProtocolError as exc:
            self._fail(exc)

    def _deliver(self, message: OpMsg) -> None:
        if self._draining:
            self._draining = message.more_to_come  # drop it; done at the last of the stream
        else:
            self._replies.append(message)
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost is None:
            self._lost = translate_error(exc, self.address, "read")
        if self.connection is not None:
            self.connection.is_closed = True
        self._wake()
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)

    def pause_writing(self) -> None:
        self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)
        self._paused = None

    def _fail(self, exc: MongoError) -> None:
        """A malformed message: remember why, and abort the transport."""
        if self._lost is None:
            self._lost = exc
        if self.connection is not None:
            self.connection.is_closed = True
        if self.transport is not None:
            self.transport.abort()
        self._wake()

    def _wake(self) -> None:
        """Wake the read in progress (at most one waits): look at the queue, or ``_lost``."""
        waiter = self._waiter or self._reply_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait_writable(self) -> None:
        """Flow control: wait while the transport's write buffer is over its high mark."""
        if self._paused is not None:
            await self._paused

    async def wait_reply(self) -> OpMsg:
        """The next reply (exhaust replies may already be queued)."""
        while True:
            message = self.reply_nowait()
            if message is not None:
                return message
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def reply_nowait(self) -> OpMsg | None:
        """The next queued reply, None when none came yet; the error once the connection is
        lost (the non-blocking twin of :meth:`wait_reply`)."""
        if self._replies:
            return self._replies.popleft()
        if self._lost is not None:
            raise self._lost
        return None

    async def wait_drained(self) -> None:
        """Wait until the reply of a cancelled request has been read and dropped."""
        while self._draining:
            if self._lost is not None:
                raise self._lost
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None


class Connection:
    """An established connection; one command at a time (the pool hands it to one user).

    ``command`` returns the reply document as is; with ``check=True`` an ``ok: 0`` reply
    raises OperationFailure. The error policy beyond that (NotPrimary, write errors, ...) is
    the executor's, from pure predicates over the reply.
    """

    __slots__ = (
        "_busy",
        "_compressor",
        "_csot",
        "_plain_limit",
        "_plain_message_limit",
        "_protocol",
        "_read_deadline",
        "_read_started",
        "_settings",
        "_streaming",
        "_timer",
        "_timer_at",
        "_transport",
        "address",
        "auth_cache",
        "authenticator",
        "hello",
        "id",
        "is_closed",
        "max_bson_object_size",
        "max_message_size_bytes",
        "max_wire_version",
        "max_write_batch_size",
        "service_id",
        "speculative_authenticate",
        "supports_retryable_writes",
        "supports_sessions",
    )

    def __init__(
        self,
        id: int,
        address: Address,
        transport: asyncio.Transport,
        protocol: _WireProtocol,
        settings: ConnectionSettings,
    ) -> None:
        self.id = id
        self.address = address
        self.hello: Mapping[str, Any] = {}
        #: Who authenticated this connection (None: no credential): reauthentication after a
        #: ReauthenticationRequired (391) error asks it again.
        self.authenticator: Authenticator | None = None
        #: The hello's ``speculativeAuthenticate`` document, as sent (None: none was).
        self.speculative_authenticate: Mapping[str, Any] | None = None
        #: The authenticator's per-connection state (MONGODB-OIDC: the access token this
        #: connection authenticated with, the spec's *Connection Cache*).
        self.auth_cache: Any = None
        self.max_bson_object_size = DEFAULT_MAX_BSON_OBJECT_SIZE
        self.max_message_size_bytes = DEFAULT_MAX_MESSAGE_SIZE_BYTES
        self.max_write_batch_size = DEFAULT_MAX_WRITE_BATCH_SIZE
        self.max_wire_version = 0
        self.service_id: ObjectId | None = None
        #: Sessions spec: the server reported logicalSessionTimeoutMinutes (or is behind a
        #: load balancer); retryable writes spec: and it is a replica set member or a mongos.
        self.supports_sessions = False
        self.supports_retryable_writes = False
        self._transport = transport
        self._protocol = protocol
        self._settings = settings
        self._compressor: Compressor | None = None
        self._busy = False
        #: The command in progress runs under timeoutMS: socketTimeoutMS does not apply.
        self._csot = False
        #: The timed read: its deadline (None: no read is timed now) and start, and the one
        #: timer of this connection, armed at ``_timer_at`` and left armed between reads: a
        #: timer that fires early re-arms for the read in progress, so a client with
        #: timeoutMS schedules about one timer per timeoutMS, not one per command.
        self._read_deadline: float | None = None
        self._read_started = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._streaming = False
        #: True once we closed it or the peer did (or it was broken by a bad reply): the
        #: protocol sets it when the connection is lost, so reading it is one attribute load.
        self.is_closed = protocol._lost is not None
        protocol.connection = self
        self._plain_limits()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else "busy" if self._busy else "idle"
        if self._protocol._draining:
            state += ", draining"
        if self._streaming:
            state += ", streaming"
        return f"<Connection {self.id} to {format_address(self.address)}: {state}>"

    @property
    def compressor(self) -> Compressor | None:
        """The compressor negotiated in the handshake (None: messages go uncompressed)."""
        return self._compressor

    @property
    def more_to_come(self) -> bool:
        """An exhaust stream is in progress: read it with :meth:`read_more_to_come`."""
        return self._streaming

    def close(self) -> None:
        """Abort the socket now (no waiting, no goodbye)."""
        self.is_closed = True
        self._transport.abort()
        self._disarm()

    async def aclose(self) -> None:
        """Close the socket and let the loop finish with it."""
        self.is_closed = True
        self._transport.abort()
        self._disarm()
        await asyncio.sleep(0)

    def _disarm(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    async def command(
        self,
        db: str,
        command: Mapping[str, Any],
        *,
        sequences: Sequence[DocumentSequence] | None = None,
        deadline: float | None = None,
        exhaust_allowed: bool = False,
        unacknowledged: bool = False,
        check: bool = False,
        codec_options: CodecOptions | None = None,
        csot: bool = False,
        checked_at: float | None = None,
    ) -> dict[str, Any]:
        """Run ``command`` on ``db`` and return the reply document.

        ``deadline`` bounds the send and the reply; ``csot``: it is the operation's timeoutMS,
        so socketTimeoutMS (deprecated) is ignored (CSOT "Command Execution").
        ``checked_at``: the loop.time() at which the caller found the deadline not yet
        reached (the executor, deriving maxTimeMS), so the clock is read once per attempt.

        ``sequences`` are kind-1 document sequences (already encoded documents);
        ``unacknowledged`` sets moreToCome on the request (w:0) and returns ``{}`` without
        reading; ``exhaust_allowed`` lets the server stream (see :meth:`read_more_to_come`).
        """
        if self.is_closed or self._busy or self._streaming:
            self._check_usable()  # raises
        if deadline is not None:
            if checked_at is None:
                checked_at = self.time()
            if checked_at >= deadline:
                # CSOT: expired before anything was sent, so the connection stays usable
                raise NetworkTimeout(f"{format_address(self.address)}: timed out before sending")
            self._read_started = checked_at
        protocol = self._protocol
        self._busy = True
        self._csot = csot
        try:
            if protocol._draining:
                await self._guard(protocol.wait_drained(), deadline, "drain")
            # the command's BSON and its framing are inline: this runs once per command
            settings = self._settings
            doc = dict(command)
            doc["$db"] = db
            if settings.server_api is not None:
                doc.update(settings.server_api.command_fields())
            # the selected BSON implementation's encoder itself (looked up per call, so
            # use_implementation still applies): ``codec.encode`` would add a Python frame
            body = _codec._encode(doc, False, settings.codec_options)
            request_id = next(_request_ids)
            if exhaust_allowed or unacknowledged or len(body) > self._plain_limit:
                self._send(request_id, body, sequences or (), exhaust_allowed, unacknowledged,
                           command)
                return await self._finish(
                    deadline, codec_options, check, exhaust_allowed, unacknowledged
                )
            if sequences:
                # a write's document sequences, uncompressed (the body is within the limits)
                protocol.reader.expected_response_to = request_id
                buffers, size = encode_op_msg_sized(request_id, body, sequences)
                if size < self._plain_message_limit:
                    self._transport.write(b"".join(buffers))
                else:
                    self._write(buffers, self._check_message_size(size))
            else:
                # the usual request: one OP_MSG, flagBits 0, one kind-0 section, uncompressed,
                # small enough to go out in one write
                protocol.reader.expected_response_to = request_id
                self._transport.write(
                    _pack_plain_prefix(
                        len(body) + _REQUEST_PREFIX_SIZE, request_id, _PLAIN_PREFIX_TAIL
                    ) + body
                )
            if (
                protocol._paused is not None
                or protocol._replies
                or protocol._lost is not None
                or (settings.socket_timeout is not None and not csot)
            ):
                return await self._finish(deadline, codec_options, check, False, False)
            # the usual read (``_read`` inlined): the waiter receives a plain reply's body
            # (the protocol's fast path); a deadline is the connection's one timer failing
            # the waiter (as asyncpg times its waiters), not a timeout scope
            loop = protocol._loop or asyncio.get_running_loop()
            waiter = protocol._reply_waiter = loop.create_future()
            if deadline is not None:
                self._read_deadline = deadline
                if self._timer is None or self._timer_at > deadline:
                    self._arm_timer(loop, deadline)
            try:
                result = await waiter
            except (ConnectionFailure, ProtocolError):
                self.close()
                raise
            except asyncio.CancelledError:
                # cancelled while waiting, or after the reply came but before this task
                # resumed: a body handed over was read whole, so nothing is left to drop
                if (
                    not waiter.done()
                    or waiter.cancelled()
                    or waiter.exception() is not None
                    or waiter.result() is None
                ):
                    self._abandon_read()
                raise
            finally:
                protocol._reply_waiter = None
                self._read_deadline = None
            if result is None:
                # woken without a plain reply: one was queued (split, compressed, flagged),
                # or the connection is lost
                return await self._read(deadline, codec_options, check, exhaust=False)
            try:
                # ``codec.decode`` without its Python frame, as for the encoder above
                reply: dict[str, Any] = _codec._decode(
                    result, codec_options or settings.codec_options
                )
            except (BSONError, ValueError) as exc:
                self.close()
                raise ProtocolError(f"malformed reply from {format_address(self.address)}") from exc
            if check:
                _check_ok(reply)
            return reply
        finally:
            self._busy = False

    async def _finish(
        self,
        deadline: float | None,
        codec_options: CodecOptions | None,
        check: bool,
        exhaust_allowed: bool,
        unacknowledged: bool,
    ) -> dict[str, Any]:
        """After the write, the general way: wait while the transport's buffer is full, then
        read the reply (none for an unacknowledged request) with :meth:`_read`."""
        protocol = self._protocol
        if protocol._paused is not None:
            try:
                await self._guard(protocol.wait_writable(), deadline, "write")
            except asyncio.CancelledError:
                protocol._draining = not unacknowledged
                raise
        if unacknowledged:
            return {}
        return await self._read(deadline, codec_options, check, exhaust=exhaust_allowed)

    def _send(
        self,
        request_id: int,
        body: bytes,
        sequences: Sequence[DocumentSequence],
        exhaust_allowed: bool,
        unacknowledged: bool,
        command: Mapping[str, Any],
    ) -> None:
        """Send a request :meth:`command` does not frame itself: with flags (exhaust,
        unacknowledged), compressed, or with a body over ``_plain_limit``; the size limits
        are checked here."""
        self._check_body_size(body)
        flags = EXHAUST_ALLOWED if exhaust_allowed else 0
        if unacknowledged:
            flags |= MORE_TO_COME
        else:
            self._protocol.reader.expect(request_id)
        self._write(*self._frame(request_id, body, sequences, flags, command))

    def _write(self, buffers: list[bytes], size: int) -> None:
        """Write one framed message: joined (what ``writelines`` does on asyncio's loop),
        or buffer by buffer when it is large (see :func:`_write_large`)."""
        if size < _LARGE_MESSAGE:
            self._transport.write(b"".join(buffers))
        else:
            _write_large(self._transport, buffers)

    async def read_more_to_come(
        self, deadline: float | None = None, *, codec_options: CodecOptions | None = None
    ) -> dict[str, Any]:
        """The next reply of an exhaust stream (the previous reply had moreToCome)."""
        if not self._streaming:
            raise InvalidOperation("no exhaust reply is expected on this connection")
        self._streaming = False  # _check_usable refuses streaming connections to commands
        try:
            self._check_usable()
        finally:
            self._streaming = True
        self._busy = True
        if deadline is not None:
            self._read_started = self.time()
        try:
            return await self._read(deadline, codec_options, False, exhaust=True)
        finally:
            self._busy = False

    def time(self) -> float:
        """Its event loop's clock (``loop.time()``, the clock deadlines are on), read
        without asking asyncio for the running loop (a getpid() system call)."""
        return (self._protocol._loop or asyncio.get_running_loop()).time()

    def _check_usable(self) -> None:
        if self.is_closed:
            lost = self._protocol._lost
            raise AutoReconnect(
                f"{format_address(self.address)}: connection {self.id} is closed"
                + (f" ({lost})" if lost else "")
            )
        if self._busy:
            raise InvalidOperation(f"connection {self.id} is already running a command")
        if self._streaming:
            raise InvalidOperation("an exhaust stream must be read to its end first")

    def _check_body_size(self, body: bytes) -> None:
        if len(body) > self.max_bson_object_size + COMMAND_OVERHEAD:
            raise DocumentTooLarge(
                f"command document is {len(body)} bytes, the limit is "
                f"{self.max_bson_object_size + COMMAND_OVERHEAD}"
            )

    def _check_message_size(self, size: int) -> int:
        """``size``, if an OP_MSG that large may be sent (maxMessageSizeBytes)."""
        if size > self.max_message_size_bytes:
            raise ProtocolError(
                f"message of {size} bytes exceeds maxMessageSizeBytes {self.max_message_size_bytes}"
            )
        return size

    def _plain_limits(self) -> None:
        """Derive :meth:`command`'s limits from the handshake's: ``_plain_limit`` for the
        body, ``_plain_message_limit`` (exclusive) for a message with document sequences
        written in one piece."""
        self._plain_limit = self._plain_body_limit()
        self._plain_message_limit = min(self.max_message_size_bytes + 1, _LARGE_MESSAGE)

    def _plain_body_limit(self) -> int:
        """The largest command body :meth:`command` sends the usual way (one write of one
        uncompressed OP_MSG): within maxBsonObjectSize (plus the command overhead) and
        maxMessageSizeBytes, below the large-message size; -1 when the handshake
        negotiated compression (every request goes through :meth:`_send`)."""
        if self._compressor is not None:
            return -1
        return min(
            self.max_bson_object_size + COMMAND_OVERHEAD,
            self.max_message_size_bytes - _REQUEST_PREFIX_SIZE,
            _LARGE_MESSAGE - 1 - _REQUEST_PREFIX_SIZE,
        )

    def _frame(
        self,
        request_id: int,
        body: bytes,
        sequences: Sequence[DocumentSequence],
        flags: int,
        command: Mapping[str, Any],
    ) -> tuple[list[bytes], int]:
        """The message's buffers and the size of the OP_MSG they carry (compressed unless
        the compression spec forbids it for ``command``)."""
        buffers, size = encode_op_msg_sized(request_id, body, sequences, flags)
        size = self._check_message_size(size)
        if self._compressor is None or not may_compress(next(iter(command), "")):
            return buffers, size
        level = self._settings.compression.zlib_compression_level
        compressed = encode_op_compressed(
            request_id, OpCode.OP_MSG, buffers[1:], self._compressor, level
        )
        return compressed, sum(map(len, compressed))

    async def _read(
        self,
        deadline: float | None,
        codec_options: CodecOptions | None,
        check: bool,
        *,
        exhaust: bool,
    ) -> dict[str, Any]:
        try:
            if self._csot or self._settings.socket_timeout is None:
                # the usual case: no _guard frame and no wait_reply frame (wait_reply inlined:
                # same waiter, same failure handling); a deadline is one timer that fails
                # the waiter (as asyncpg times its waiters), not a timeout scope
                protocol = self._protocol
                try:
                    while (message := protocol.reply_nowait()) is None:
                        loop = protocol._loop or asyncio.get_running_loop()
                        waiter = protocol._waiter = loop.create_future()
                        if deadline is not None and self._read_deadline is None:
                            # time the read: an armed timer firing no later serves
                            self._read_deadline = deadline
                            if self._timer is None or self._timer_at > deadline:
                                self._arm_timer(loop, deadline)
                        try:
                            await waiter
                        finally:
                            protocol._waiter = None
                except (ConnectionFailure, ProtocolError):
                    self.close()
                    raise
                finally:
                    self._read_deadline = None
            else:
                message = await self._guard(self._protocol.wait_reply(), deadline, "read")
        except asyncio.CancelledError:
            if exhaust or self._streaming:
                # OP_MSG: consume every moreToCome reply or close; a stream may never end
                self.close()
            else:
                self._abandon_read()
            raise
        self._streaming = message.more_to_come
        reply = self._decode(message, codec_options)
        if check:
            _check_ok(reply)
        return reply

    def _abandon_read(self) -> None:
        """A cancelled read of a reply (not an exhaust stream): drop the reply so the
        connection stays reusable, now if it is already queued (it came after the
        cancellation but before the reading task resumed), else when it comes (draining)."""
        replies = self._protocol._replies
        draining = True
        while draining and replies:
            draining = replies.popleft().more_to_come
        self._protocol._draining = draining

    def _arm_timer(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """(Re)arm the connection's one read timer to fire at ``deadline``."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(deadline, self._expire)
        self._timer_at = deadline

    def _expire(self) -> None:
        """The timer fired: if the read in progress has a later deadline, re-arm for it;
        past its deadline, fail its waiter (the reader closes the connection: the reply
        may still come, and the next command must not read it)."""
        self._timer = None
        deadline = self._read_deadline
        if deadline is None:
            return  # no timed read now: the next one arms a timer
        loop = asyncio.get_running_loop()
        if loop.time() < deadline:
            self._arm_timer(loop, deadline)
            return
        waiter = self._protocol._waiter or self._protocol._reply_waiter
        if waiter is not None and not waiter.done():
            waited = (loop.time() - self._read_started) * 1000
            limit = "timeoutMS" if self._csot else "the deadline"
            waiter.set_exception(NetworkTimeout(
                f"{format_address(self.address)}: timed out during read ({limit} ran out "
                f"after {waited:.0f}ms waiting for the reply)"
            ))

    async def _guard(self, waiting: Awaitable[T], deadline: float | None, action: str) -> T:
        """Await ``waiting`` within the deadline (and socketTimeoutMS); failures close us."""
        limit = "timeoutMS" if self._csot else "the deadline"
        start = asyncio.get_running_loop().time()
        timeout = None if self._csot else self._settings.socket_timeout
        if timeout is not None and (deadline is None or start + timeout < deadline):
            deadline = start + timeout
            limit = f"socketTimeoutMS {timeout * 1000:.0f}ms"
        try:
            if deadline is None:
                return await waiting  # the common case: no timeout context to build
            async with asyncio.timeout_at(deadline):
                return await waiting
        except TimeoutError as exc:
            self.close()
            waited = (asyncio.get_running_loop().time() - start) * 1000
            raise NetworkTimeout(
                f"{format_address(self.address)}: timed out during {action} ({limit} ran out "
                f"after {waited:.0f}ms of {action})"
            ) from exc
        except ConnectionFailure:
            self.close()
            raise
        except ProtocolError:
            self.close()
            raise

    def _decode(self, message: OpMsg, codec_options: CodecOptions | None) -> dict[str, Any]:
        options = codec_options or self._settings.codec_options
        try:
            reply: dict[str, Any] = decode(message.body, options)
            for seq in message.sequences:
                reply[seq.identifier] = [decode(doc, options) for doc in seq.documents]
        except (BSONError, ValueError) as exc:
            self.close()
            raise ProtocolError(f"malformed reply from {format_address(self.address)}") from exc
        return reply

    def _apply_hello(self, reply: Mapping[str, Any]) -> None:
        """Take the server's limits, the compressor and (load balanced) the serviceId."""
        self.hello = reply
        self.max_bson_object_size = int(reply.get("maxBsonObjectSize", self.max_bson_object_size))
        self.max_message_size_bytes = int(
            reply.get("maxMessageSizeBytes", self.max_message_size_bytes)
        )
        self.max_write_batch_size = int(reply.get("maxWriteBatchSize", self.max_write_batch_size))
        self.max_wire_version = int(reply.get("maxWireVersion", 0))
        self._protocol.reader.max_message_size = self.max_message_size_bytes
        self._compressor = negotiate(self._settings.compression, reply)
        self._plain_limits()
        if self._settings.load_balanced:
            service_id = reply.get("serviceId")
            if not isinstance(service_id, ObjectId):
                raise ConfigurationError(  # the load balancers spec's wording
                    "Driver attempted to initialize in load balancing mode, but the server "
                    "does not support this mode (no serviceId in its hello): loadBalanced=true "
                    "needs a load-balanced deployment"
                )
            self.service_id = service_id
        behind_balancer = self.service_id is not None
        self.supports_sessions = (
            reply.get("logicalSessionTimeoutMinutes") is not None or behind_balancer
        )
        self.supports_retryable_writes = self.supports_sessions and (
            "setName" in reply or reply.get("msg") == "isdbgrid" or behind_balancer
        )

    async def _handshake(
        self,
        authenticator: Authenticator | None,
        deadline: float | None,
        auth_timeout: float | None = None,
    ) -> None:
        speculative = authenticator.speculative_document() if authenticator else None
        self.authenticator = authenticator
        self.speculative_authenticate = speculative
        mechs = authenticator.sasl_supported_mechs if authenticator else None
        cmd = handshake_command(
            self._settings.handshake_options(),
            speculative_authenticate=speculative,
            sasl_supported_mechs=mechs,
        )
        try:
            reply = await self.command("admin", cmd, deadline=deadline, check=True)
        except ConnectionFailure as exc:
            add_backpressure_labels(exc)  # CMAP: a network error or timeout in the hello
            raise
        self._apply_hello(reply)
        if authenticator is not None:
            if auth_timeout is not None:
                self._settings = replace(self._settings, socket_timeout=auth_timeout)
            # CMAP: never the backpressure labels for an error in the authentication steps
            await authenticator.authenticate(self, reply, deadline=deadline)


#: A message this large goes out buffer by buffer (see _write_large); smaller ones in one
#: writelines call.
_LARGE_MESSAGE = 256 * 1024
#: Within a large message, a buffer this large is written on its own.
_LARGE_BUFFER = 64 * 1024


def _write_large(transport: asyncio.Transport, buffers: list[bytes]) -> None:
    """Write a large message without one more copy of it: asyncio's ``writelines`` (before
    Python 3.12) joins its buffers into one bytes first, a copy of a multi-megabyte document
    (bulk and large inserts); each large buffer is written as is, the small ones between them
    joined (a few syscalls more, no copy of the documents)."""
    small: list[bytes] = []
    for buffer in buffers:
        if len(buffer) < _LARGE_BUFFER:
            small.append(buffer)
            continue
        if small:
            transport.write(b"".join(small))
            small = []
        transport.write(buffer)
    if small:
        transport.write(b"".join(small))


def _check_ok(reply: Mapping[str, Any]) -> None:
    if reply.get("ok") in (1, 1.0, True):
        return
    message = reply.get("errmsg")
    code = reply.get("code")
    raise OperationFailure(
        message if isinstance(message, str) else "command failed",
        code if isinstance(code, int) else None,
        reply,
    )


async def connect(
    address: Address,
    settings: ConnectionSettings,
    *,
    id: int,
    authenticator: Authenticator | None = None,
    handshake: bool = True,
    deadline: float | None = None,
    auth_timeout: float | None = None,
) -> Connection:
    """Open, handshake and authenticate a connection; on any failure nothing is left open.

    ``connectTimeoutMS`` bounds the TCP/TLS connect and, separately, the handshake plus
    authentication; ``deadline`` (timeoutMS) bounds everything. ``auth_timeout`` (seconds)
    replaces socketTimeoutMS for each authentication command, the budget starting again with
    every command (CSOT "Background Connection Pooling": the client's timeoutMS for a
    minPoolSize connection); the hello and later commands keep socketTimeoutMS.

    A network error or timeout while opening the socket/TLS or in the hello carries the
    ``SystemOverloadedError`` and ``RetryableError`` labels (CMAP backpressure); DNS,
    certificate/hostname and authentication failures do not.
    """
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await open_transport(
            address,
            lambda: _WireProtocol(address, loop),
            tls=settings.tls,
            deadline=_earliest(deadline, loop, settings.connect_timeout),
            proxy=settings.proxy,
        )
    except ConnectionFailure as exc:
        if is_backpressure_candidate(exc.__cause__):
            add_backpressure_labels(exc)
        raise
    # CSOT: under an operation's timeoutMS the handshake and authentication ignore
    # socketTimeoutMS (deprecated); the connection keeps it for later commands without one
    establishing = settings if deadline is None else replace(settings, socket_timeout=None)
    conn = Connection(id, address, transport, protocol, establishing)
    try:
        if handshake:
            await conn._handshake(
                authenticator, _earliest(deadline, loop, settings.connect_timeout), auth_timeout
            )
    except BaseException:
        conn.close()
        raise
    conn._settings = settings
    return conn


#: CMAP "backpressure-enabled": the labels a network error or timeout while opening the
#: socket/TLS or in the hello gets, so SDAM keeps the pool and the operation may be retried.
BACKPRESSURE_LABELS = ("SystemOverloadedError", "RetryableError")

def add_backpressure_labels(error: ConnectionFailure) -> None:
    """Label ``error`` SystemOverloadedError + RetryableError (CMAP: Establishing a Connection)."""
    for label in BACKPRESSURE_LABELS:
        error._add_error_label(label)


def _earliest(
    deadline: float | None, loop: asyncio.AbstractEventLoop, timeout: float | None
) -> float | None:
    if timeout is None:
        return deadline
    bound = loop.time() + timeout
    return bound if deadline is None else min(deadline, bound)
