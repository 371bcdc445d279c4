"""Value types of the URI options table (specs/uri-options), one validator per type.

A validator takes the raw value (a ``str`` from a connection string or TXT record, or a typed
Python value from a keyword argument) and returns the typed value, or raises BadValue with the
reason. The caller decides whether a bad value is an error or a warning.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asyncmongo.errors import ConfigurationError, ConfigurationWarning

__all__ = [
    "COMPRESSORS",
    "READ_PREFERENCE_MODES",
    "UUID_REPRESENTATIONS",
    "BadValue",
    "Validator",
    "appname",
    "boolean",
    "choice",
    "compressors",
    "integer",
    "key_value_pairs",
    "max_staleness",
    "service_name",
    "string",
    "tag_set",
    "utf8",
    "w_value",
]

Validator = Callable[[object], Any]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
COMPRESSORS = ("snappy", "zlib", "zstd")
#: uuidRepresentation values (uri-options spec; PyMongo's spellings).
UUID_REPRESENTATIONS = (
    "unspecified",
    "standard",
    "pythonLegacy",
    "javaLegacy",
    "csharpLegacy",
)
READ_PREFERENCE_MODES = (
    "primary",
    "primaryPreferred",
    "secondary",
    "secondaryPreferred",
    "nearest",
)
_INTEGER = re.compile(r"-?[0-9]{1,20}")
# RFC 6335 section 5.1 (letters, digits, inner single hyphens, at least one letter), with the
# seedlist spec's exception that it may be up to 62 characters long.
_SERVICE_NAME = re.compile(r"(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9](?:-?[A-Za-z0-9])*")


class BadValue(ConfigurationError):
    """An option value of the wrong type or out of range; the message says why."""


def boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadValue("expected 'true' or 'false'")


def integer(minimum: int, maximum: int = INT32_MAX) -> Validator:
    """An integer in ``[minimum, maximum]`` (32-bit unless the table says otherwise)."""

    def validate(value: object) -> int:
        number = _to_int(value)
        if not minimum <= number <= maximum:
            raise BadValue(f"expected an integer between {minimum} and {maximum}")
        return number

    return validate


def _to_int(value: object) -> int:
    if isinstance(value, bool):
        raise BadValue("expected an integer, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise BadValue("expected an integer")


def max_staleness(value: object) -> int:
    """-1 (no maximum) or a positive number of seconds (specs/max-staleness)."""
    number = _to_int(value)
    if number == -1 or 0 < number <= INT32_MAX:
        return number
    raise BadValue("expected -1 or a positive integer")


def string(value: object) -> str:
    if isinstance(value, str) and value:
        return utf8(value)
    raise BadValue("expected a non-empty string")


def utf8(text: str) -> str:
    """``text`` if it can go on the wire: BSON strings are UTF-8, which has no lone
    surrogates (such as the ``\\udcff`` that ``os.fsdecode`` makes of a stray byte)."""
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise BadValue(f"contains a lone surrogate at position {exc.start}, which UTF-8 "
                       "cannot encode") from None
    return text


def appname(value: object) -> str:
    """Handshake spec: the application name is at most 128 bytes of UTF-8."""
    text = string(value)
    if len(text.encode()) > 128:
        raise BadValue("must be at most 128 bytes of UTF-8")
    return text


def choice(options: Iterable[str]) -> Validator:
    """One of ``options``, matched case-insensitively and returned in its canonical case."""
    canonical = {option.lower(): option for option in options}

    def validate(value: object) -> str:
        if isinstance(value, str) and value.lower() in canonical:
            return canonical[value.lower()]
        raise BadValue(f"expected one of {sorted(canonical.values())}")

    return validate


def service_name(value: object) -> str:
    text = string(value)
    if len(text) > 62 or not _SERVICE_NAME.fullmatch(text):
        raise BadValue("expected an RFC 6335 service name (letters, digits, '-')")
    return text


def w_value(value: object) -> int | str:
    """``w``: a non-negative integer, or any other string (a tag set name, "majority")."""
    if isinstance(value, str) and not _INTEGER.fullmatch(value):
        return string(value)
    number = _to_int(value)
    if not 0 <= number <= INT32_MAX:
        raise BadValue("expected a non-negative integer or a string")
    return number


def key_value_pairs(value: object) -> dict[str, Any]:
    """``k1:v1,k2:v2`` (the key ends at the first ':', so values may contain ':'), or a dict."""
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    if not isinstance(value, str) or not value:
        raise BadValue("expected comma-separated key:value pairs")
    pairs: dict[str, Any] = {}
    for item in value.split(","):
        key, colon, item_value = item.partition(":")
        if not colon or not key:
            raise BadValue(f"{item!r} is not a key:value pair")
        pairs[key] = item_value
    return pairs


def tag_set(value: object) -> dict[str, str]:
    """One ``readPreferenceTags`` entry: ``dc:ny,rack:1``; the empty string is the tag set {}."""
    if isinstance(value, Mapping):
        return {str(key): str(item) for key, item in value.items()}
    if value == "":
        return {}
    return {key: str(item) for key, item in key_value_pairs(value).items()}


def compressors(value: object) -> tuple[str, ...]:
    """Compression spec: unsupported compressor names are dropped with a warning."""
    if isinstance(value, str):
        names = [name for name in value.split(",") if name]
    elif isinstance(value, Iterable) and all(isinstance(name, str) for name in value):
        names = list(value)
    else:
        raise BadValue("expected a comma-separated list of compressor names")
    kept = tuple(dict.fromkeys(name.lower() for name in names))
    unknown = [name for name in kept if name not in COMPRESSORS]
    if unknown:
        warnings.warn(
            f"unsupported compressors {unknown} ignored (supported: {list(COMPRESSORS)})",
            ConfigurationWarning,
            stacklevel=2,
        )
    return tuple(name for name in kept if name in COMPRESSORS)
