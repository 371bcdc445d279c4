"""The BSON value types that have no natural Python equivalent.

Each one exists so that decoding and re-encoding a document is lossless: an int64 that fits
in 32 bits stays an int64 (:class:`Int64`), a symbol stays a symbol (:class:`Symbol`), the
deprecated undefined value survives (:class:`Undefined`), and so on. The codec option enums
``UuidRepresentation`` and ``DatetimeConversion`` are defined in codec_options and exported
here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from asyncmongo.bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    DatetimeConversion,
    UuidRepresentation,
)
from asyncmongo.bson.errors import InvalidDocument
from asyncmongo.bson.objectid import ObjectId

__all__ = [
    "Code",
    "DBPointer",
    "DatetimeConversion",
    "DatetimeMS",
    "Int64",
    "MaxKey",
    "MinKey",
    "Regex",
    "Symbol",
    "Timestamp",
    "Undefined",
    "UuidRepresentation",
]

_UINT32_MAX: Final = 0xFFFFFFFF


class Int64(int):
    """An int that always encodes as BSON int64 (type 0x12), whatever its value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Int64({int(self)})"


class Symbol(str):
    """The deprecated BSON symbol (type 0x0E), kept apart from str so it re-encodes as one."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str.__repr__(self)})"


class Code(str):
    """JavaScript code (type 0x0D), or code with scope (type 0x0F) when ``scope`` is not None."""

    # str is variable-sized, so no __slots__: the scope lives in the instance __dict__.
    scope: Mapping[str, Any] | None

    def __new__(cls, code: str, scope: Mapping[str, Any] | None = None, **kwargs: Any) -> Code:
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, not {type(code).__name__}")
        self = str.__new__(cls, code)
        if scope is None and isinstance(code, Code):
            scope = code.scope
        if kwargs:
            scope = {**(scope or {}), **kwargs}
        if scope is not None and not isinstance(scope, Mapping):
            raise TypeError(f"scope must be a mapping or None, not {type(scope).__name__}")
        self.scope = scope
        return self

    def __repr__(self) -> str:
        return f"Code({str.__repr__(self)}, {self.scope!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Code):
            return (str(self), self.scope) == (str(other), other.scope)
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


@dataclass(frozen=True, slots=True, order=True)
class Timestamp:
    """The internal MongoDB timestamp (type 0x11): seconds ``time`` and ordinal ``inc``.

    Both are unsigned 32-bit integers; ordering is by (time, inc) as the server orders them.
    """

    time: int
    inc: int

    def __post_init__(self) -> None:
        for name in ("time", "inc"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Timestamp {name} must be an int, not {type(value).__name__}")
            if not 0 <= value <= _UINT32_MAX:
                raise InvalidDocument(
                    f"Timestamp {name} must fit in an unsigned 32-bit int: {value}"
                )

    def as_datetime(self) -> datetime:
        """``time`` as an aware UTC datetime."""
        return datetime.fromtimestamp(self.time, UTC)


# Regex flags in the spec's required (alphabetical) encoding order, and Python's re equivalents.
_RE_FLAGS: Final = (
    ("i", re.IGNORECASE),
    ("l", re.LOCALE),
    ("m", re.MULTILINE),
    ("s", re.DOTALL),
    ("u", re.UNICODE),
    ("x", re.VERBOSE),
)


def flags_from_re(flags: int, *, unicode: bool = False) -> str:
    """The BSON flag letters for a Python ``re`` flags value, in BSON order. re.UNICODE is
    implicit on str patterns, so it gives "u" only with ``unicode=True`` (PyMongo's Regex)."""
    return "".join(
        letter for letter, bit in _RE_FLAGS if flags & bit and (unicode or letter != "u")
    )


def flags_to_re(flags: str) -> int:
    """The Python ``re`` flags for BSON flag letters (unknown letters are ignored)."""
    result = 0
    for letter, bit in _RE_FLAGS:
        if letter in flags and letter != "l":
            result |= bit
    return result


@dataclass(frozen=True, slots=True, eq=False)
class Regex:
    """A BSON regular expression (type 0x0B), kept verbatim (MongoDB's PCRE syntax is not
    Python's). ``flags`` are kept as given and encoded sorted, as the BSON spec requires;
    equality ignores their order (``Regex("a", "mi") == Regex("a", "im")``)."""

    pattern: str
    flags: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise TypeError(f"Regex pattern must be a str, not {type(self.pattern).__name__}")
        if isinstance(self.flags, int) and not isinstance(self.flags, bool):
            object.__setattr__(self, "flags", flags_from_re(self.flags))
        elif not isinstance(self.flags, str):
            raise TypeError(f"Regex flags must be a str, not {type(self.flags).__name__}")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Regex):
            return self.pattern == other.pattern and sorted(self.flags) == sorted(other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, "".join(sorted(self.flags))))

    @classmethod
    def from_native(cls, regex: re.Pattern[str]) -> Regex:
        """A Regex from a compiled Python pattern (its flags converted to letters)."""
        return cls(regex.pattern, flags_from_re(regex.flags))

    def try_compile(self) -> re.Pattern[str]:
        """Compile with Python's ``re`` (may fail: MongoDB regexes are PCRE)."""
        return re.compile(self.pattern, flags_to_re(self.flags))


