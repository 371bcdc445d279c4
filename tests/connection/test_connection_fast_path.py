"""The command fast path (a plain request, a plain reply in one chunk, handed to the waiter)
and every way off it: split replies, flagged or compressed replies, large requests, a waiter
already done when the reply comes, and a peer that closes an idle connection."""

from __future__ import annotations

import asyncio
import struct
from typing import Any, cast

import pytest

from asyncmongo.bson.codec import encode
from asyncmongo.core.wire.compression import CompressionSettings
from asyncmongo.core.wire.handshake import HostInfo
from asyncmongo.core.wire.op_msg import DocumentSequence, encode_op_msg
from asyncmongo.core.wire.opcodes import MORE_TO_COME
from asyncmongo.errors import AutoReconnect
from asyncmongo.runtime.connection import (
    Connection,
    ConnectionSettings,
    _WireProtocol,
    connect,
)
from tests.support.scripted_server import Peer, Request, ScriptedServer, op_msg

pytestmark = pytest.mark.timeout(10)

SETTINGS = ConnectionSettings(host=HostInfo("Linux"), connect_timeout=5.0)


async def handler(request: Request, peer: Peer) -> None:
    name = request.name
    if name == "split":
        message = op_msg({"ok": 1.0, "pad": "x" * 100}, request.request_id)
        for cut in (0, 3, 16, 22, 60):
            nxt = {0: 3, 3: 16, 16: 22, 22: 60, 60: len(message)}[cut]
            peer.send_raw(message[cut:nxt])
            await peer.writer.drain()
            await asyncio.sleep(0.002)
    elif name == "flagged":
        await peer.reply(request, {"ok": 1.0, "flagged": True}, flags=1 << 16)
    elif name == "bye":
        await peer.reply(request, {"ok": 1.0})
        peer.abort()
    else:
        await peer.default(request)


async def test_plain_replies_in_a_row() -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        for _ in range(5):
            assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        assert conn._protocol.reader.expected_response_to is None
        conn.close()


async def test_a_reply_split_over_chunks() -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        for _ in range(2):
            reply = await conn.command("db", {"split": 1})
            assert reply == {"ok": 1.0, "pad": "x" * 100}
            assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_a_reply_with_an_optional_flag_bit() -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        assert await conn.command("db", {"flagged": 1}) == {"ok": 1.0, "flagged": True}
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


@pytest.mark.parametrize("size", [255 * 1024, 256 * 1024 - 40, 300 * 1024])
async def test_large_requests_around_the_one_write_limit(size: int) -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        reply = await conn.command("db", {"echo": 1, "s": "y" * size})
        assert reply["command"]["s"] == "y" * size
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_with_compression_every_request_takes_the_general_send() -> None:
    settings = ConnectionSettings(
        host=HostInfo("Linux"), compression=CompressionSettings(("zlib",))
    )
    async with ScriptedServer(handler, compressors=("zlib",)) as server:
        conn = await connect(server.address, settings, id=1)
        assert conn.compressor is not None and conn._plain_limit == -1
        assert await conn.command("db", {"echo": 1, "s": "z" * 500}) is not None
        assert server.requests[-1].compressor_id == 2
        conn.close()


async def test_an_idle_connection_closed_by_the_peer_is_closed() -> None:
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        assert await conn.command("db", {"bye": 1}) == {"ok": 1.0}
        for _ in range(100):
            if conn.is_closed:
                break
            await asyncio.sleep(0.01)
        assert conn.is_closed and "closed" in repr(conn)
        with pytest.raises(AutoReconnect):
            await conn.command("db", {"ping": 1})


def _plain(response_to: int) -> bytes:
    return op_msg({"ok": 1.0}, response_to)


async def test_protocol_hands_a_plain_reply_to_the_fast_waiter() -> None:
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.reader.expect(5)
    waiter = protocol._reply_waiter = asyncio.get_running_loop().create_future()
    protocol.data_received(_plain(5))
    assert waiter.done() and waiter.result() == _plain(5)[21:]
    assert not protocol._replies


async def test_protocol_queues_a_reply_whose_waiter_is_already_done() -> None:
    """A cancelled (or timed-out) read not yet resumed: the reply is queued, as for any
    reply nobody waits for (the read's own handler then drains or closes)."""
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.reader.expect(5)
    waiter = protocol._reply_waiter = asyncio.get_running_loop().create_future()
    waiter.cancel()
    protocol.data_received(_plain(5))
    assert len(protocol._replies) == 1 and protocol._replies[0].response_to == 5


async def test_protocol_wakes_the_fast_waiter_with_none_for_a_split_reply() -> None:
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.reader.expect(5)
    waiter = protocol._reply_waiter = asyncio.get_running_loop().create_future()
    data = _plain(5)
    protocol.data_received(data[:10])
    assert not waiter.done()
    protocol.data_received(data[10:])
    assert waiter.done() and waiter.result() is None and len(protocol._replies) == 1


async def test_protocol_general_waiter_gets_none_and_a_queued_reply() -> None:
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.reader.expect(5)
    waiter = protocol._waiter = asyncio.get_running_loop().create_future()
    protocol.data_received(_plain(5))
    assert waiter.result() is None and len(protocol._replies) == 1


async def test_protocol_bad_reply_fails_the_fast_waiter_path() -> None:
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.reader.expect(5)
    waiter = protocol._reply_waiter = asyncio.get_running_loop().create_future()
    protocol.data_received(struct.pack("<iiii", 16, 1, 6, 2013))
    assert waiter.result() is None and protocol._lost is not None


