"""``configureFailPoint`` with ``failCommand``, as mongod implements it for the specs' tests.

A :class:`FailCommand` is the parsed ``data`` of the fail point; :class:`FailPointState` keeps
the ``mode`` (alwaysOn, ``{times: n}``, ``{skip: n}``, off) and decides, for one command, whether
the fail point fires. The server then carries out the :class:`FailCommand` (block, close the
connection, answer an error, or run the command and attach a ``writeConcernError``). Pure: no
asyncio, so the decision is tested without a server.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing.codes import code_name

#: Error codes the server labels ``RetryableWriteError`` on a retryable write (retryable
#: writes spec, "Determining Retryable Errors").
RETRYABLE_WRITE_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435,
                                   13436, 134})
#: Codes mongod labels ``TransientTransactionError`` inside a transaction, whatever the
#: command (mongod's ``isTransientTransactionError``): WriteConflict, LockTimeout,
#: PreparedTransactionInProgress, the snapshot errors (SnapshotTooOld, SnapshotUnavailable,
#: StaleChunkHistory) and the re-targeting ones (StaleShardVersion, StaleEpoch, StaleConfig,
#: StaleDbVersion).
TRANSIENT_TRANSACTION_CODES = frozenset({112, 24, 267, 239, 246, 250, 63, 150, 13388, 249})
#: NoSuchTransaction: transient for any command of a transaction, and for commit/abort too
#: unless a write concern error says the outcome may be rolled back.
NO_SUCH_TRANSACTION = 251
#: Commands a retryable write can be (with ``txnNumber`` outside a transaction).
_RETRYABLE_WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify",
                                       "findandmodify"})
#: Never failed: the fail point's own command (so a test can always turn it off).
_EXEMPT = frozenset({"configureFailPoint"})
#: Commands mongod registers under more than one name. mongod fires failCommand when an entry
#: of failCommands is the invoked command's name or any of its aliases (Command::hasAlias), so
#: ["ismaster"] also fails a handshake sent as "isMaster". hello is its own command in 7.0.
_ALIAS_GROUPS = (
    ("isMaster", "ismaster"),
    ("findAndModify", "findandmodify"),
    ("buildInfo", "buildinfo"),
    ("dropIndexes", "deleteIndexes"),
)
_CANONICAL = {alias: group[0] for group in _ALIAS_GROUPS for alias in group}


def command_identity(name: str) -> str:
    """The command a name invokes (its first registered name), as failCommand matches it."""
    return _CANONICAL.get(name, name)


class FailPointMode(enum.Enum):
    """How often the fail point fires."""

    OFF = "off"
    ALWAYS_ON = "alwaysOn"
    TIMES = "times"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class FailCommand:
    """The ``data`` of a ``failCommand`` fail point."""

    fail_commands: frozenset[str]
    error_code: int | None = None
    error_labels: tuple[str, ...] | None = None
    close_connection: bool = False
    block_connection: bool = False
    block_time_ms: int = 0
    app_name: str | None = None
    write_concern_error: Mapping[str, Any] | None = None
    errmsg: str | None = None

    @classmethod
    def from_document(cls, data: Mapping[str, Any]) -> FailCommand:
        """Parse ``data``; a malformed one is a ConfigurationError (the server's BadValue)."""
        names = data.get("failCommands")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigurationError("failCommand needs data.failCommands, a list of names")
        labels = data.get("errorLabels")
        code = data.get("errorCode")
        wce = data.get("writeConcernError")
        app = data.get("appName")
        errmsg = data.get("errmsg")
        return cls(
            fail_commands=frozenset(command_identity(n) for n in names),
            error_code=int(code) if code is not None else None,
            error_labels=tuple(str(label) for label in labels) if labels is not None else None,
            close_connection=bool(data.get("closeConnection", False)),
            block_connection=bool(data.get("blockConnection", False)),
            block_time_ms=int(data.get("blockTimeMS", 0)),
            app_name=str(app) if app is not None else None,
            write_concern_error=dict(wce) if isinstance(wce, Mapping) else None,
            errmsg=str(errmsg) if errmsg is not None else None,
        )

    def error_reply(self, command: Mapping[str, Any]) -> dict[str, Any]:
        """The ``ok: 0`` reply for ``errorCode``, labelled as mongod labels it."""
        assert self.error_code is not None
        reply: dict[str, Any] = {
            "ok": 0.0,
            "errmsg": self.errmsg or "Failing command via 'failCommand' failpoint",
            "code": self.error_code,
            "codeName": code_name(self.error_code),
        }
        labels = self._labels(command, self.error_code)
        if labels:
            reply["errorLabels"] = labels
        return reply

    def add_write_concern_error(self, reply: dict[str, Any],
                                command: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of a successful reply with the configured ``writeConcernError`` attached.

        A copy, because the store keeps a retryable write's reply for its retry: the retry
        must get the stored outcome, not this fault's writeConcernError again."""
        assert self.write_concern_error is not None
        wce = dict(self.write_concern_error)
        reply = {**reply, "writeConcernError": wce}
        code = wce.get("code")
        labels = self._labels(command, None, code if isinstance(code, int) else None)
        if self.error_labels is None and "errorLabels" in wce:
            labels = list(wce.pop("errorLabels"))
        if labels:
            reply["errorLabels"] = labels
        return reply

    def _labels(self, command: Mapping[str, Any], code: int | None,
                wc_code: int | None = None) -> list[str]:
        # Given labels replace the server's own (as mongod's failCommand does).
        if self.error_labels is not None:
            return list(self.error_labels)
        return server_error_labels(command, code, wc_code)


def server_error_labels(command: Mapping[str, Any], code: int | None,
                        wc_code: int | None = None) -> list[str]:
    """The labels mongod (4.4+) attaches to an error reply: ``code`` is the command's error
    code (None when it succeeded), ``wc_code`` its ``writeConcernError``'s.

    Inside a transaction a transient code earns ``TransientTransactionError`` (and then never
    ``RetryableWriteError``); otherwise a retryable code on a retryable write or a
    commit/abort earns ``RetryableWriteError``. A network error has no reply, so its labels
    are the driver's business (transactions spec, error-labels tests)."""
    if code is not None and is_transient_transaction_error(command, code, wc_code is not None):
        return ["TransientTransactionError"]
    retryable = (code in RETRYABLE_WRITE_CODES) or (wc_code in RETRYABLE_WRITE_CODES)
    if retryable and is_retryable_write(command):
        return ["RetryableWriteError"]
    return []


def is_transient_transaction_error(command: Mapping[str, Any], code: int,
                                   has_write_concern_error: bool = False) -> bool:
    """mongod's rule: only a command of a transaction (``txnNumber`` and ``autocommit``); any
    transient code; NoSuchTransaction on commit/abort only without a write concern error; a
    retryable code (a step-down, a shutdown) on any other command of the transaction."""
    if "txnNumber" not in command or "autocommit" not in command:
        return False
    if code in TRANSIENT_TRANSACTION_CODES:
        return True
    if _is_commit_or_abort(command):
        return code == NO_SUCH_TRANSACTION and not has_write_concern_error
    return code == NO_SUCH_TRANSACTION or code in RETRYABLE_WRITE_CODES


def _is_commit_or_abort(command: Mapping[str, Any]) -> bool:
    return next(iter(command), "") in ("commitTransaction", "abortTransaction")


def is_retryable_write(command: Mapping[str, Any]) -> bool:
    """A write the server treats as retryable: ``txnNumber`` outside a transaction, or the
    transaction's commit/abort."""
    if _is_commit_or_abort(command):
        return True
    name = next(iter(command), "")
    return (name in _RETRYABLE_WRITE_COMMANDS and "txnNumber" in command
            and "autocommit" not in command)


@dataclass(slots=True)
class FailPointState:
    """One configured fail point: its mode, what is left of it, and its data."""

    mode: FailPointMode = FailPointMode.OFF
    remaining: int = 0
    data: FailCommand = field(default_factory=lambda: FailCommand(frozenset()))

    @classmethod
    def from_command(cls, command: Mapping[str, Any]) -> FailPointState:
        """Parse a ``configureFailPoint`` command (``mode`` and ``data``)."""
        mode, remaining = parse_mode(command.get("mode"))
        data = command.get("data", {})
        if not isinstance(data, Mapping):
            raise ConfigurationError("configureFailPoint data must be a document")
        parsed = FailCommand.from_document(data) if mode is not FailPointMode.OFF else (
            FailCommand(frozenset()))
        return cls(mode, remaining, parsed)

    def __repr__(self) -> str:
        names = ",".join(sorted(self.data.fail_commands))
        return f"<FailPoint {self.mode.value} remaining={self.remaining} [{names}]>"

    def fire(self, command_name: str, app_name: str | None) -> FailCommand | None:
        """Whether the fail point fires for this command; counts the activation if so."""
        if self.mode is FailPointMode.OFF or command_name in _EXEMPT:
            return None
        if command_identity(command_name) not in self.data.fail_commands:
            return None
        if self.data.app_name is not None and self.data.app_name != app_name:
            return None
        return self.data if self.activate() else None

    def activate(self) -> bool:
        """One evaluation of the fail point: whether it fires now, per its mode (a skip or a
        times count is used up as mongod's ``shouldFail`` does)."""
        if self.mode is FailPointMode.OFF:
            return False
        if self.mode is FailPointMode.SKIP:
            if self.remaining > 0:
                self.remaining -= 1
                return False
            return True
        if self.mode is FailPointMode.TIMES:
            self.remaining -= 1
            if self.remaining <= 0:
                self.mode = FailPointMode.OFF
        return True


def parse_mode(mode: Any) -> tuple[FailPointMode, int]:
    if mode == "alwaysOn":
        return FailPointMode.ALWAYS_ON, 0
    if mode == "off":
        return FailPointMode.OFF, 0
    if isinstance(mode, Mapping) and len(mode) == 1:
        (key, value), = mode.items()
        if key in ("times", "skip") and isinstance(value, int) and value >= 0:
            kind = FailPointMode.TIMES if key == "times" else FailPointMode.SKIP
            if kind is FailPointMode.TIMES and value == 0:
                return FailPointMode.OFF, 0
            return kind, int(value)
    raise ConfigurationError(f"unsupported fail point mode {mode!r}")


def fail_point_command(mode: str | Mapping[str, int], data: Mapping[str, Any] | None = None,
                       *, fail_commands: Sequence[str] | None = None) -> dict[str, Any]:
    """Build a ``configureFailPoint`` command document (for the Python API)."""
    document: dict[str, Any] = dict(data or {})
    if fail_commands is not None:
        document["failCommands"] = list(fail_commands)
    return {"configureFailPoint": "failCommand", "mode": mode, "data": document}
