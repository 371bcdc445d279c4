"""CodecOptions: how BSON decodes to Python (and how UUIDs encode).

One frozen value passed down to every encode/decode call; ``with_options`` derives a
changed copy. ``DEFAULT_CODEC_OPTIONS`` is what a plain ``decode(data)`` uses. The enums of
its fields (``UuidRepresentation``, ``DatetimeConversion``) live here with it.
"""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from datetime import tzinfo as _tzinfo
from enum import IntEnum
from types import GenericAlias
from typing import Any, Final, Generic, Protocol, TypeGuard

from asyncmongo.bson.typings import _CodecDocumentType

__all__ = ["DEFAULT_CODEC_OPTIONS", "CodecOptions", "DatetimeConversion", "UuidRepresentation"]


class UuidRepresentation(IntEnum):
    """How a native :class:`uuid.UUID` maps to BSON binary (specs/bson-binary-uuid).

    Values match PyMongo's ``bson.binary.UuidRepresentation``.
    """

    UNSPECIFIED = 0
    PYTHON_LEGACY = 3
    STANDARD = 4
    JAVA_LEGACY = 5
    CSHARP_LEGACY = 6


class DatetimeConversion(IntEnum):
    """How a BSON UTC datetime decodes (values as PyMongo's ``DatetimeConversion``).

    DATETIME: a :class:`datetime` (out-of-range values raise InvalidBSON); DATETIME_CLAMP:
    clamp to datetime.min/max; DATETIME_MS: always :class:`DatetimeMS`; DATETIME_AUTO: a
    datetime when it fits, else :class:`DatetimeMS`.
    """

    DATETIME = 1
    DATETIME_CLAMP = 2
    DATETIME_MS = 3
    DATETIME_AUTO = 4


#: dict, as the default of a field typed by the class's type variable.
_DICT: Any = dict


@dataclass(frozen=True, slots=True)
class CodecOptions(Generic[_CodecDocumentType]):
    """Options of the BSON codec.

    - ``document_class``: the mapping type decoded documents become (dict, an OrderedDict, a
      MutableMapping subclass, or RawBSONDocument for the top level kept raw).
    - ``tz_aware``: decode datetimes as aware (UTC, or ``tzinfo``) instead of naive UTC.
    - ``uuid_representation``: how native UUIDs encode and binary subtypes 3/4 decode.
    - ``unicode_decode_error_handler``: the ``bytes.decode`` error handler for strings.
    - ``tzinfo``: the zone aware datetimes are converted to (needs ``tz_aware``).
    - ``datetime_conversion``: datetime, clamped datetime, DatetimeMS, or auto.
    """

    document_class: type[_CodecDocumentType] = _DICT
    tz_aware: bool = False
    uuid_representation: UuidRepresentation = UuidRepresentation.UNSPECIFIED
    unicode_decode_error_handler: str = "strict"
    tzinfo: _tzinfo | None = None
    datetime_conversion: DatetimeConversion = DatetimeConversion.DATETIME

    def __post_init__(self) -> None:
        doc_class = self.document_class
        if not (isinstance(doc_class, type) and _is_document_class(doc_class)):
            raise TypeError(
                "document_class must be dict, a MutableMapping subclass or RawBSONDocument, "
                f"not {doc_class!r}"
            )
        if not isinstance(self.tz_aware, bool):
            raise TypeError(f"tz_aware must be a bool, not {type(self.tz_aware).__name__}")
        try:
            object.__setattr__(
                self, "uuid_representation", UuidRepresentation(self.uuid_representation)
            )
            object.__setattr__(
                self, "datetime_conversion", DatetimeConversion(self.datetime_conversion)
            )
        except ValueError as exc:
            raise TypeError(str(exc)) from None
        handler = self.unicode_decode_error_handler
        if not isinstance(handler, str):
            raise TypeError(f"unicode_decode_error_handler must be a str, not {handler!r}")
        try:
            codecs.lookup_error(handler)
        except LookupError:
            raise TypeError(f"unknown unicode_decode_error_handler {handler!r}") from None
        if self.tzinfo is not None:
            if not isinstance(self.tzinfo, _tzinfo):
                raise TypeError(f"tzinfo must be a datetime.tzinfo, not {self.tzinfo!r}")
            if not self.tz_aware:
                raise TypeError("tzinfo needs tz_aware=True")

    # CodecOptions[Movie](...) at run time: types.GenericAlias, which tolerates the frozen
    # slotted instance refusing ``__orig_class__`` (typing's alias does not, before 3.12).
    def __class_getitem__(cls, item: Any) -> GenericAlias:
        return GenericAlias(cls, item)

    def with_options(self, **kwargs: Any) -> CodecOptions[Any]:
        """A copy with the given fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **kwargs)


class RawDocumentClass(Protocol):
    """A document_class built from a whole document's bytes: RawBSONDocument."""

    def __call__(self, bson_bytes: bytes, codec_options: CodecOptions, /) -> Mapping[str, Any]:
        """The document over ``bson_bytes``, decoding its fields per ``codec_options``."""
        ...


def is_raw_document_class(doc_class: type) -> TypeGuard[RawDocumentClass]:
    """Whether ``doc_class`` is RawBSONDocument (or a subclass), known by its marker."""
    return getattr(doc_class, "_type_marker", None) == _RAW_BSON_DOCUMENT_MARKER


def _is_document_class(doc_class: type) -> bool:
    if issubclass(doc_class, MutableMapping) or doc_class is dict:
        return True
    return is_raw_document_class(doc_class)


# RawBSONDocument (raw.py) sets this marker; checked by value because raw.py imports this module.
_RAW_BSON_DOCUMENT_MARKER: Final = 101

DEFAULT_CODEC_OPTIONS: Final = CodecOptions()
