"""OpenTelemetry tracing (open-telemetry spec): whether a client traces, and with what.

Tracing is off by default. A client turns it on or off with ``tracing={"enabled": True}``;
left unset, the environment decides (``OTEL_PYTHON_INSTRUMENTATION_MONGODB_ENABLED`` = 1,
true or yes). ``query_text_max_length`` (or the variable
``OTEL_PYTHON_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH``) above 0 adds each command, as
relaxed Extended JSON cut to that length, as ``db.query.text``.
``tracer_provider`` picks the OpenTelemetry TracerProvider to trace to (default: the global
one, which the host application configures).

This module does not import OpenTelemetry: :func:`make_tracer` imports
:mod:`asyncmongo.monitoring.otel` (which does) only for a client that traces, so asyncmongo
runs without the ``otel`` extra installed and pays nothing for tracing when it is off.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from asyncmongo.errors import ConfigurationError, ConfigurationWarning

if TYPE_CHECKING:
    from asyncmongo.monitoring.otel import Tracer

__all__ = ["ENABLED_VARIABLE", "QUERY_TEXT_VARIABLE", "TracingOptions", "make_tracer",
           "tracing_options"]

ENABLED_VARIABLE: Final = "OTEL_PYTHON_INSTRUMENTATION_MONGODB_ENABLED"
QUERY_TEXT_VARIABLE: Final = "OTEL_PYTHON_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH"
_TRUE: Final = frozenset({"1", "true", "yes"})
_KEYS: Final = frozenset({"enabled", "query_text_max_length", "tracer_provider"})


@dataclass(frozen=True, slots=True)
class TracingOptions:
    """A client's tracing settings, resolved from its ``tracing`` option and the environment."""

    enabled: bool = False
    query_text_max_length: int = 0
    tracer_provider: Any = None
    #: Enabled by the environment variable alone (not the client's own option).
    from_environment: bool = field(default=False, compare=False)


def tracing_options(option: Mapping[str, Any] | None,
                    environ: Mapping[str, str] = os.environ) -> TracingOptions:
    """The client option over the environment (spec: "This option MUST override settings on
    higher levels"); an unset ``enabled`` or ``query_text_max_length`` falls back to its
    variable."""
    option = dict(option or {})
    unknown = set(option) - _KEYS
    if unknown:
        raise ConfigurationError(f"unknown tracing option(s) {sorted(unknown)}; expected "
                                 f"{sorted(_KEYS)}")
    enabled = option.get("enabled")
    from_environment = enabled is None
    if enabled is None:
        enabled = environ.get(ENABLED_VARIABLE, "").strip().lower() in _TRUE
    elif not isinstance(enabled, bool):
        raise ConfigurationError(f"tracing enabled must be a bool, not {enabled!r}")
    length = option.get("query_text_max_length")
    if length is None:
        length = _int_variable(environ.get(QUERY_TEXT_VARIABLE, ""))
    elif not isinstance(length, int) or isinstance(length, bool) or length < 0:
        raise ConfigurationError(
            f"tracing query_text_max_length must be an int >= 0, not {length!r}")
    return TracingOptions(enabled, length, option.get("tracer_provider"), from_environment)


def _int_variable(text: str) -> int:
    """A positive integer variable; anything else (unset, malformed) means 0 (off)."""
    try:
        return max(int(text.strip()), 0)
    except ValueError:
        return 0


def make_tracer(options: TracingOptions) -> Tracer | None:
    """The client's tracer, or None when it does not trace (OpenTelemetry is imported only
    then). Without the ``otel`` extra, a client asking for tracing itself gets a
    ConfigurationError; one that the environment variable alone turned on gets a warning and
    runs untraced, so a variable set for a whole host does not stop applications."""
    if not options.enabled:
        return None
    try:
        from asyncmongo.monitoring.otel import Tracer
    except ImportError as exc:
        if options.from_environment:
            warnings.warn(
                f"{ENABLED_VARIABLE} is set but the OpenTelemetry API is not installed "
                "(pip install 'asyncmongo[otel]'); this client does not trace",
                ConfigurationWarning,
                stacklevel=4,
            )
            return None
        raise ConfigurationError(
            "tracing needs the OpenTelemetry API: pip install 'asyncmongo[otel]'") from exc
    return Tracer(query_text_max_length=options.query_text_max_length,
                  tracer_provider=options.tracer_provider)
