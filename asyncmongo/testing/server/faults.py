"""The faults a test injects into one simulated server.

``configureFailPoint`` (or :meth:`Faults.fail_point`) sets fail points
(:mod:`asyncmongo.testing.configure_failpoint`), parsed and counted by
:mod:`asyncmongo.testing.failpoint` and :mod:`asyncmongo.testing.primary_write_failpoint`;
the network faults are silence (a "silent" partition), slow replies and broken replies
(garbage, truncated). :class:`Faults` holds them and says, for one request, what happens
instead of the normal answer: a pause, a closed connection, an error reply, a broken reply.
Sending and decorating the replies is the dispatcher's job.
"""

from __future__ import annotations

import asyncio
import enum
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE
from asyncmongo.testing import configure_failpoint, failpoint, primary_write_failpoint
from asyncmongo.testing.failpoint import FailCommand, FailPointState
from asyncmongo.testing.member import Role
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.server.command_fields import HELLO_NAMES, max_time_exceeded
from asyncmongo.testing.store.transactions import TransactionManager, lsid_of


class ReplyFault(enum.Enum):
    """A broken reply the server can send instead of the real one."""

    GARBAGE = "garbage"  # a header with an unknown opcode, then noise
    TRUNCATED = "truncated"  # the first half of the reply, then the connection closes


@dataclass(frozen=True, slots=True)
class _PendingReplyFault:
    """A pending broken reply and the commands it targets (None: all but hello)."""

    kind: ReplyFault
    commands: frozenset[str] | None

    def targets(self, command_name: str) -> bool:
        if self.commands is None:
            return command_name not in HELLO_NAMES
        return command_name in self.commands


@dataclass(frozen=True, slots=True)
class Preemption:
    """What a fault does instead of running the command: answer ``reply`` or, when it is
    None, close the connection without a reply."""

    reply: dict[str, Any] | None


class FailPointHandle:
    """Returned by :meth:`SimServer.fail_point`: ``with`` it, or call :meth:`off`."""

    __slots__ = ("_faults",)

    def __init__(self, faults: Faults) -> None:
        self._faults = faults

    def off(self) -> None:
        self._faults.fail_points.pop("failCommand", None)

    def __enter__(self) -> FailPointHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.off()