async def _paused_handler(request: Request, peer: Peer) -> None:
    if request.name == "hold":
        await asyncio.sleep(float(request.command["hold"]))  # reads nothing meanwhile
    elif request.name == "fill":
        pass  # unacknowledged
    elif request.name == "insert":
        await peer.reply(request, {"ok": 1.0, "n": len(request.sequences["documents"])})
    else:
        await handler(request, peer)


async def _pause_writing(conn: Connection) -> None:
    """Fill every buffer while the server reads nothing: an unacknowledged 8 MB request,
    written behind the connection's back, pauses the transport."""
    conn._transport.set_write_buffer_limits(high=1024)
    await conn.command("db", {"hold": 0.3}, unacknowledged=True)
    fill = encode({"fill": 1, "$db": "db", "x": "f" * 8_000_000})
    conn._transport.write(b"".join(encode_op_msg(999_999, fill, flags=MORE_TO_COME)))
    assert conn._protocol._paused is not None


async def test_a_paused_write_then_the_reply_on_the_plain_path() -> None:
    """A request the command frames itself (document sequences, or a plain body) while the
    transport is paused: it waits for the buffer to drain, then reads its reply."""
    async with ScriptedServer(_paused_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await _pause_writing(conn)
        docs = [encode({"_id": i, "s": "d" * 500}) for i in range(4)]
        task = asyncio.ensure_future(
            conn.command("db", {"insert": "c"}, sequences=[DocumentSequence("documents", docs)])
        )
        await asyncio.sleep(0.05)
        assert not task.done() and conn._protocol._paused is not None
        assert await task == {"ok": 1.0, "n": 4}
        await _pause_writing(conn)
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        conn.close()


async def test_a_cancelled_paused_write_on_the_plain_path_drains() -> None:
    async with ScriptedServer(_paused_handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        await _pause_writing(conn)
        task = asyncio.ensure_future(conn.command("db", {"echo": 1}))
        await asyncio.sleep(0.05)
        assert not task.done() and conn._protocol._paused is not None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not conn.is_closed and "draining" in repr(conn)
        assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}  # echo's reply dropped
        conn.close()


async def test_a_connection_over_an_already_lost_protocol_is_closed() -> None:
    protocol = _WireProtocol(("localhost", 1), asyncio.get_running_loop())
    protocol.connection_lost(None)

    class Transport:
        def abort(self) -> None:
            pass

    conn = Connection(1, ("localhost", 1), cast(asyncio.Transport, Transport()), protocol, SETTINGS)
    assert conn.is_closed
    with pytest.raises(AutoReconnect):
        await conn.command("db", {"ping": 1})


CANCEL_AFTER_REPLY = {
    # the body handed to the fast path's waiter
    "plain reply": ("ping", SETTINGS),
    # queued by the general delivery, the fast path's waiter woken with None
    "queued reply": ("flagged", SETTINGS),
    # the general read (socketTimeoutMS): queued, the waiter woken
    "guarded read": ("ping", ConnectionSettings(host=HostInfo("Linux"), socket_timeout=5.0)),
}


@pytest.mark.parametrize("name, settings", CANCEL_AFTER_REPLY.values(), ids=CANCEL_AFTER_REPLY)
async def test_cancelled_after_its_reply_came_stays_reusable(
    monkeypatch: pytest.MonkeyPatch, name: str, settings: ConnectionSettings
) -> None:
    """The reply arrives and the command is cancelled in the same loop iteration, before
    the command's task resumes: the reply was read (or is queued), so the connection must
    not wait for it again (it would drain forever)."""
    tasks: list[asyncio.Future[dict[str, object]]] = []
    received = _WireProtocol.data_received

    def data_received(self: _WireProtocol, data: bytes) -> None:
        received(self, data)
        if tasks and not tasks[0].done():
            tasks[0].cancel()

    # patched before connecting: uvloop looks the method up once per connection
    monkeypatch.setattr(_WireProtocol, "data_received", data_received)
    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, settings, id=1)
        tasks.append(asyncio.ensure_future(conn.command("db", {name: 1})))
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]
        tasks.clear()
        assert not conn.is_closed and "draining" not in repr(conn)
        deadline = asyncio.get_running_loop().time() + 2
        assert await conn.command("db", {"ping": 1}, deadline=deadline) == {"ok": 1.0}
        conn.close()


async def test_the_fast_path_uses_the_bson_implementation_selected_now() -> None:
    """The command's encode and the plain reply's decode call the codec module's selected
    functions directly (no wrapper frame): a codec switched at runtime is still the one used."""
    from asyncmongo.bson import codec

    calls: list[str] = []
    encode_now, decode_now = codec._encode, codec._decode

    def spy_encode(*args: Any) -> bytes:
        calls.append("encode")
        return encode_now(*args)

    def spy_decode(*args: Any) -> Any:
        calls.append("decode")
        return decode_now(*args)

    async with ScriptedServer(handler) as server:
        conn = await connect(server.address, SETTINGS, id=1)
        mp = pytest.MonkeyPatch()
        try:
            mp.setattr(codec, "_encode", spy_encode)
            mp.setattr(codec, "_decode", spy_decode)
            assert await conn.command("db", {"ping": 1}) == {"ok": 1.0}
        finally:
            mp.undo()
        assert calls == ["encode", "decode"]
        conn.close()
