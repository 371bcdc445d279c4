"""Collation for string comparison: simple (binary) by default, or an approximation of ICU.

A command's ``collation`` (or an update/delete statement's) is active while the command runs
(a context variable, so the comparison functions need no extra argument). Supported: any
locale with ``strength`` 1 (ignore case and accents), 2 (ignore case) and 3+ (case-sensitive,
lowercase first as in ICU's default tertiary order), all approximated with Unicode case folding
and decomposition rather than the full ICU tables.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from asyncmongo.testing.store.errors import StoreError, bad_value


@dataclass(frozen=True, slots=True)
class Collation:
    """The parts of a collation the store honours."""

    locale: str
    strength: int = 3


_CURRENT: ContextVar[Collation | None] = ContextVar("asyncmongo_store_collation", default=None)


def parse_collation(spec: Any) -> Collation | None:
    """A :class:`Collation` from a command's ``collation`` document (None for simple)."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise StoreError(14, "BSON field 'collation' is the wrong type, expected type 'object'")
    locale = spec.get("locale")
    if not isinstance(locale, str):
        raise StoreError(40414, "BSON field 'collation.locale' is missing but a required field")
    if locale == "simple":
        return None
    strength = spec.get("strength", 3)
    if isinstance(strength, bool) or not isinstance(strength, int) or not 1 <= strength <= 5:
        raise bad_value("collation strength must be an integer from 1 to 5")
    return Collation(locale, strength)


@contextmanager
def using(collation: Collation | None) -> Iterator[None]:
    """Make ``collation`` the active one for the duration of the block."""
    token = _CURRENT.set(collation)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def active() -> Collation | None:
    """The collation of the running command (None: simple binary comparison)."""
    return _CURRENT.get()


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def string_key(text: str) -> Any:
    """What a string compares by under the active collation (itself when simple)."""
    collation = _CURRENT.get()
    if collation is None:
        return text
    folded = text.casefold()
    primary = _strip_accents(folded)  # base letters: "péng" sorts with "peng", before "ping"
    if collation.strength == 1:
        return primary
    if collation.strength == 2:
        return (primary, folded)  # then accents
    return (primary, folded, tuple(c.isupper() for c in text))  # then case, lowercase first