class Faults:
    """The fail points and network faults of one server; they take effect at once."""

    __slots__ = ("_reply_faults", "fail_points", "silent", "slow_commands", "slow_ms")

    def __init__(self) -> None:
        #: The configured fail points, by name (``failCommand``, ...).
        self.fail_points: dict[str, FailPointState] = {}
        #: A "silent" partition: requests are read and never answered.
        self.silent = False
        self.slow_ms = 0.0
        self.slow_commands: frozenset[str] | None = None
        self._reply_faults: list[_PendingReplyFault] = []

    def describe(self) -> list[str]:
        """The network faults in force, for the server's ``repr``."""
        faults = ["silent"] if self.silent else []
        if self.slow_ms:
            faults.append(f"slow {self.slow_ms:g}ms")
        return faults

    # --- configuring -----------------------------------------------------------------------

    def fail_point(self, mode: str | Mapping[str, int] = "alwaysOn",
                   data: Mapping[str, Any] | None = None, **fields: Any) -> FailPointHandle:
        """Configure ``failCommand`` (as ``configureFailPoint`` does); the handle turns it off
        as a context manager. Keyword fields are added to ``data`` (camelCase names)."""
        command = failpoint.fail_point_command(mode, {**(data or {}), **fields})
        configure_failpoint.configure(self.fail_points, command)
        return FailPointHandle(self)

    def slow(self, ms: float, *, commands: Iterable[str] | None = None) -> None:
        """Delay replies by ``ms`` milliseconds (0 ends it): every reply, or only those to
        ``commands``."""
        self.slow_ms = max(0.0, ms)
        self.slow_commands = _fault_commands(commands)

    def send_garbage(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies (to ``commands``; by default any but hello) are bytes no
        driver can parse."""
        self._reply_faults += [_PendingReplyFault(ReplyFault.GARBAGE,
                                                  _fault_commands(commands))] * count

    def send_truncated(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies stop halfway and the connection closes."""
        self._reply_faults += [_PendingReplyFault(ReplyFault.TRUNCATED,
                                                  _fault_commands(commands))] * count

    # --- applying --------------------------------------------------------------------------

    async def delay(self, command_name: str) -> None:
        """Wait as long as :meth:`slow` asked before answering this command."""
        if self.slow_ms and (self.slow_commands is None or command_name in self.slow_commands):
            await asyncio.sleep(self.slow_ms / 1000)

    def take_reply_fault(self, command_name: str) -> ReplyFault | None:
        """The first pending reply fault that targets this command (consumed), if any."""
        for index, fault in enumerate(self._reply_faults):
            if fault.targets(command_name):
                del self._reply_faults[index]
                return fault.kind
        return None

    def fire(self, name: str, app_name: str | None) -> FailCommand | None:
        """The ``failCommand`` data if the fail point fires for this command (counted)."""
        point = self.fail_points.get("failCommand")
        fired = point.fire(name, app_name) if point is not None else None
        if fired is None and name == "getMore":
            after = self.fail_points.get(configure_failpoint.GET_MORE_AFTER_CHECKOUT)
            fired = after.fire(name, app_name) if after is not None else None
        return fired

    async def carry_out(self, fired: FailCommand | None, command: Mapping[str, Any]
                        ) -> Preemption | None:
        """Do what a fired fail point says before the command runs: block, then close the
        connection or answer its error; None: go on and run the command."""
        if fired is None:
            return None
        if fired.block_connection:
            await asyncio.sleep(fired.block_time_ms / 1000)
        if fired.close_connection:
            return Preemption(None)
        if fired.error_code is not None:
            return Preemption(fired.error_reply(command))
        if (fired.block_connection and "getMore" not in command
                and max_time_exceeded(command, fired.block_time_ms)):
            # The block ate the command's maxTimeMS: mongod's first interrupt check fails.
            # (A getMore's maxTimeMS is how long an awaitData cursor waits, not a limit.)
            return Preemption(error_reply(50, "operation exceeded time limit"))
        return None

    def primary_write_verdict(self, command: Mapping[str, Any], role: Role,
                              transactions: TransactionManager
                              ) -> primary_write_failpoint.PrimaryWriteVerdict | None:
        """Where ``onPrimaryTransactionalWrite`` fires in this command: only on a primary and
        only for a retryable write the store will apply now (a retry it answers from the
        bookkeeping applies no statement, so the fail point is not evaluated)."""
        point = self.fail_points.get(primary_write_failpoint.NAME)
        if point is None or role is not Role.PRIMARY:
            return None
        txn_number = command.get("txnNumber")
        lsid_key = lsid_of(command)
        if not isinstance(txn_number, int) or lsid_key is None or (
                transactions.already_applied(lsid_key, txn_number)):
            return None
        return primary_write_failpoint.evaluate(point, command)


def primary_write_refusal(written: primary_write_failpoint.PrimaryWriteVerdict,
                          command: Mapping[str, Any]) -> Preemption:
    """``failBeforeCommitExceptionCode``: the write is not applied; the connection is
    closed, or, with ``closeConnection: false``, the code is the reply."""
    if written.fault.close_connection:
        return Preemption(None)
    code = written.fault.fail_before_commit_code
    assert code is not None
    return Preemption(error_reply(
        code, f"Failing write for {command.get('txnNumber')} due to failpoint. "
              "The write must not be reflected.", command))


def garbage_reply(request_id: int, response_to: int) -> bytes:
    """A reply no driver can parse: a header with an unknown opcode, then noise."""
    noise = os.urandom(32)
    return HEADER.pack(HEADER_SIZE + len(noise), request_id, response_to, 0x7EADBEEF) + noise


def _fault_commands(commands: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(commands) if commands is not None else None
