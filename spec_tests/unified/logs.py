"""Capturing asyncmongo's structured log messages and checking expectLogMessages.

asyncmongo logs through ``asyncmongo.<component>`` loggers (command, topology,
serverSelection, connection) with message objects that carry the spec's structured
``fields``. A :class:`LogCapture` collects those while a test runs; :func:`messages_for`
keeps what one client entity asked for in ``observeLogMessages`` (component -> minimum
severity). Python's logging is process-wide, so the messages are attributed to a client by
topology id where they carry one, and otherwise to the only client observing logs (a test
with several is skipped with that reason).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from asyncmongo.monitoring import log_config
from spec_tests.unified.errors import Unsupported
from spec_tests.unified.matcher import MatchContext, MatchError, match

__all__ = ["LogCapture", "LogEntry", "check_log_messages", "messages_for", "severity_name"]

COMPONENTS: Final = frozenset({"command", "topology", "serverSelection", "connection"})
#: Logging spec severities, most to least severe.
SEVERITIES: Final = ("emergency", "alert", "critical", "error", "warning", "notice", "info",
                     "debug", "trace")
_TRACE: Final = 5
_WHOLE_DOCUMENTS: Final = 1 << 24


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One structured log message: component, severity name and the message's fields."""

    component: str
    level: str
    data: Mapping[str, Any]


def severity_name(levelno: int) -> str:
    """Python's level number as the logging spec's severity name."""
    for floor, name in ((50, "critical"), (40, "error"), (30, "warning"), (25, "notice"),
                        (20, "info"), (10, "debug")):
        if levelno >= floor:
            return name
    return "trace"


class LogCapture(logging.Handler):
    """A handler on the ``asyncmongo`` logger, recording structured messages at any level."""

    def __init__(self) -> None:
        super().__init__(level=_TRACE)
        self.entries: list[LogEntry] = []
        self._logger = logging.getLogger("asyncmongo")
        self._saved_level = self._logger.level
        self._saved_length = log_config._max_document_length

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record.msg, "fields", None)
        component = record.name.removeprefix("asyncmongo.")
        if isinstance(fields, Mapping) and component in COMPONENTS:
            self.entries.append(LogEntry(component, severity_name(record.levelno), dict(fields)))

    def __enter__(self) -> LogCapture:
        self._saved_level = self._logger.level
        self._logger.setLevel(_TRACE)
        self._logger.addHandler(self)
        # The suites match whole documents in messages ($$matchAsDocument on a heartbeat's
        # reply) that the default 1000-character limit would cut (the simulator's hello
        # replies are longer, as mongod's can be): capture them whole, as a user setting
        # MONGODB_LOG_MAX_DOCUMENT_LENGTH would. Truncation itself is tested in
        # tests/monitoring/test_log_config.py.
        self._saved_length = log_config._max_document_length
        log_config._max_document_length = _WHOLE_DOCUMENTS
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._saved_level)
        log_config._max_document_length = self._saved_length


def messages_for(entries: Sequence[LogEntry], observe: Mapping[str, str],
                 topology_ids: set[str], *, only_observer: bool) -> list[LogEntry]:
    """The entries a client with ``observeLogMessages`` = ``observe`` collects."""
    kept = []
    for entry in entries:
        wanted = observe.get(entry.component)
        if wanted is None or SEVERITIES.index(entry.level) > SEVERITIES.index(wanted):
            continue
        if entry.data.get("commandName") == "configureFailPoint":
            continue  # the runner's fail points, ignored like their command events
        topology = entry.data.get("topologyId")
        if topology is not None and str(topology) not in topology_ids:
            continue
        if topology is None and not only_observer:
            raise Unsupported("several clients observe log messages and asyncmongo's "
                              f"{entry.component} messages do not say which client wrote them")
        kept.append(entry)
    return kept


def _entry_matches(expected: Mapping[str, Any], entry: LogEntry,
                   ctx: MatchContext | None) -> None:
    if expected["component"] != entry.component:
        raise MatchError(f"component {entry.component}, expected {expected['component']}")
    if expected["level"] != entry.level:
        raise MatchError(f"level {entry.level}, expected {expected['level']}")
    match(expected["data"], entry.data, ctx, root=True, path="data")
    if "failureIsRedacted" in expected:
        _check_redacted(expected["failureIsRedacted"], entry.data.get("failure"))


def _check_redacted(redacted: bool, failure: Any) -> None:
    """A redacted failure keeps only code, codeName and errorLabels (logging spec)."""
    document = json.loads(failure) if isinstance(failure, str) else failure
    extra = set(document or {}) - {"code", "codeName", "errorLabels"}
    if redacted and extra:
        raise MatchError(f"failure should be redacted, has {sorted(extra)}")
    if not redacted and not extra:
        raise MatchError(f"failure should not be redacted: {failure!r}")


def check_log_messages(expected: Mapping[str, Any], observed: Sequence[LogEntry],
                       ctx: MatchContext | None) -> None:
    """expectedLogMessagesForClient: the messages in order, minus ignoreMessages."""
    ignore = expected.get("ignoreMessages", ())
    remaining = [e for e in observed if not any(_quietly(i, e, ctx) for i in ignore)]
    wanted = expected["messages"]
    extra_ok = expected.get("ignoreExtraMessages", False)
    summary = [e.data.get("message") for e in remaining]
    if len(remaining) < len(wanted) or (not extra_ok and len(remaining) != len(wanted)):
        raise MatchError(f"expected {len(wanted)} log messages "
                         f"{[w['data'].get('message') for w in wanted]}, observed "
                         f"{len(remaining)}: {summary}")
    for index, (want, entry) in enumerate(zip(wanted, remaining, strict=False)):
        try:
            _entry_matches(want, entry, ctx)
        except MatchError as exc:
            raise MatchError(f"log message {index} ({entry.data.get('message')}): {exc}") \
                from None


def _quietly(expected: Mapping[str, Any], entry: LogEntry, ctx: MatchContext | None) -> bool:
    try:
        _entry_matches(expected, entry, ctx)
    except MatchError:
        return False
    return True
