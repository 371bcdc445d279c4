"""SASLprep (RFC 4013): the RFC's examples, the auth spec's prose strings, every rule."""

from __future__ import annotations

import pytest

from asyncmongo.core.auth.saslprep import saslprep
from asyncmongo.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # RFC 4013 section 3, examples 1-5.
        ("I\u00adX", "IX"),  # SOFT HYPHEN mapped to nothing
        ("user", "user"),
        ("USER", "USER"),  # case preserved
        ("\u00aa", "a"),  # NFKC
        ("\u2168", "IX"),  # ROMAN NUMERAL NINE, NFKC
        # Auth spec test plan, step 4 (password forms).
        ("IX", "IX"),
        ("I\u00adV", "IV"),
        ("\u2163", "IV"),
        ("IV", "IV"),
        # Non-ASCII spaces map to SPACE (C.1.2), zero width characters to nothing (B.1).
        ("a\u00a0b", "a b"),
        ("a\u2003b", "a b"),
        ("a\u200bb\ufeff", "ab"),
        ("", ""),
        # Right-to-left strings that satisfy the bidi rule.
        ("\u0627\u0628", "\u0627\u0628"),
        ("\u0627\u0031\u0628", "\u0627\u0031\u0628"),
    ],
)
def test_saslprep_maps_and_normalizes(text: str, expected: str) -> None:
    assert saslprep(text) == expected


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("\u0007", "C.2.1"),  # RFC 4013 example 6
        ("a\u0000b", "C.2.1"),
        ("\u0080", "C.2.2"),
        ("\ue000", "C.3"),  # private use
        ("\ufdd0", "C.4"),  # non-character
        ("\ud800", "C.5"),  # lone surrogate
        ("\ufffd", "C.6"),  # REPLACEMENT CHARACTER
        ("\u2ff0", "C.7"),  # ideographic description character
        ("\u200e", "C.8"),  # LEFT-TO-RIGHT MARK
        ("\U000e0001", "C.9"),  # LANGUAGE TAG
    ],
)
def test_saslprep_rejects_prohibited_characters(text: str, rule: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"prohibited character \({rule}"):
        saslprep(text)


def test_saslprep_bidi_mixed_directions_rejected() -> None:
    # RFC 4013 example 7: RandALCat with a string not ending in RandALCat.
    with pytest.raises(ConfigurationError, match="bidi"):
        saslprep("\u0627\u0031")
    # RandALCat mixed with LCat.
    with pytest.raises(ConfigurationError, match="bidi"):
        saslprep("\u0627a\u0628")


def test_saslprep_unassigned_code_points_only_allowed_for_queries() -> None:
    unassigned = "\u0221"  # assigned in Unicode 4.0, so in RFC 3454 table A.1
    with pytest.raises(ConfigurationError, match="unassigned"):
        saslprep(unassigned)
    assert saslprep(unassigned, allow_unassigned=True) == unassigned


def test_saslprep_error_does_not_echo_the_password() -> None:
    with pytest.raises(ConfigurationError) as info:
        saslprep("secret\u0007")
    assert "secret" not in str(info.value)
    assert "position 6" in str(info.value)


def test_saslprep_needs_a_string() -> None:
    with pytest.raises(ConfigurationError):
        saslprep(b"bytes")  # type: ignore[arg-type]
