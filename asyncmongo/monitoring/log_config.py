"""The logging spec's environment configuration (specs/logging, "Fallback implementation").

asyncmongo logs through the standard :mod:`logging` module, one logger per component of the
spec, each message at DEBUG (command, topology, server selection, connection):

================================  ==============================
environment variable              logger
================================  ==============================
``MONGODB_LOG_COMMAND``           ``asyncmongo.command``
``MONGODB_LOG_TOPOLOGY``          ``asyncmongo.topology``
``MONGODB_LOG_SERVER_SELECTION``  ``asyncmongo.serverSelection``
``MONGODB_LOG_CONNECTION``        ``asyncmongo.connection``
================================  ==============================

``MONGODB_LOG_ALL`` sets every component; a component's own variable wins over it. Values are
the spec's severities, case-insensitive: ``off``, ``emergency``, ``alert``, ``critical``,
``error``, ``warn``, ``notice``, ``info``, ``debug``, ``trace`` (Python has no notice nor trace:
they map to INFO and DEBUG, the closest less severe levels). ``MONGODB_LOG_PATH`` is
``stdout``, ``stderr`` (the default) or a file, appended to. ``MONGODB_LOG_MAX_DOCUMENT_LENGTH``
(default 1000) bounds every document in a message, which then ends with ``...``. An invalid
value counts as unset and is reported as a warning on the ``asyncmongo`` logger, never raised.

The first :class:`~asyncmongo.AsyncMongoClient` of the process applies the variables
(:func:`configure_from_environment`). Programmatic configuration wins: a component logger that
already has a level or a handler is left alone. A configured logger gets a handler writing to
the destination and stops propagating, so a message is not written twice by the application's
own root handler.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "COMPONENT_LOGGERS",
    "DEFAULT_MAX_DOCUMENT_LENGTH",
    "OFF",
    "LogSettings",
    "configure_from_environment",
    "max_document_length",
    "settings_from_environment",
    "truncate",
]

#: The spec's component variables and the loggers they configure.
COMPONENT_LOGGERS: Mapping[str, str] = {
    "MONGODB_LOG_COMMAND": "asyncmongo.command",
    "MONGODB_LOG_TOPOLOGY": "asyncmongo.topology",
    "MONGODB_LOG_SERVER_SELECTION": "asyncmongo.serverSelection",
    "MONGODB_LOG_CONNECTION": "asyncmongo.connection",
}
#: specs/logging: the default maximum length of a document in a log message.
DEFAULT_MAX_DOCUMENT_LENGTH = 1000
#: A level above CRITICAL: the spec's ``off``.
OFF = logging.CRITICAL + 10

_SEVERITIES: Mapping[str, int] = {
    "off": OFF,
    "emergency": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warn": logging.WARNING,
    "notice": logging.INFO,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
}
_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_LOGGER = logging.getLogger("asyncmongo")

_max_document_length = DEFAULT_MAX_DOCUMENT_LENGTH
_configured = False


@dataclass(frozen=True, slots=True)
class LogSettings:
    """What the environment asks for; ``problems`` are the invalid values it ignored."""

    levels: Mapping[str, int] = field(default_factory=dict)
    path: str = "stderr"
    max_document_length: int = DEFAULT_MAX_DOCUMENT_LENGTH
    problems: tuple[str, ...] = ()


def max_document_length() -> int:
    """The longest document text a log message carries (the rest becomes ``...``)."""
    return _max_document_length


def truncate(text: str, limit: int | None = None) -> str:
    """specs/logging: document text longer than the limit (by default
    :func:`max_document_length`) is cut and ends with ``...``."""
    if limit is None:
        limit = _max_document_length
    return text if len(text) <= limit else text[:limit] + "..."


def settings_from_environment(environ: Mapping[str, str]) -> LogSettings:
    """Parse the spec's variables from ``environ`` (pure: nothing is configured)."""
    problems: list[str] = []
    every = _severity(environ, "MONGODB_LOG_ALL", problems)
    levels: dict[str, int] = {}
    for variable, logger in COMPONENT_LOGGERS.items():
        level = _severity(environ, variable, problems)
        if level is None:
            level = every
        if level is not None:
            levels[logger] = level
    path = environ.get("MONGODB_LOG_PATH", "stderr").strip() or "stderr"
    if path.lower() in ("stdout", "stderr"):
        path = path.lower()
    return LogSettings(levels, path, _max_length(environ, problems), tuple(problems))


def _severity(environ: Mapping[str, str], variable: str, problems: list[str]) -> int | None:
    value = environ.get(variable)
    if value is None:
        return None
    level = _SEVERITIES.get(value.strip().lower())
    if level is None:
        problems.append(f"{variable}={value!r} is not one of {', '.join(_SEVERITIES)}: ignored")
    return level


def _max_length(environ: Mapping[str, str], problems: list[str]) -> int:
    value = environ.get("MONGODB_LOG_MAX_DOCUMENT_LENGTH")
    if value is None:
        return DEFAULT_MAX_DOCUMENT_LENGTH
    try:
        length = int(value)
    except ValueError:
        length = -1
    if length < 0:
        problems.append(
            f"MONGODB_LOG_MAX_DOCUMENT_LENGTH={value!r} is not a non-negative integer: ignored"
        )
        return DEFAULT_MAX_DOCUMENT_LENGTH
    return length


def configure_from_environment(
    environ: Mapping[str, str] | None = None, *, override: bool = False
) -> LogSettings:
    """Apply the variables of ``environ`` (default ``os.environ``) to asyncmongo's loggers.

    Clients call it once per process; calling it again applies the variables again.
    ``override=True`` configures even the loggers the application configured itself (how an
    application lets the environment win over its own defaults).
    """
    global _configured, _max_document_length
    _configured = True
    settings = settings_from_environment(os.environ if environ is None else environ)
    _max_document_length = settings.max_document_length
    problems = list(settings.problems)
    handler: logging.Handler | None = None
    for name, level in settings.levels.items():
        logger = logging.getLogger(name)
        if not override and (logger.level != logging.NOTSET or logger.handlers):
            continue  # specs/logging: programmatic configuration takes precedence
        logger.setLevel(level)
        if level == OFF:
            continue
        if handler is None:
            handler = _handler(settings.path, problems)
        if handler not in logger.handlers:
            logger.addHandler(handler)
        logger.propagate = False
    for problem in problems:
        _LOGGER.warning("asyncmongo logging configuration: %s", problem)
    return settings


def configure_once() -> None:
    """The first client's call: apply the environment unless already done."""
    if not _configured:
        configure_from_environment()


_handlers: dict[str, logging.Handler] = {}


def _handler(path: str, problems: list[str]) -> logging.Handler:
    """One handler per destination for the process (re-configuring reuses it)."""
    handler = _handlers.get(path)
    if handler is not None:
        return handler
    if path == "stdout":
        handler = logging.StreamHandler(sys.stdout)
    elif path == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            handler = logging.FileHandler(path, mode="a", encoding="utf-8")
        except OSError as exc:
            problems.append(f"MONGODB_LOG_PATH={path!r} cannot be opened ({exc}): using stderr")
            return _handler("stderr", problems)
    handler.setFormatter(logging.Formatter(_FORMAT))
    _handlers[path] = handler
    return handler
