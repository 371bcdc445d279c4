"""CodecOptions: how BSON decodes to Python (and how UUIDs encode).

One frozen value passed down to every encode/decode call; ``with_options`` derives a
changed copy. ``DEFAULT_CODEC_OPTIONS`` is what a plain ``decode(data)`` uses. The enums of
its fields (``UuidRepresentation``, ``DatetimeConversion``) live here with it.
"""

from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from datetime import tzinfo as _tzinfo
from enum import IntEnum
from types import GenericAlias
from typing import Any, Final, Generic, Protocol, TypeGuard

from asyncmongo.bson.type_codecs import EMPTY_TYPE_REGISTRY, TypeRegistry, as_type_registry
from asyncmongo.bson.typings import _CodecDocumentType

__all__ = [
    "DEFAULT_CODEC_OPTIONS",
    "CodecOptions",
    "DatetimeConversion",
    "UuidRepresentation",
    "ValueClasses",
    "as_codec_options",
]


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
class ValueClasses:
    """The classes the decoder builds for BSON values in place of asyncmongo's own.

    A table of constructors, one per BSON type whose Python class differs; both codecs call
    them with what the bytes hold, without re-validating it. ``object_id`` and ``int64``
    are built directly, as they are the common ones: an ObjectId as
    ``object_id.__new__(object_id)`` with the 12 bytes stored in the slot
    ``object_id_slot``; an int64 as ``int.__new__(int64, n)``.
    :func:`asyncmongo.compat._values.pymongo_value_classes` builds the table for PyMongo's
    classes.
    """

    object_id: type
    object_id_slot: str
    int64: type[int]
    decimal128: Callable[..., Any]
    """From the 16 bytes of the BID encoding (or a class, see ``decimal128_slots``)."""
    binary: Callable[[bytes, int], Any]
    """(data, subtype) for subtypes other than 0 (which decodes as bytes) that do not
    decode as a uuid.UUID."""
    timestamp: Callable[..., Any]
    """(time, inc) (or a class, see ``timestamp_slots``)."""
    regex: Callable[[str, str], Any]
    """(pattern, flags as BSON letters)."""
    code: Callable[..., Any]
    """(code, scope document or None) (or a class, see ``code_slot``)."""
    dbref: Callable[[str, Any, Any, dict[str, Any]], Any]
    """(collection, id, database or None, the other fields)."""
    dbpointer: Callable[[str, Any], Any]
    """(namespace, the ObjectId built by ``object_id``)."""
    symbol: Callable[[str], Any]
    datetime_ms: Callable[[int], Any]
    """Milliseconds since the epoch, where datetime_conversion asks for a DatetimeMS."""
    min_key: Any
    max_key: Any
    undefined: Any
    """The values MinKey, MaxKey and undefined decode to."""
    timestamp_slots: tuple[str, str] | None = None
    """When set, ``timestamp`` is a class built as ``timestamp.__new__(timestamp)`` with
    the time and inc ints stored in these two slots (no constructor call)."""
    decimal128_slots: tuple[str, str] | None = None
    """When set, ``decimal128`` is a class built by ``__new__`` with the high and low 64
    bits (unsigned ints) of the BID encoding stored in these two slots."""
    code_slot: str | None = None
    """When set, ``code`` is a str subclass built by ``str.__new__`` with the scope (or
    None) stored in this slot."""
    raw_codec_options: Callable[[CodecOptions[Any]], Any] | None = None
    """The options object handed to a document_class with RawBSONDocument's marker that is
    not asyncmongo's (PyMongo's RawBSONDocument takes only PyMongo's CodecOptions)."""


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
    - ``type_registry``: custom type codecs and a fallback encoder (PyMongo's is converted).
    - ``value_classes``: the classes BSON values decode to; None for asyncmongo's own.
    """

    document_class: type[_CodecDocumentType] = _DICT
    tz_aware: bool = False
    uuid_representation: UuidRepresentation = UuidRepresentation.UNSPECIFIED
    unicode_decode_error_handler: str = "strict"
    tzinfo: _tzinfo | None = None
    datetime_conversion: DatetimeConversion = DatetimeConversion.DATETIME
    type_registry: TypeRegistry = EMPTY_TYPE_REGISTRY
    value_classes: ValueClasses | None = None
    _decoders: dict[Any, Callable[[Any], Any]] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )
    """The type registry's decoders, None when it has none (one attribute per document)."""

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
        except UnicodeError:  # the registry looks names up as UTF-8
            raise TypeError(
                f"unknown unicode_decode_error_handler {handler!r}: not valid Unicode text "
                "(a lone surrogate)"
            ) from None
        except (LookupError, ValueError):  # ValueError: a NUL in the name
            raise TypeError(f"unknown unicode_decode_error_handler {handler!r}") from None
        if self.tzinfo is not None:
            if not isinstance(self.tzinfo, _tzinfo):
                raise TypeError(f"tzinfo must be a datetime.tzinfo, not {self.tzinfo!r}")
            if not self.tz_aware:
                raise TypeError("tzinfo needs tz_aware=True")
        registry = as_type_registry(self.type_registry)
        object.__setattr__(self, "type_registry", registry)
        object.__setattr__(self, "_decoders", registry._decoder_map or None)
        classes = self.value_classes
        if classes is not None and not isinstance(classes, ValueClasses):
            raise TypeError(f"value_classes must be ValueClasses or None, not {classes!r}")

    # CodecOptions[Movie](...) at run time: types.GenericAlias, which tolerates the frozen
    # slotted instance refusing ``__orig_class__`` (typing's alias does not, before 3.12).
    def __class_getitem__(cls, item: Any) -> GenericAlias:
        return GenericAlias(cls, item)

    def with_options(self, **kwargs: Any) -> CodecOptions[Any]:
        """A copy with the given fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **kwargs)


def as_codec_options(options: Any) -> CodecOptions:
    """``options`` as asyncmongo's CodecOptions.

    Ours pass through; PyMongo's ``bson.codec_options.CodecOptions`` (a namedtuple, known by
    its fields, not by import) is converted field by field: document_class, tz_aware,
    uuid_representation, unicode_decode_error_handler, tzinfo, datetime_conversion and
    type_registry. The result decodes into asyncmongo's classes (``value_classes`` None);
    the PyMongo-compatible client adds PyMongo's. Raises TypeError for anything else.
    """
    if isinstance(options, CodecOptions):
        return options
    fields = getattr(options, "_fields", None)
    if not isinstance(fields, tuple) or not _PYMONGO_FIELDS.issubset(fields):
        raise TypeError(f"codec_options must be a CodecOptions, not {options!r}")
    conversion = options.datetime_conversion
    return CodecOptions(
        document_class=options.document_class,
        tz_aware=options.tz_aware,
        uuid_representation=UuidRepresentation(options.uuid_representation),
        unicode_decode_error_handler=options.unicode_decode_error_handler or "strict",
        tzinfo=options.tzinfo,
        datetime_conversion=DatetimeConversion(
            DatetimeConversion.DATETIME if conversion is None else conversion
        ),
        type_registry=as_type_registry(options.type_registry),
    )


_PYMONGO_FIELDS: Final = frozenset(
    (
        "document_class",
        "tz_aware",
        "uuid_representation",
        "unicode_decode_error_handler",
        "tzinfo",
        "type_registry",
        "datetime_conversion",
    )
)


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
