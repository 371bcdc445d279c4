"""PyMongo's bson classes as the decoder's value classes, and codec options for them.

:func:`pymongo_codec_options` is what the PyMongo-compatible client decodes with: values
come back as instances of PyMongo's classes (``bson.ObjectId``, ``bson.Int64``,
``bson.Decimal128``, ``bson.Binary`` / ``uuid.UUID`` per uuid_representation,
``bson.DBRef``, ``bson.Regex``, ``bson.Timestamp``, ``bson.Code``, ``bson.MinKey`` /
``bson.MaxKey``, ``bson.DatetimeMS``), symbols as str, undefined as None and DBPointers as
DBRefs, exactly as PyMongo's own ``bson.decode`` returns them. PyMongo is imported when
these functions are first called, never at import.
"""

from __future__ import annotations

import functools
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions, ValueClasses, as_codec_options

__all__ = ["pymongo_codec_options", "pymongo_value_classes", "to_pymongo_codec_options"]


@functools.cache
def pymongo_value_classes() -> ValueClasses:
    """The value-class table for PyMongo's bson classes (built once)."""
    import bson
    import bson.regex
    from bson.dbref import DBRef
    from bson.decimal128 import Decimal128

    object_id = bson.ObjectId
    for cls, slots in (
        (object_id, ("__id",)),
        (bson.Timestamp, ("__time", "__inc")),
        (Decimal128, ("__high", "__low")),
    ):
        if not set(slots).issubset(getattr(cls, "__slots__", ())):
            raise ImportError(f"PyMongo's {cls.__name__} does not have the slots {slots}")
    if "_Code__scope" not in vars(bson.Code("")):
        raise ImportError("PyMongo's Code keeps its scope elsewhere than _Code__scope")

    def dbpointer(namespace: str, oid: Any) -> Any:
        return DBRef(namespace, oid)

    regex_class = bson.Regex
    letters_to_flags = bson.regex.str_flags_to_int
    new_object = object.__new__

    @functools.lru_cache(maxsize=64)
    def flags_to_int(letters: str) -> int:
        # PyMongo's conversion of the flag letters, as a plain int (what its C decoder
        # gives), remembered per letter string: the constructor's conversion costs more
        # than the rest of a regex's decoding.
        return int(letters_to_flags(letters))

    def regex(pattern: str, flags: str) -> Any:
        value = new_object(regex_class)
        value.pattern = pattern
        value.flags = flags_to_int(flags)
        return value

    return ValueClasses(
        object_id=object_id,
        object_id_slot="_ObjectId__id",
        int64=bson.Int64,
        decimal128=Decimal128,
        binary=bson.Binary,
        timestamp=bson.Timestamp,  # built through its slots, as decimal128 and code
        regex=regex,
        code=bson.Code,
        dbref=DBRef,
        dbpointer=dbpointer,
        symbol=str,
        datetime_ms=bson.DatetimeMS,
        min_key=bson.MinKey(),
        max_key=bson.MaxKey(),
        undefined=None,
        timestamp_slots=("_Timestamp__time", "_Timestamp__inc"),
        decimal128_slots=("_Decimal128__high", "_Decimal128__low"),
        code_slot="_Code__scope",
        raw_codec_options=to_pymongo_codec_options,
    )


def pymongo_codec_options(base: Any = None) -> CodecOptions:
    """``base`` (asyncmongo's or PyMongo's CodecOptions; None for the defaults) decoding
    into PyMongo's classes."""
    options = CodecOptions() if base is None else as_codec_options(base)
    return options.with_options(value_classes=pymongo_value_classes())


def to_pymongo_codec_options(options: CodecOptions) -> Any:
    """PyMongo's ``bson.codec_options.CodecOptions`` equal to ``options`` (for a
    document_class such as PyMongo's RawBSONDocument, which accepts only PyMongo's).
    The type registry gets the same transforms and fallback encoder. Remembered per
    options value (every raw document of a reply asks for the same ones)."""
    try:
        return _to_pymongo_cached(options)
    except TypeError:  # options that do not hash (a codec with an unhashable transform)
        return _to_pymongo(options)


def _to_pymongo(options: CodecOptions) -> Any:
    from bson.codec_options import CodecOptions as PyMongoCodecOptions
    from bson.codec_options import TypeRegistry as PyMongoTypeRegistry

    registry = options.type_registry
    foreign = PyMongoTypeRegistry(fallback_encoder=registry.fallback_encoder)
    foreign._encoder_map.update(registry._encoder_map)
    foreign._decoder_map.update(registry._decoder_map)
    return PyMongoCodecOptions(
        document_class=options.document_class,
        tz_aware=options.tz_aware,
        uuid_representation=int(options.uuid_representation),
        unicode_decode_error_handler=options.unicode_decode_error_handler,
        tzinfo=options.tzinfo,
        type_registry=foreign,
        datetime_conversion=int(options.datetime_conversion),
    )


_to_pymongo_cached = functools.lru_cache(maxsize=64)(_to_pymongo)
