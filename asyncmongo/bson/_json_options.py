"""JSONOptions: which Extended JSON format to write, and how to read values back.

Kept apart from json_util so the encoder and decoder modules can share it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo as _tzinfo
from enum import IntEnum
from typing import Any, Final

from asyncmongo.bson.codec_options import CodecOptions, DatetimeConversion, UuidRepresentation

__all__ = [
    "CANONICAL_JSON_OPTIONS",
    "DEFAULT_JSON_OPTIONS",
    "RELAXED_JSON_OPTIONS",
    "JSONMode",
    "JSONOptions",
]


class JSONMode(IntEnum):
    """The output format of specs/extended-json (values as PyMongo's ``JSONMode``).

    RELAXED writes numbers and recent dates as plain JSON (readable, loses int/long/double
    distinctions); CANONICAL wraps every typed value (``{"$numberInt": "1"}``) so a round trip
    through JSON keeps every BSON type.
    """

    RELAXED = 1
    CANONICAL = 2


@dataclass(frozen=True, slots=True)
class JSONOptions:
    """Options of :func:`~asyncmongo.bson.json_util.dumps` and ``loads``.

    - ``json_mode``: the output format (parsing always accepts canonical and relaxed input).
    - ``accept_legacy``: also parse the Legacy Extended JSON forms listed in
      specs/extended-json: ``{"$date": <ms number>}``, ``{"$binary": "<base64>", "$type":
      "<hex>"}`` and ``{"$regex": "<pattern>", "$options": "<flags>"}``. Off by default, as
      the spec requires: then ``{"$regex": ...}`` stays a query operator document and
      ``{"$date": 42}`` is an error.
    - the codec options (``document_class``, ``tz_aware``, ``uuid_representation``,
      ``unicode_decode_error_handler``, ``tzinfo``, ``datetime_conversion``): how parsed
      values become Python objects, exactly as when decoding BSON, and how native UUIDs are
      written. ``codec_options`` gives them as a :class:`CodecOptions`.
    """

    json_mode: JSONMode = JSONMode.RELAXED
    accept_legacy: bool = False
    document_class: type[Mapping[Any, Any]] = dict
    tz_aware: bool = False
    uuid_representation: UuidRepresentation = UuidRepresentation.UNSPECIFIED
    unicode_decode_error_handler: str = "strict"
    tzinfo: _tzinfo | None = None
    datetime_conversion: DatetimeConversion = DatetimeConversion.DATETIME
    codec_options: CodecOptions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "json_mode", JSONMode(self.json_mode))
        except ValueError as exc:
            raise TypeError(str(exc)) from None
        if not isinstance(self.accept_legacy, bool):
            raise TypeError(
                f"accept_legacy must be a bool, not {type(self.accept_legacy).__name__}"
            )
        # Building the CodecOptions validates the codec fields exactly as CodecOptions does.
        codec_options = CodecOptions(
            document_class=self.document_class,
            tz_aware=self.tz_aware,
            uuid_representation=self.uuid_representation,
            unicode_decode_error_handler=self.unicode_decode_error_handler,
            tzinfo=self.tzinfo,
            datetime_conversion=self.datetime_conversion,
        )
        object.__setattr__(self, "uuid_representation", codec_options.uuid_representation)
        object.__setattr__(self, "datetime_conversion", codec_options.datetime_conversion)
        object.__setattr__(self, "codec_options", codec_options)

    @classmethod
    def from_codec_options(
        cls,
        codec_options: CodecOptions,
        json_mode: JSONMode = JSONMode.RELAXED,
        accept_legacy: bool = False,
    ) -> JSONOptions:
        """JSONOptions that read and write values as ``codec_options`` decodes them."""
        return cls(
            json_mode=json_mode,
            accept_legacy=accept_legacy,
            document_class=codec_options.document_class,
            tz_aware=codec_options.tz_aware,
            uuid_representation=codec_options.uuid_representation,
            unicode_decode_error_handler=codec_options.unicode_decode_error_handler,
            tzinfo=codec_options.tzinfo,
            datetime_conversion=codec_options.datetime_conversion,
        )

    def with_options(self, **kwargs: Any) -> JSONOptions:
        """A copy with the given fields changed (validated like the constructor)."""
        fields: dict[str, Any] = {
            "json_mode": self.json_mode,
            "accept_legacy": self.accept_legacy,
            "document_class": self.document_class,
            "tz_aware": self.tz_aware,
            "uuid_representation": self.uuid_representation,
            "unicode_decode_error_handler": self.unicode_decode_error_handler,
            "tzinfo": self.tzinfo,
            "datetime_conversion": self.datetime_conversion,
        }
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"unknown JSONOptions field(s): {', '.join(sorted(unknown))}")
        fields.update(kwargs)
        return JSONOptions(**fields)


RELAXED_JSON_OPTIONS: Final = JSONOptions(json_mode=JSONMode.RELAXED)
"""Relaxed Extended JSON output, the spec's recommended default."""

CANONICAL_JSON_OPTIONS: Final = JSONOptions(json_mode=JSONMode.CANONICAL)
"""Canonical Extended JSON output: every BSON type survives a round trip."""

DEFAULT_JSON_OPTIONS: Final = RELAXED_JSON_OPTIONS