@dataclass(frozen=True, slots=True)
class DBPointer:
    """The deprecated DBPointer (type 0x0C): a namespace string and an ObjectId."""

    namespace: str
    id: ObjectId


class _Singleton:
    """Base of the valueless BSON types: every instance is the same object."""

    __slots__ = ()
    _instance: Any = None

    def __new__(cls) -> Any:
        instance = cls.__dict__.get("_instance")
        if instance is None:
            instance = object.__new__(cls)
            type.__setattr__(cls, "_instance", instance)
        return instance

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self) -> tuple[type[Any], tuple[()]]:
        return (type(self), ())

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


class MinKey(_Singleton):
    """BSON MinKey (type 0xFF): compares less than every other value."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MinKey)

    def __hash__(self) -> int:
        return hash("asyncmongo.bson.MinKey")

    def __lt__(self, other: object) -> bool:
        return not isinstance(other, MinKey)

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False

    def __ge__(self, other: object) -> bool:
        return isinstance(other, MinKey)


class MaxKey(_Singleton):
    """BSON MaxKey (type 0x7F): compares greater than every other value."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MaxKey)

    def __hash__(self) -> int:
        return hash("asyncmongo.bson.MaxKey")

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return isinstance(other, MaxKey)

    def __gt__(self, other: object) -> bool:
        return not isinstance(other, MaxKey)

    def __ge__(self, other: object) -> bool:
        return True


class Undefined(_Singleton):
    """The deprecated BSON undefined (type 0x06), decoded and re-encoded losslessly."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undefined)

    def __hash__(self) -> int:
        return hash("asyncmongo.bson.Undefined")

    def __bool__(self) -> bool:
        return False


_EPOCH_AWARE: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MIN_MS: Final = -(2**63)
_MAX_MS: Final = 2**63 - 1


def datetime_to_ms(value: datetime) -> int:
    """Milliseconds since the epoch for a datetime (naive means UTC), truncating microseconds
    toward negative infinity like the server does."""
    if value.utcoffset() is None:  # naive (no tzinfo, or one that gives no offset)
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH_AWARE
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


class DatetimeMS(int):
    """A BSON UTC datetime as raw milliseconds since the epoch.

    Represents every BSON datetime, including those outside :class:`datetime`'s range
    (years 1..9999). ``DatetimeMS(dt)`` converts a datetime.
    """

    __slots__ = ()

    def __new__(cls, value: int | datetime = 0) -> DatetimeMS:
        if isinstance(value, datetime):
            value = datetime_to_ms(value)
        elif not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"DatetimeMS takes an int or a datetime, not {type(value).__name__}")
        if not _MIN_MS <= value <= _MAX_MS:
            raise InvalidDocument(f"DatetimeMS {value} does not fit in a signed 64-bit integer")
        return int.__new__(cls, value)

    def __repr__(self) -> str:
        return f"DatetimeMS({int(self)})"

    def to_datetime(self, codec_options: CodecOptions | None = None) -> datetime:
        """This instant as a datetime per ``codec_options`` (tz_aware, tzinfo); raises
        :class:`OverflowError` if it is outside datetime's range (unless clamping)."""
        opts = codec_options or DEFAULT_CODEC_OPTIONS
        ms = int(self)
        if opts.datetime_conversion == DatetimeConversion.DATETIME_CLAMP:
            ms = max(_DATETIME_MIN_MS, min(_DATETIME_MAX_MS, ms))
        aware = _EPOCH_AWARE + timedelta(milliseconds=ms)
        if not opts.tz_aware:
            return aware.replace(tzinfo=None)
        if opts.tzinfo is not None:
            return aware.astimezone(opts.tzinfo)
        return aware


_DATETIME_MIN_MS: Final = datetime_to_ms(datetime.min.replace(tzinfo=UTC))
_DATETIME_MAX_MS: Final = datetime_to_ms(datetime.max.replace(tzinfo=UTC))
