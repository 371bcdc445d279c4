"""A small simulated deployment for the topology tests, over tests/support/scripted_server.

Each member is a loopback ``ScriptedServer`` whose handler answers ``hello``/``isMaster``
from the member's current role (standalone, primary, secondary, mongos), optionally with a
``topologyVersion``; an awaitable hello (``topologyVersion`` + ``maxAwaitTimeMS``) waits for
the member's next change and, with ``exhaustAllowed``, keeps streaming ``moreToCome`` replies.
``insert`` succeeds on a writable member and fails with NotWritablePrimary (10107) elsewhere.
``ReplicaSet.step_down()`` elects another member, as a real set would, bumping every member's
topology version so streaming monitors hear of it at once.

(``asyncmongo.testing`` will replace this once its ReplicaSet lands.)
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Self

import bson

from tests.support.scripted_server import HELLO_REPLY, Peer, Request, ScriptedServer

_EXHAUST_ALLOWED = 1 << 16
_MORE_TO_COME = 2


class Member:
    """One simulated server."""

    def __init__(self, role: str, *, streaming: bool = True, set_name: str | None = None) -> None:
        self.role = role
        self.streaming = streaming
        self.set_name = set_name
        self.hosts: list[str] = []
        self.primary: str | None = None
        self.term = 1
        self.process_id = bson.ObjectId()
        self.counter = 0
        self._changed = asyncio.Event()
        self.server = ScriptedServer(self._handle)
        self.hello_requests = 0
        self.awaited_requests = 0
        self.streamed_replies = 0
        self.operations = 0
        self.operation_delay = 0.0
        #: Close the connection instead of answering the next N operations (network error).
        self.drop_operations = 0
        #: The same for the next N hellos; and a delay before every hello reply.
        self.drop_hellos = 0
        self.hello_delay = 0.0

    @property
    def host(self) -> str:
        host, port = self.server.address
        return f"{host}:{port}"

    @property
    def address(self) -> tuple[str, int | None]:
        return self.server.address

    def change(self, **fields: Any) -> None:
        """Change state (role, primary, ...) and wake every awaitable hello."""
        for name, value in fields.items():
            setattr(self, name, value)
        self.counter += 1
        self._changed.set()
        self._changed = asyncio.Event()

    def hello(self, legacy: bool) -> dict[str, Any]:
        writable = self.role in ("primary", "standalone", "mongos")
        reply = dict(HELLO_REPLY)
        reply.pop("isWritablePrimary")
        reply["ismaster" if legacy else "isWritablePrimary"] = writable
        if self.streaming:
            reply["topologyVersion"] = {"processId": self.process_id, "counter": self.counter}
        if self.role == "mongos":
            reply["msg"] = "isdbgrid"
        reply.update(self.server.hello_extra)
        if self.set_name is not None:
            reply.update(
                setName=self.set_name,
                hosts=list(self.hosts),
                me=self.host,
                secondary=self.role == "secondary",
                setVersion=1,
            )
            if self.primary is not None:
                reply["primary"] = self.primary
            if self.role == "primary":
                reply["electionId"] = bson.ObjectId(b"\x7f\xff\xff\xff" + self.term.to_bytes(8))
        return reply

    def _is_current(self, tv: Any) -> bool:
        return (
            isinstance(tv, dict)
            and tv.get("processId") == self.process_id
            and int(tv.get("counter", -1)) >= self.counter
        )

    async def _handle(self, request: Request, peer: Peer) -> None:
        name = request.name.lower()
        if name in ("hello", "ismaster"):
            await self._hello(request, peer, legacy=name == "ismaster")
        elif name in ("insert", "ping") and self.drop_operations:
            self.drop_operations -= 1
            peer.abort()
        elif name == "insert":
            self.operations += 1
            if self.operation_delay:
                await asyncio.sleep(self.operation_delay)
            if self.role in ("primary", "standalone", "mongos"):
                await peer.reply(request, {"ok": 1.0, "n": 1})
            else:
                error = {"ok": 0.0, "errmsg": "not primary", "code": 10107}
                error["codeName"] = "NotWritablePrimary"
                await peer.reply(request, error)
        elif name == "ping":
            self.operations += 1
            if self.operation_delay:
                await asyncio.sleep(self.operation_delay)
            await peer.reply(request, {"ok": 1.0})
        else:
            await peer.default(request)

    async def _hello(self, request: Request, peer: Peer, legacy: bool) -> None:
        self.hello_requests += 1
        if self.drop_hellos:
            self.drop_hellos -= 1
            peer.abort()
            return
        if self.hello_delay:
            await asyncio.sleep(self.hello_delay)
        tv = request.command.get("topologyVersion")
        max_await = request.command.get("maxAwaitTimeMS")
        if not (self.streaming and tv is not None and max_await is not None):
            await peer.reply(request, self.hello(legacy))
            return
        self.awaited_requests += 1
        exhaust = bool(request.flags & _EXHAUST_ALLOWED)
        response_to = request.request_id
        while True:
            if self._is_current(tv) and not await self._wait_for_change(peer, max_await):
                return  # the client hung up (a real server notices on its next write)
            reply = self.hello(legacy)
            flags = _MORE_TO_COME if exhaust else 0
            response_to = await peer.reply(request, reply, flags=flags, response_to=response_to)
            if exhaust:
                self.streamed_replies += 1
            else:
                return
            tv = reply["topologyVersion"]

    async def _wait_for_change(self, peer: Peer, max_await_ms: float) -> bool:
        """Wait for a change or the time; False if the client closed the connection."""
        changed = asyncio.ensure_future(self._changed.wait())
        hangup = asyncio.ensure_future(peer.reader.read(1))
        try:
            await asyncio.wait(
                [changed, hangup], timeout=max_await_ms / 1000, return_when=asyncio.FIRST_COMPLETED
            )
            hung_up = hangup.done()
        finally:
            changed.cancel()
            hangup.cancel()
            await asyncio.gather(changed, hangup, return_exceptions=True)
        return not hung_up


class Deployment:
    """A set of members started and stopped together."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members

    async def __aenter__(self) -> Self:
        for member in self.members:
            await member.server.__aenter__()
        self.configure()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for member in self.members:
            await member.server.__aexit__()

    def configure(self) -> None:
        """Called once every member has its port."""

    @property
    def uri(self) -> str:
        return "mongodb://" + ",".join(m.host for m in self.members)

    @property
    def seed(self) -> str:
        return "mongodb://" + self.members[0].host


