"""A control port for a running simulated deployment: other processes, or a shell, drive it.

``python -m asyncmongo.testing replset 3 --fault-proxy --control-port 0`` prints the URI, then
``control 127.0.0.1:<port>``. The protocol is one command per line, in UTF-8, over TCP; each
gets one line back, a JSON object with ``"ok": true`` and the result, or ``"ok": false`` and
an ``"error"``. From a shell::

    echo stepdown | nc -q1 127.0.0.1 <port>
    python -m asyncmongo.testing.control 127.0.0.1:<port> stop 1

Members are named by index in the deployment (``0``, ``1``...), by ``primary``, or by
``host:port``. The commands:

``status``
    every member: host, role, running, faults in force.
``stepdown`` / ``elect MEMBER``
    the primary steps down (the next electable member wins) / MEMBER wins an election.
``stop MEMBER`` / ``start MEMBER`` / ``restart MEMBER``
    the member's process goes away (connections refused) / comes back (a new processId).
``failpoint MEMBER JSON``
    a ``configureFailPoint`` command document, e.g. ``{"configureFailPoint": "failCommand",
    "mode": {"times": 1}, "data": {"failCommands": ["insert"], "errorCode": 91}}``.
``fault MEMBER KIND [key=value ...]``
    a network fault at MEMBER's proxy (needs ``--fault-proxy``): KIND is a
    :class:`~asyncmongo.testing.proxy.FaultProxy` method (latency, bandwidth, blackhole,
    reset, truncate, corrupt, misdirect, drip, refuse, partition), the pairs its keyword arguments
    (``ms=100 jitter_ms=20 scope=new``); answers the fault's ``id``.
``heal [all | ID | member MEMBER]``
    take faults off: all of them and the member partitions (the default), one fault by
    id, or a member's faults.
``partition MEMBER [MEMBER ...]``
    cut those members off from the rest of the set (the majority side keeps a primary).
``help``, ``quit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from asyncmongo.testing import configure_failpoint
from asyncmongo.testing.deployment import ReplicaSet
from asyncmongo.testing.partition import MemberPartition
from asyncmongo.testing.proxy import Fault, Scope
from asyncmongo.testing.server import SimServer

__all__ = ["CommandError", "ControlServer", "main", "send"]

_FAULT_KINDS = frozenset({"latency", "bandwidth", "blackhole", "reset", "truncate", "corrupt",
                          "misdirect", "drip", "refuse", "partition"})


class CommandError(Exception):
    """A control command that cannot be carried out (answered ``"ok": false``)."""


class ControlServer:
    """The control port of one deployment (anything with ``members``; a
    :class:`~asyncmongo.testing.ReplicaSet` for elections and partitions)."""

    def __init__(self, deployment: Any, *, port: int = 0) -> None:
        self.deployment = deployment
        self._port = port
        self._listener: asyncio.Server | None = None
        self._faults: dict[int, Fault] = {}
        self._ids = itertools.count(1)
        self._partitions: list[MemberPartition] = []
        self._sessions: set[asyncio.Task[Any]] = set()
        self._commands: dict[str, Callable[[list[str]], Awaitable[Any]]] = {
            "status": self._status, "stepdown": self._step_down, "elect": self._elect,
            "stop": self._stop, "start": self._start, "restart": self._restart,
            "failpoint": self._fail_point, "fault": self._fault, "heal": self._heal,
            "partition": self._partition, "help": self._help,
        }

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._port}"

    async def start(self) -> None:
        self._listener = await asyncio.start_server(self._serve, "127.0.0.1", self._port)
        self._port = self._listener.sockets[0].getsockname()[1]

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        for task in list(self._sessions):
            task.cancel()
        await asyncio.gather(*self._sessions, return_exceptions=True)
        if listener is not None:
            await listener.wait_closed()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def execute(self, line: str) -> dict[str, Any]:
        """Run one command line; the reply object (never raises for a bad command)."""
        try:
            # A fail point's JSON is taken as written (shell-style quoting would eat it).
            words = (line.split(None, 2) if line.split(None, 1)[:1] == ["failpoint"]
                     else shlex.split(line))
        except ValueError as exc:
            return {"ok": False, "error": f"cannot split the line: {exc}"}
        if not words:
            return {"ok": False, "error": "empty command (try: help)"}
        handler = self._commands.get(words[0].lower())
        if handler is None:
            return {"ok": False, "error": f"unknown command {words[0]!r} (try: help)"}
        try:
            result = await handler(words[1:])
        except (CommandError, ValueError, KeyError, TypeError) as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a simulator error: report it, keep the port up
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": True, **(result or {})}

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            while line := await reader.readline():
                text = line.decode("utf-8", "replace").strip()
                if text.lower() in ("quit", "exit"):
                    break
                if not text:
                    continue
                writer.write(json.dumps(await self.execute(text), default=str).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._sessions.discard(task)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    # --- naming ----------------------------------------------------------------------------

    def member(self, name: str) -> SimServer:
        members: list[SimServer] = self.deployment.members
        if name == "primary":
            primary: SimServer | None = getattr(self.deployment, "primary", None)
            if primary is None:
                raise CommandError("there is no primary")
            return primary
        if name.isdigit():
            if int(name) >= len(members):
                raise CommandError(f"no member {name} (there are {len(members)})")
            return members[int(name)]
        for member in members:
            if member.host == name:
                return member
        raise CommandError(f"no member {name!r}: use an index, 'primary' or host:port")

    def _replica_set(self) -> ReplicaSet:
        if not isinstance(self.deployment, ReplicaSet):
            raise CommandError("only a replica set has elections and partitions")
        return self.deployment

    @staticmethod
    def _one(args: Sequence[str], usage: str) -> str:
        if len(args) != 1:
            raise CommandError(f"usage: {usage}")
        return args[0]

    # --- commands --------------------------------------------------------------------------

    async def _status(self, args: list[str]) -> dict[str, Any]:
        members = []
        for index, member in enumerate(self.deployment.members):
            proxy = member.proxy
            members.append({
                "index": index, "host": member.host, "role": member.role.value,
                "running": member.running,
                "faults": [{"id": i, "kind": f.kind.value} for i, f in self._faults.items()
                           if proxy is not None and f.proxy is proxy and f.active],
            })
        return {"uri": self.deployment.uri, "members": members,
                "partitions": [sorted(p.isolated) for p in self._partitions if p.active]}

    async def _step_down(self, args: list[str]) -> dict[str, Any]:
        winner = await self._replica_set().step_down()
        return {"primary": winner.host if winner is not None else None}

    async def _elect(self, args: list[str]) -> dict[str, Any]:
        member = self.member(self._one(args, "elect MEMBER"))
        await self._replica_set().elect(member)
        return {"primary": member.host}

    async def _stop(self, args: list[str]) -> dict[str, Any]:
        member = self.member(self._one(args, "stop MEMBER"))
        await member.stop()
        return {"host": member.host, "running": False}

    async def _start(self, args: list[str]) -> dict[str, Any]:
        member = self.member(self._one(args, "start MEMBER"))
        await member.start()
        return {"host": member.host, "running": True}

    async def _restart(self, args: list[str]) -> dict[str, Any]:
        member = self.member(self._one(args, "restart MEMBER"))
        await member.restart()
        return {"host": member.host, "running": True}

    async def _fail_point(self, args: list[str]) -> dict[str, Any]:
        if len(args) != 2:
            raise CommandError("usage: failpoint MEMBER JSON")
        member = self.member(args[0])
        try:
            command = json.loads(args[1])
        except json.JSONDecodeError as exc:
            raise CommandError(f"the fail point is not JSON: {exc}") from None
        if not isinstance(command, dict) or "configureFailPoint" not in command:
            raise CommandError("expected a configureFailPoint command document")
        configure_failpoint.configure(member.fail_points, command)
        return {"host": member.host, "failPoint": command["configureFailPoint"]}

    async def _fault(self, args: list[str]) -> dict[str, Any]:
        if len(args) < 2 or args[1] not in _FAULT_KINDS:
            raise CommandError(f"usage: fault MEMBER KIND [key=value ...], KIND one of "
                               f"{sorted(_FAULT_KINDS)}")
        member = self.member(args[0])
        if member.proxy is None:
            raise CommandError("the deployment runs without fault proxies (--fault-proxy)")
        kwargs = dict(_keyword(pair) for pair in args[2:])
        fault: Fault = getattr(member.proxy, args[1])(**kwargs)
        fault_id = next(self._ids)
        self._faults[fault_id] = fault
        return {"id": fault_id, "host": member.host, "kind": args[1]}

    async def _heal(self, args: list[str]) -> dict[str, Any]:
        if len(args) == 2 and args[0] == "member":
            proxy = self.member(args[1]).proxy
            healed = [i for i, f in self._faults.items() if f.proxy is proxy]
            for fault_id in healed:
                await self._faults.pop(fault_id).heal()
            return {"healed": healed}
        if len(args) == 1 and args[0].isdigit():
            fault = self._faults.pop(int(args[0]), None)
            if fault is None:
                raise CommandError(f"no fault {args[0]}")
            await fault.heal()
            return {"healed": [int(args[0])]}
        if args not in ([], ["all"]):
            raise CommandError("usage: heal [all | ID | member MEMBER]")
        healed = list(self._faults)
        self._faults.clear()
        for proxy in (m.proxy for m in self.deployment.members):
            if proxy is not None:
                await proxy.heal()
        for partition in self._partitions:
            await partition.heal()
        self._partitions.clear()
        return {"healed": healed}

    async def _partition(self, args: list[str]) -> dict[str, Any]:
        if not args:
            raise CommandError("usage: partition MEMBER [MEMBER ...]")
        replica_set = self._replica_set()
        partition = await replica_set.partition_members([self.member(a) for a in args])
        self._partitions.append(partition)
        primary = replica_set.primary
        return {"isolated": sorted(partition.isolated), "majority": partition.majority,
                "primary": primary.host if primary is not None else None}

    async def _help(self, args: list[str]) -> dict[str, Any]:
        return {"commands": sorted([*self._commands, "quit"]), "doc": __doc__}


def _keyword(pair: str) -> tuple[str, Any]:
    """``key=value`` as a fault keyword: numbers, ``scope=new|existing|both``, ``none``."""
    key, eq, text = pair.partition("=")
    if not eq or not key:
        raise CommandError(f"expected key=value, not {pair!r}")
    value: Any
    if key == "scope":
        value = Scope(text.lower())
    elif text.lower() == "none":
        value = None
    else:
        try:
            value = int(text)
        except ValueError:
            value = float(text)
    return key, value


async def send(address: str, *lines: str) -> list[dict[str, Any]]:
    """Send command lines to a control port and return the replies (a client for tests and
    scripts)."""
    host, _, port = address.rpartition(":")
    reader, writer = await asyncio.open_connection(host or "127.0.0.1", int(port))
    try:
        replies = []
        for line in lines:
            writer.write(line.encode() + b"\n")
            await writer.drain()
            replies.append(json.loads(await reader.readline()))
        return replies
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m asyncmongo.testing.control HOST:PORT COMMAND [ARG ...]``: one command,
    its JSON reply on stdout; exit status 1 when the reply is not ok."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(__doc__)
        return 2
    reply = asyncio.run(send(args[0], shlex.join(args[1:])))[0]
    print(json.dumps(reply))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
