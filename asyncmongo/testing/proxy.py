"""Network faults on cue: a TCP proxy in front of a simulated member, breaking the bytes between
the driver and the member the way real networks do.

``ReplicaSet(3, fault_proxy=True)`` (any deployment takes ``fault_proxy``) puts every member
behind its own :class:`FaultProxy`: the member names itself by the proxy's address, so drivers
discovering the set connect through it. Each method of the proxy installs a :class:`Fault`
at once and returns it; the fault is an async context manager that heals it on exit::

    proxy = rs.primary.proxy
    async with proxy.latency(50, jitter_ms=20):        # every message 50-70 ms late
        ...
    async with proxy.blackhole(scope=Scope.EXISTING):  # open connections go silent
        ...
    proxy.reset(after_bytes=300)                       # cut new connections after 300 bytes
    await proxy.heal()                                 # every fault off

Faults: :meth:`~FaultProxy.latency` (fixed, with jitter), :meth:`~FaultProxy.bandwidth`,
:meth:`~FaultProxy.blackhole` (accept, never answer), :meth:`~FaultProxy.reset` (now, or after
N bytes), :meth:`~FaultProxy.truncate` (a reply stops halfway, the connection closes),
:meth:`~FaultProxy.corrupt` (a reply's body bytes flipped), :meth:`~FaultProxy.misdirect` (a
reply answering another request: a wrong ``responseTo``), :meth:`~FaultProxy.drip` (a reply a
few bytes at a time), :meth:`~FaultProxy.refuse` (new connections refused: ECONNREFUSED) and
:meth:`~FaultProxy.partition` (driver and member cut off each other: connections hang, new
ones too). A partition between members of a replica set is
:meth:`asyncmongo.testing.ReplicaSet.partition_members`.

Each fault takes a :class:`Scope`: connections opened after it (``NEW``), those open when it
was installed (``EXISTING``), or both (``BOTH``, the default); ``connections=`` narrows it to
chosen :class:`Link` objects (``proxy.links``), e.g. a random few under load.

Without TLS the proxy knows where each wire message starts and ends (the 16-byte header's
length), so reply faults hit whole messages; behind TLS it sees only encrypted records, and
the same faults hit raw chunks (a flipped byte fails the record's MAC).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import random
import socket
import struct
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Direction", "Fault", "FaultKind", "FaultProxy", "Link", "Scope"]

_LENGTH = struct.Struct("<i")
_HEADER_SIZE = 16
_MAX_MESSAGE = 64 * 1024 * 1024
_CHUNK = 64 * 1024


class Scope(enum.Enum):
    """Which connections a fault applies to."""

    #: Connections accepted after the fault was installed.
    NEW = "new"
    #: Connections open when the fault was installed.
    EXISTING = "existing"
    BOTH = "both"


class Direction(enum.Enum):
    """Which way bytes flow through a link."""

    #: Driver to member: requests.
    UP = "up"
    #: Member to driver: replies.
    DOWN = "down"


class FaultKind(enum.Enum):
    LATENCY = "latency"
    BANDWIDTH = "bandwidth"
    BLACKHOLE = "blackhole"
    RESET = "reset"
    TRUNCATE = "truncate"
    CORRUPT = "corrupt"
    DRIP = "drip"
    REFUSE = "refuse"
    PARTITION = "partition"
    MISDIRECT = "misdirect"


#: Faults that act on the replies only (the member-to-driver direction).
_REPLY_FAULTS = frozenset({FaultKind.TRUNCATE, FaultKind.CORRUPT, FaultKind.DRIP,
                           FaultKind.MISDIRECT})


class Link:
    """One proxied connection: the driver's socket and the proxy's to the member."""

    __slots__ = ("_tasks", "client", "closed", "id", "moved", "peer", "upstream")

    def __init__(self, link_id: int, client: asyncio.StreamWriter, peer: str) -> None:
        self.id = link_id
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.peer = peer
        #: Bytes forwarded, by direction.
        self.moved = {Direction.UP: 0, Direction.DOWN: 0}
        self.closed = False
        self._tasks: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"<Link {self.id} {self.peer} {state}, {self.moved[Direction.UP]} up, "
                f"{self.moved[Direction.DOWN]} down>")

    def reset(self) -> None:
        """Abort both sockets; the driver's side gets a TCP RST (connection reset by peer)."""
        self._end(rst=True)

    def close(self) -> None:
        """Close both sockets (a FIN each way), as a proxy does when one side hangs up."""
        self._end(rst=False)

    def _end(self, *, rst: bool) -> None:
        if self.closed:
            return
        self.closed = True
        _abort(self.client, rst=rst)
        if self.upstream is not None:
            _abort(self.upstream, rst=False)