class ReplicaSet(Deployment):
    """``n`` members of set "rs"; member 0 starts as primary (unless ``primary=None``)."""

    def __init__(self, n: int = 3, *, streaming: bool = True, primary: int | None = 0) -> None:
        super().__init__(
            [Member("secondary", streaming=streaming, set_name="rs") for _ in range(n)]
        )
        self._initial_primary = primary
        self._terms = itertools.count(2)

    def configure(self) -> None:
        hosts = [m.host for m in self.members]
        for member in self.members:
            member.hosts = hosts
        if self._initial_primary is not None:
            self.elect(self._initial_primary)

    @property
    def primary(self) -> Member | None:
        return next((m for m in self.members if m.role == "primary"), None)

    def elect(self, index: int) -> None:
        """Member ``index`` becomes primary with a new term; every member learns of it."""
        term = next(self._terms)
        winner = self.members[index]
        for member in self.members:
            role = "primary" if member is winner else "secondary"
            member.change(role=role, primary=winner.host, term=term)

    def step_down(self) -> Member:
        """The primary steps down and the next member is elected; returns the new primary."""
        current = self.primary
        index = 0 if current is None else (self.members.index(current) + 1) % len(self.members)
        self.elect(index)
        return self.members[index]

    def no_primary(self) -> None:
        """The primary steps down and nobody is elected yet."""
        for member in self.members:
            member.change(role="secondary", primary=None)
