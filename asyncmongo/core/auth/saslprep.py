"""SASLprep (RFC 4013), the stringprep profile SCRAM-SHA-256 applies to passwords.

Built on the standard library's ``stringprep`` tables (RFC 3454, Unicode 3.2) and the matching
``unicodedata.ucd_3_2_0`` normalisation, so the result is the one every other driver computes.
The steps, in RFC 4013 order:

1. Map (section 2.1): non-ASCII spaces (C.1.2) become U+0020, "commonly mapped to nothing"
   characters (B.1) are removed.
2. Normalize (section 2.2): NFKC.
3. Prohibit (section 2.3): C.1.2, C.2.1, C.2.2, C.3, C.4, C.5, C.6, C.7, C.8, C.9.
4. Bidi (section 2.4, RFC 3454 section 6).
5. Unassigned code points (section 2.5, table A.1): prohibited for "stored strings", allowed for
   "queries". MongoDB drivers treat a password as a stored string (the default here).

An invalid string raises :class:`~asyncmongo.errors.ConfigurationError`. The message names the
rule and the position but never the character, because the string is usually a password.
"""

from __future__ import annotations

import stringprep
import unicodedata
from collections.abc import Callable

from asyncmongo.errors import ConfigurationError

__all__ = ["saslprep"]

_PROHIBITED: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("C.1.2 non-ASCII space", stringprep.in_table_c12),
    ("C.2.1 ASCII control character", stringprep.in_table_c21),
    ("C.2.2 non-ASCII control character", stringprep.in_table_c22),
    ("C.3 private use character", stringprep.in_table_c3),
    ("C.4 non-character code point", stringprep.in_table_c4),
    ("C.5 surrogate code point", stringprep.in_table_c5),
    ("C.6 character inappropriate for plain text", stringprep.in_table_c6),
    ("C.7 character inappropriate for canonical representation", stringprep.in_table_c7),
    ("C.8 change display property or deprecated character", stringprep.in_table_c8),
    ("C.9 tagging character", stringprep.in_table_c9),
)


def saslprep(text: str, *, allow_unassigned: bool = False) -> str:
    """Prepare ``text`` with the SASLprep profile (RFC 4013) and return the result.

    ``allow_unassigned=False`` treats ``text`` as a stored string (unassigned code points of
    Unicode 3.2 are rejected); ``True`` treats it as a query.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"SASLprep needs a str, not {type(text).__name__}")
    if text.isascii() and text.isprintable():
        # Fast path: printable ASCII maps to itself and passes every check.
        return text
    prepared = unicodedata.ucd_3_2_0.normalize("NFKC", _map(text))
    _check_prohibited(prepared, allow_unassigned)
    _check_bidi(prepared)
    return prepared


def _map(text: str) -> str:
    """RFC 4013 section 2.1: non-ASCII space to SPACE, B.1 characters to nothing."""
    return "".join(
        " " if stringprep.in_table_c12(ch) else ch
        for ch in text
        if not stringprep.in_table_b1(ch)
    )


def _check_prohibited(text: str, allow_unassigned: bool) -> None:
    for position, ch in enumerate(text):
        for rule, in_table in _PROHIBITED:
            if in_table(ch):
                raise ConfigurationError(
                    f"SASLprep: prohibited character ({rule}) at position {position}"
                )
        if not allow_unassigned and stringprep.in_table_a1(ch):
            raise ConfigurationError(
                f"SASLprep: unassigned code point (A.1) at position {position}"
            )


def _check_bidi(text: str) -> None:
    """RFC 3454 section 6: a string with RandALCat characters has no LCat characters and
    starts and ends with a RandALCat character."""
    if not any(stringprep.in_table_d1(ch) for ch in text):
        return
    if any(stringprep.in_table_d2(ch) for ch in text):
        raise ConfigurationError(
            "SASLprep: bidi check failed (right-to-left and left-to-right characters mixed)"
        )
    if not (stringprep.in_table_d1(text[0]) and stringprep.in_table_d1(text[-1])):
        raise ConfigurationError(
            "SASLprep: bidi check failed (a right-to-left string must start and end with a "
            "right-to-left character)"
        )