@dataclass(eq=False)
class Fault:
    """One fault installed on a proxy: ``async with`` it (or ``await fault.heal()``)."""

    proxy: FaultProxy = field(repr=False)
    kind: FaultKind
    scope: Scope
    #: Links opened before this id existed when the fault was installed.
    first_new_link: int = field(repr=False)
    connections: frozenset[int] | None = None
    ms: float = 0.0
    jitter_ms: float = 0.0
    bytes_per_second: float = 0.0
    after_bytes: int = 0
    chunk: int = 1
    count: int | None = None
    active: bool = True

    def applies_to(self, link: Link) -> bool:
        if not self.active:
            return False
        if self.connections is not None:
            return link.id in self.connections
        if link.id >= self.first_new_link:
            return self.scope is not Scope.EXISTING
        return self.scope is not Scope.NEW

    def consume(self) -> None:
        """A counted fault (``count=N``) was used once; the last use heals it."""
        if self.count is not None:
            self.count -= 1
            if self.count <= 0:
                self.active = False
                self.proxy.faults.remove(self)

    async def heal(self) -> None:
        """Take the fault off; a refusal ends by listening again."""
        await self.proxy.remove(self)

    async def __aenter__(self) -> Fault:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.heal()


class FaultProxy:
    """A TCP proxy on 127.0.0.1 forwarding to a member's port, with faults on cue.

    ``framed=False`` (a TLS member) forwards raw chunks instead of whole wire messages.
    ``seed`` makes jitter and corruption repeatable."""

    def __init__(self, *, port: int = 0, framed: bool = True, seed: int | None = None) -> None:
        self._port = port
        self.framed = framed
        self.target_port: int | None = None
        self.faults: list[Fault] = []
        self._links: dict[Link, None] = {}
        self._next_link = 1
        self._listener: asyncio.Server | None = None
        self._running = False
        self._rng = random.Random(seed)
        self._accepting: set[asyncio.Task[Any]] = set()
        #: Per reset fault: the bytes each link open at its install had moved by then.
        self._reset_marks: dict[Fault, dict[int, int]] = {}

    def __repr__(self) -> str:
        kinds = ", ".join(f.kind.value for f in self.faults)
        state = "listening" if self._listener is not None else "not listening"
        return (f"<FaultProxy 127.0.0.1:{self._port} -> {self.target_port} {state}, "
                f"{len(self._links)} links{f' [{kinds}]' if kinds else ''}>")

    @property
    def port(self) -> int:
        return self._port

    @property
    def links(self) -> list[Link]:
        """The open connections, oldest first."""
        return [link for link in self._links if not link.closed]

    @property
    def total_links(self) -> int:
        """Connections accepted since the proxy was created."""
        return self._next_link - 1

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self, target_port: int) -> None:
        """Listen (on the same port as before, after a :meth:`close`) and forward to
        ``target_port``."""
        self.target_port = target_port
        self._running = True
        if not any(f.kind is FaultKind.REFUSE for f in self.faults):
            await self._listen()

    async def close(self) -> None:
        """Stop listening and reset every connection (the member's process is gone)."""
        self._running = False
        await self._unlisten()
        for link in list(self._links):
            link.reset()
        tasks = list(self._accepting)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._links.clear()

    async def _listen(self) -> None:
        if self._listener is None:
            self._listener = await asyncio.start_server(
                self._accept, "127.0.0.1", self._port, reuse_address=True)
            self._port = self._listener.sockets[0].getsockname()[1]

    async def _unlisten(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            await listener.wait_closed()

    # --- faults ----------------------------------------------------------------------------

    def _install(self, kind: FaultKind, scope: Scope, connections: Collection[Link] | None,
                 **params: Any) -> Fault:
        fault = Fault(self, kind, scope, self._next_link,
                      frozenset(link.id for link in connections)
                      if connections is not None else None, **params)
        self.faults.append(fault)
        return fault

    def latency(self, ms: float, *, jitter_ms: float = 0.0, scope: Scope = Scope.BOTH,
                connections: Collection[Link] | None = None) -> Fault:
        """Every message, both ways, ``ms`` (plus up to ``jitter_ms``) milliseconds late."""
        return self._install(FaultKind.LATENCY, scope, connections, ms=ms, jitter_ms=jitter_ms)

    def bandwidth(self, bytes_per_second: float, *, scope: Scope = Scope.BOTH,
                  connections: Collection[Link] | None = None) -> Fault:
        """At most ``bytes_per_second`` each way, per connection."""
        if bytes_per_second <= 0:
            raise ValueError("bytes_per_second must be positive")
        return self._install(FaultKind.BANDWIDTH, scope, connections,
                             bytes_per_second=bytes_per_second)

    def blackhole(self, *, scope: Scope = Scope.BOTH,
                  connections: Collection[Link] | None = None) -> Fault:
        """Accept and read, never answer: requests vanish, the driver waits (timeouts)."""
        return self._install(FaultKind.BLACKHOLE, scope, connections)

    def reset(self, *, after_bytes: int = 0, scope: Scope = Scope.BOTH,
              connections: Collection[Link] | None = None) -> Fault:
        """Reset connections (TCP RST): open ones in scope at once (``after_bytes=0``), or any
        in scope once it has forwarded ``after_bytes`` more bytes (both ways together)."""
        fault = self._install(FaultKind.RESET, scope, connections, after_bytes=after_bytes)
        for link in self.links:
            if after_bytes <= 0 and fault.applies_to(link):
                link.reset()
        self._reset_marks[fault] = {link.id: sum(link.moved.values()) for link in self.links}
        return fault

    def truncate(self, *, count: int | None = 1, scope: Scope = Scope.BOTH,
                 connections: Collection[Link] | None = None) -> Fault:
        """The next ``count`` replies (None: every one) stop halfway and the connection
        closes."""
        return self._install(FaultKind.TRUNCATE, scope, connections, count=count)

    def corrupt(self, *, count: int | None = 1, scope: Scope = Scope.BOTH,
                connections: Collection[Link] | None = None) -> Fault:
        """The next ``count`` replies (None: every one) arrive with bytes of their body
        flipped (the length is kept, so the driver reads the whole, broken, message)."""
        return self._install(FaultKind.CORRUPT, scope, connections, count=count)

    def misdirect(self, *, count: int | None = 1, scope: Scope = Scope.BOTH,
                  connections: Collection[Link] | None = None) -> Fault:
        """The next ``count`` replies carry another request's ``responseTo`` (framed links
        only: behind TLS the header is encrypted)."""
        return self._install(FaultKind.MISDIRECT, scope, connections, count=count)

    def drip(self, *, chunk: int = 1, interval_ms: float = 5.0, scope: Scope = Scope.BOTH,
             connections: Collection[Link] | None = None) -> Fault:
        """Replies arrive ``chunk`` bytes at a time, ``interval_ms`` apart."""
        return self._install(FaultKind.DRIP, scope, connections, chunk=max(1, chunk),
                             ms=interval_ms)

    def refuse(self) -> Fault:
        """Refuse new connections (the port closes: ECONNREFUSED); open ones carry on."""
        fault = self._install(FaultKind.REFUSE, Scope.NEW, None)
        if self._listener is not None:
            self._listener.close()  # stops accepting at once; heal listens again
            self._listener = None
        return fault

    def partition(self, *, scope: Scope = Scope.BOTH,
                  connections: Collection[Link] | None = None) -> Fault:
        """Cut the driver off from the member: nothing crosses either way, connecting hangs
        (accepted, never answered) as when packets are dropped."""
        return self._install(FaultKind.PARTITION, scope, connections)

    async def remove(self, fault: Fault) -> None:
        fault.active = False
        if fault in self.faults:
            self.faults.remove(fault)
        self._reset_marks.pop(fault, None)
        if (fault.kind is FaultKind.REFUSE and self._running
                and not any(f.kind is FaultKind.REFUSE for f in self.faults)):
            await self._listen()

    async def heal(self) -> None:
        """Take every fault off."""
        for fault in list(self.faults):
            await self.remove(fault)

    def _active(self, link: Link, kinds: frozenset[FaultKind]) -> Iterator[Fault]:
        return (f for f in list(self.faults) if f.kind in kinds and f.applies_to(link))

    # --- forwarding ------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._accepting.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # close() (or the loop's shutdown) cancels this handler; it must end normally,
            # since Python 3.11's stream callback logs a cancelled handler as a traceback.
            pass
        finally:
            self._accepting.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        link = Link(self._next_link, writer, f"{peer[0]}:{peer[1]}" if peer else "?")
        self._next_link += 1
        self._links[link] = None
        try:
            if self.target_port is None:
                raise ConnectionRefusedError
            up_reader, link.upstream = await asyncio.open_connection(
                "127.0.0.1", self.target_port)
        except OSError:
            link.reset()  # the member is down: the driver's connection is reset
            self._links.pop(link, None)
            return
        if link.closed:  # reset while connecting to the member
            _abort(link.upstream, rst=False)
            self._links.pop(link, None)
            return
        link._tasks = [
            asyncio.ensure_future(self._pump(link, reader, link.upstream, Direction.UP)),
            asyncio.ensure_future(self._pump(link, up_reader, writer, Direction.DOWN)),
        ]
        try:
            await asyncio.gather(*link._tasks)
        except asyncio.CancelledError:
            pass  # close() cancels the link; the pumps end on their own otherwise
        finally:
            for task in link._tasks:
                task.cancel()
            link.close()
            self._links.pop(link, None)
            await asyncio.gather(*link._tasks, return_exceptions=True)

    async def _pump(self, link: Link, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, direction: Direction) -> None:
        """Forward one direction until EOF; any fault in force shapes each message."""
        try:
            while not link.closed:
                data = await self._read(reader)
                if not data:
                    break
                await self._forward(link, writer, direction, data)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            link.close()  # one side hung up (or broke): close both

    async def _read(self, reader: asyncio.StreamReader) -> bytes:
        if not self.framed:
            return await reader.read(_CHUNK)
        try:
            head = await reader.readexactly(4)
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        (length,) = _LENGTH.unpack(head)
        if not 4 < length <= _MAX_MESSAGE:
            return head + await reader.read(_CHUNK)  # not a wire message: pass it on raw
        return head + await reader.readexactly(length - 4)

    async def _forward(self, link: Link, writer: asyncio.StreamWriter, direction: Direction,
                       data: bytes) -> None:
        if any(self._active(link, frozenset({FaultKind.BLACKHOLE}))):
            return  # swallowed: the peer waits for an answer that never comes
        while any(self._active(link, frozenset({FaultKind.PARTITION}))):
            await asyncio.sleep(0.05)  # held, as TCP retransmits across a dead network
            if link.closed:
                return
        delay = sum(f.ms + self._rng.uniform(0, f.jitter_ms)
                    for f in self._active(link, frozenset({FaultKind.LATENCY})))
        if delay > 0:
            await asyncio.sleep(delay / 1000)
        if direction is Direction.DOWN and await self._reply_fault(link, writer, data):
            return
        data = self._reset_point(link, data)
        await self._write(link, writer, direction, data)
        if self._reset_due(link):
            link.reset()

    async def _reply_fault(self, link: Link, writer: asyncio.StreamWriter, data: bytes) -> bool:
        """Apply the first reply fault in force; True when it consumed the reply."""
        for fault in self._active(link, _REPLY_FAULTS):
            if fault.kind is FaultKind.TRUNCATE:
                fault.consume()
                writer.write(data[: max(1, len(data) // 2)])
                with contextlib.suppress(OSError):
                    await writer.drain()
                link.close()
                return True
            if fault.kind is FaultKind.CORRUPT:
                fault.consume()
                await self._write(link, writer, Direction.DOWN, self._corrupted(data))
                return True
            if fault.kind is FaultKind.MISDIRECT and self.framed and len(data) >= _HEADER_SIZE:
                fault.consume()
                (response_to,) = _LENGTH.unpack_from(data, 8)
                wrong = _LENGTH.pack((response_to + 1 + self._rng.randrange(1000)) % 2**31)
                await self._write(link, writer, Direction.DOWN, data[:8] + wrong + data[12:])
                return True
            if fault.kind is FaultKind.DRIP:
                for start in range(0, len(data), fault.chunk):
                    await self._write(link, writer, Direction.DOWN,
                                      data[start:start + fault.chunk])
                    await asyncio.sleep(fault.ms / 1000)
                return True
        return False

    def _corrupted(self, data: bytes) -> bytes:
        """Flip bytes after the header (framed), so the length still holds."""
        start = _HEADER_SIZE if self.framed and len(data) > _HEADER_SIZE else 0
        if start == 0 and self.framed:
            start = min(4, len(data) - 1)
        broken = bytearray(data)
        for _ in range(max(1, (len(data) - start) // 8)):
            position = self._rng.randrange(start, len(data))
            broken[position] ^= 0xFF
        return bytes(broken)

    async def _write(self, link: Link, writer: asyncio.StreamWriter, direction: Direction,
                     data: bytes) -> None:
        rates = [f.bytes_per_second
                 for f in self._active(link, frozenset({FaultKind.BANDWIDTH}))]
        if not rates:
            writer.write(data)
            link.moved[direction] += len(data)
            await writer.drain()
            return
        rate = min(rates)
        step = max(1, int(rate / 50))  # 20 ms slices
        for start in range(0, len(data), step):
            piece = data[start:start + step]
            writer.write(piece)
            link.moved[direction] += len(piece)
            await writer.drain()
            await asyncio.sleep(len(piece) / rate)

    # --- reset after N bytes ---------------------------------------------------------------

    def _budget(self, link: Link) -> int | None:
        """Bytes the link may still move before a reset in force cuts it (None: no limit)."""
        budgets = []
        for fault in self._active(link, frozenset({FaultKind.RESET})):
            start = self._reset_marks.get(fault, {}).get(link.id, 0)
            budgets.append(start + fault.after_bytes - sum(link.moved.values()))
        return min(budgets) if budgets else None

    def _reset_point(self, link: Link, data: bytes) -> bytes:
        budget = self._budget(link)
        if budget is None or budget >= len(data):
            return data
        return data[: max(0, budget)]

    def _reset_due(self, link: Link) -> bool:
        budget = self._budget(link)
        return budget is not None and budget <= 0


def _abort(writer: asyncio.StreamWriter, *, rst: bool) -> None:
    """Close a socket at once; with ``rst`` the peer gets a TCP RST, not a FIN."""
    sock = writer.get_extra_info("socket")
    if rst and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
