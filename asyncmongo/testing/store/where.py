"""``$where``: the few JavaScript predicates the specification tests send, without JavaScript.

The store has no JavaScript engine. The spec tests use ``$where`` for one thing: to keep a
command busy on the server for a while (``{$where: "sleep(2000) || true"}`` blocks a find so
that the driver's pool can interrupt it). This module understands exactly that family:

- an expression: ``true``, ``false``, ``sleep(N)``, or those joined by ``||`` (JavaScript's
  short-circuit: ``sleep`` returns ``undefined``, which is falsy, so ``sleep(N) || true``
  sleeps N ms and matches);
- a function: ``function() { sleep(N); ...; return <expression>; }`` (statements are
  ``sleep(N)`` calls and one final ``return``).

Anything else (field access such as ``this.x``, other functions, scopes) is refused with
BadValue naming these limits, so a test that needs real JavaScript fails loudly instead of
matching wrongly.

The store is synchronous, so it does not sleep: each document the predicate evaluates adds its
``sleep`` time to the :func:`javascript_sleeps` ledger of the running command, and the server
front end (``asyncmongo.testing.server``) awaits that much before it answers, without blocking
the event loop, as mongod's ``sleep`` holds the command (not the whole server).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from asyncmongo.testing.store.errors import bad_value

__all__ = ["SleepLedger", "WhereScript", "compile_where", "javascript_sleeps", "parse_where"]

LIMITS = (
    "asyncmongo.testing's $where understands only 'true', 'false', 'sleep(N)' joined by '||', "
    "or 'function() { sleep(N); return <that>; }' (it has no JavaScript engine)"
)
_FUNCTION = re.compile(r"function\s*\(\s*\)\s*\{(?P<body>.*)\}", re.DOTALL)
_SLEEP = re.compile(r"sleep\s*\(\s*(?P<ms>\d+(?:\.\d*)?)\s*\)")
_RETURN = re.compile(r"return\b(?P<expression>.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class WhereScript:
    """What one evaluation of the script does: sleep ``sleep_ms`` ms, then answer ``result``."""

    sleep_ms: float
    result: bool


@dataclass(slots=True)
class SleepLedger:
    """The JavaScript sleep time one command has accumulated, in milliseconds."""

    ms: float = 0.0


_LEDGER: contextvars.ContextVar[SleepLedger | None] = contextvars.ContextVar(
    "asyncmongo_testing_where_ledger", default=None
)


@contextmanager
def javascript_sleeps() -> Iterator[SleepLedger]:
    """Collect the ``sleep`` time of the ``$where`` evaluations run inside the block."""
    ledger = SleepLedger()
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


def parse_where(code: Any) -> WhereScript:
    """The script ``code`` as a :class:`WhereScript`; BadValue for anything beyond LIMITS."""
    if not isinstance(code, str):  # a str or bson Code
        raise bad_value(f"$where got a {type(code).__name__}: {LIMITS}")
    if getattr(code, "scope", None):
        raise bad_value(f"$where with a scope is not supported: {LIMITS}")
    text = str(code).strip()
    function = _FUNCTION.fullmatch(text)
    if function is None:
        return _expression(text, 0.0)
    slept = 0.0
    statements = [s.strip() for s in function.group("body").split(";")]
    statements = [s for s in statements if s]
    for index, statement in enumerate(statements):
        returned = _RETURN.fullmatch(statement)
        if returned is not None:
            if index != len(statements) - 1:
                break
            return _expression(returned.group("expression").strip(), slept)
        sleep = _SLEEP.fullmatch(statement)
        if sleep is None:
            break
        slept += float(sleep.group("ms"))
    else:
        return WhereScript(slept, False)  # no return: undefined, which is falsy
    raise bad_value(f"$where {text!r}: {LIMITS}")


def _expression(text: str, slept: float) -> WhereScript:
    """``a || b || ...`` of true, false and sleep(N), evaluated left to right."""
    terms = [t.strip() for t in text.split("||")]
    values: list[tuple[float, bool]] = []
    for term in terms:
        sleep = _SLEEP.fullmatch(term)
        if sleep is not None:
            values.append((float(sleep.group("ms")), False))
        elif term in ("true", "false"):
            values.append((0.0, term == "true"))
        else:
            raise bad_value(f"$where {text!r}: {LIMITS}")
    for ms, truthy in values:
        slept += ms
        if truthy:
            return WhereScript(slept, True)
    return WhereScript(slept, False)


def compile_where(code: Any) -> Callable[[Mapping[str, Any]], bool]:
    """The ``$where`` predicate: records the script's sleep per document, answers its result."""
    script = parse_where(code)

    def predicate(document: Mapping[str, Any]) -> bool:
        ledger = _LEDGER.get()
        if ledger is not None:
            ledger.ms += script.sleep_ms
        return script.result

    return predicate
