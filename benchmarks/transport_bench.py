"""The measurement behind the connection's transport design (see runtime/connection.py).

Round trips of a small command (``{"ping": 1}``) over loopback, three client designs that do
the same work (encode with asyncmongo.bson, frame an OP_MSG, send, read, check responseTo with
the sans-I/O MessageReader, decode the reply):

- ``connection``: the real ``Connection`` (asyncio.Protocol + data_received feeding the
  reader, plus its bookkeeping: busy/drain state, deadlines, $db, server API);
- ``protocol``: a minimal asyncio.Protocol doing only the common work;
- ``buffered``: the same with an asyncio.BufferedProtocol receiving into a preallocated buffer;
- ``streams``: asyncio.open_connection with readexactly(header) + readexactly(body).

The server is a minimal Protocol answering each request with a pre-encoded reply, so its cost
is the same for all. Run: ``python benchmarks/transport_bench.py [--n 20000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import time
from collections.abc import Awaitable, Callable
from typing import cast

import uvloop

from asyncmongo.bson.codec import decode, encode
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.core.wire.op_msg import encode_op_msg
from asyncmongo.core.wire.opcodes import HEADER
from asyncmongo.core.wire.reader import MessageReader
from asyncmongo.runtime.connection import ConnectionSettings, connect

COMMAND = {"ping": 1}
REPLY_BODY = encode({"ok": 1.0})


class EchoServer(asyncio.Protocol):
    """Answers every OP_MSG with ``{ok: 1}`` (responseTo patched in)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.template = bytearray(b"".join(encode_op_msg(1, REPLY_BODY)))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 16:
            length, request_id, _, _ = HEADER.unpack_from(self.buf)
            if len(self.buf) < length:
                return
            del self.buf[:length]
            struct.pack_into("<i", self.template, 8, request_id)
            assert self.transport is not None
            self.transport.write(bytes(self.template))


_ids = iter(range(1, 1 << 30))


def request() -> tuple[int, list[bytes]]:
    rid = next(_ids)
    return rid, encode_op_msg(rid, encode({**COMMAND, "$db": "admin"}))


async def bench_protocol(port: int, n: int) -> float:
    conn = await connect(
        ("127.0.0.1", port), ConnectionSettings(host=HostInfo()), id=1, handshake=False
    )
    start = time.perf_counter()
    for _ in range(n):
        await conn.command("admin", COMMAND)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


class Plain(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = MessageReader()
        self.waiter: asyncio.Future[None] | None = None
        self.replies: list[object] = []

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (msg := self.reader.next_reply()) is not None:
            self.replies.append(msg)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(None)


async def bench_plain(port: int, n: int) -> float:
    return await _bench_minimal(port, n, Plain)


class Buffered(asyncio.BufferedProtocol):
    def __init__(self) -> None:
        self.reader = MessageReader()
        self.buffer = bytearray(65536)
        self.waiter: asyncio.Future[None] | None = None
        self.replies: list[object] = []

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.reader.feed(memoryview(self.buffer)[:nbytes])
        while (msg := self.reader.next_reply()) is not None:
            self.replies.append(msg)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(None)


async def bench_buffered(port: int, n: int) -> float:
    return await _bench_minimal(port, n, Buffered)


async def _bench_minimal(port: int, n: int, factory: type[Plain] | type[Buffered]) -> float:
    loop = asyncio.get_running_loop()
    transport, created = await loop.create_connection(factory, "127.0.0.1", port)
    proto = cast(Plain, created)  # Plain and Buffered share these attributes
    start = time.perf_counter()
    for _ in range(n):
        rid, buffers = request()
        proto.reader.expect(rid)
        transport.writelines(buffers)
        while not proto.replies:
            proto.waiter = loop.create_future()
            await proto.waiter
        decode(proto.replies.pop().body)  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - start
    transport.close()
    return elapsed


async def bench_streams(port: int, n: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.perf_counter()
    for _ in range(n):
        rid, buffers = request()
        parser = MessageReader()
        parser.expect(rid)
        writer.writelines(buffers)
        header = await reader.readexactly(16)
        body = await reader.readexactly(HEADER.unpack(header)[0] - 16)
        parser.feed(header + body)
        msg = parser.next_reply()
        assert msg is not None
        decode(msg.body)
    elapsed = time.perf_counter() - start
    writer.close()
    await writer.wait_closed()
    return elapsed


CLIENTS: dict[str, Callable[[int, int], Awaitable[float]]] = {
    "connection": bench_protocol,
    "protocol": bench_plain,
    "buffered": bench_buffered,
    "streams": bench_streams,
}


async def run_all(n: int, runs: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(EchoServer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    results: dict[str, list[float]] = {name: [] for name in CLIENTS}
    for _ in range(runs):
        for name, client in CLIENTS.items():  # interleaved, so drift hits all alike
            results[name].append(await client(port, n) / n * 1e6)
    server.close()
    await server.wait_closed()
    return {name: statistics.median(values) for name, values in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    table = {
        "asyncio": asyncio.run(run_all(args.n, args.runs)),
        "uvloop": uvloop.run(run_all(args.n, args.runs)),
    }
    print(f"median us per round trip ({args.runs} runs x {args.n})")
    print(f"{'client':<12}{'asyncio':>10}{'uvloop':>10}")
    for name in CLIENTS:
        print(f"{name:<12}{table['asyncio'][name]:>10.1f}{table['uvloop'][name]:>10.1f}")


if __name__ == "__main__":
    main()
