"""Strict percent-decoding (RFC 3986 section 2.1) for every part of a connection string.

``urllib.parse.unquote`` silently keeps a malformed ``%`` and replaces bad UTF-8; a
connection string must instead be rejected with the name of the part that is wrong.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from asyncmongo.errors import InvalidURI

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def percent_decode(text: str, part: str) -> str:
    """Decode ``%XX`` escapes as UTF-8; ``part`` names the URI part in the error message.

    A lone surrogate (``\\udcff``, what ``os.fsdecode`` makes of a stray byte) is not text
    UTF-8 can carry, so no part of a connection string may hold one."""
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            raise InvalidURI(f"{part} contains a lone surrogate at position {exc.start}, "
                             "which is not valid Unicode text") from None
    if "%" not in text:
        return text
    if _BAD_ESCAPE.search(text):
        raise InvalidURI(f"{part} contains a '%' that is not a valid percent-encoded escape")
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise InvalidURI(f"{part} percent-decodes to bytes that are not UTF-8") from None
