"""Python values to BSON bytes: the encoder behind :func:`asyncmongo.bson.encode`.

One bytearray per call; each document reserves its length, appends its elements and patches
the length in place. The element loop inlines the common types (dispatch on ``type(value)``,
most frequent first); the others go through an exact-type table, then a fallback that
recognises PyMongo's bson values by their ``_type_marker`` and subclasses by isinstance, and
caches what it found in the table. Encoded keys (with their NUL) are cached, array indexes
precomputed.
"""

from __future__ import annotations

import functools
import re
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from asyncmongo.bson._decode import MAX_NESTING_DEPTH
from asyncmongo.bson.binary import OLD_BINARY_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import InvalidDocument, InvalidStringData
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.types import (
    Code,
    DatetimeMS,
    DBPointer,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
    datetime_to_ms,
    flags_from_re,
)

__all__ = ["encode_document"]

_INT32: Final = struct.Struct("<i")
_PACK_I32: Final = _INT32.pack
_PACK_INTO_I32: Final = _INT32.pack_into
_PACK_I64: Final = struct.Struct("<q").pack
_PACK_F64: Final = struct.Struct("<d").pack
_PACK_U32_PAIR: Final = struct.Struct("<II").pack

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_EPOCH_NAIVE: Final = datetime(1970, 1, 1)

# -- keys --

# Array keys "0".."N-1" stay in the key cache for good.
_INDEX_COUNT: Final = 1024
_INDEX_KEYS: Final = tuple(str(i) for i in range(_INDEX_COUNT))
_BASE_KEY_CACHE: Final = {k: k.encode() + b"\x00" for k in _INDEX_KEYS}
_KEY_CACHE_LIMIT: Final = 8192
_key_cache: dict[str, bytes] = dict(_BASE_KEY_CACHE)


def _encode_key(key: Any) -> bytes:
    """The cstring of a key (validated: a str without NUL), remembered in the key cache."""
    if not isinstance(key, str):
        raise InvalidDocument(f"documents must have only string keys, key was {key!r}")
    try:
        raw = key.encode()
    except UnicodeEncodeError:
        raise InvalidStringData(f"key {key!r} is not valid UTF-8 (lone surrogate)") from None
    if b"\x00" in raw:
        raise InvalidDocument(f"key {key!r} must not contain a NUL character")
    raw += b"\x00"
    if len(_key_cache) >= _KEY_CACHE_LIMIT:
        _key_cache.clear()
        _key_cache.update(_BASE_KEY_CACHE)
    _key_cache[key] = raw
    return raw


# Per type, the element prefix (type byte + key + NUL) of each key seen: one append per element
# instead of two. Same validation as _encode_key, bounded like _key_cache.
_STR_KEYS: dict[str, bytes] = {}
_INT32_KEYS: dict[str, bytes] = {}
_INT64_KEYS: dict[str, bytes] = {}
_DOUBLE_KEYS: dict[str, bytes] = {}
_BOOL_KEYS: dict[str, bytes] = {}
_DOC_KEYS: dict[str, bytes] = {}
_ARRAY_KEYS: dict[str, bytes] = {}
_NULL_KEYS: dict[str, bytes] = {}
_OID_KEYS: dict[str, bytes] = {}
_DATE_KEYS: dict[str, bytes] = {}
_BINARY_KEYS: dict[str, bytes] = {}
_CODE_KEYS: dict[str, bytes] = {}
_CODE_W_SCOPE_KEYS: dict[str, bytes] = {}
_SYMBOL_KEYS: dict[str, bytes] = {}
_REGEX_KEYS: dict[str, bytes] = {}
_TIMESTAMP_KEYS: dict[str, bytes] = {}
_DECIMAL_KEYS: dict[str, bytes] = {}
_DBPOINTER_KEYS: dict[str, bytes] = {}
_MIN_KEY_KEYS: dict[str, bytes] = {}
_MAX_KEY_KEYS: dict[str, bytes] = {}
_UNDEFINED_KEYS: dict[str, bytes] = {}


def _typed_key(cache: dict[str, bytes], type_byte: bytes, key: Any) -> bytes:
    prefix = type_byte + (_key_cache.get(key) or _encode_key(key))
    if len(cache) >= _KEY_CACHE_LIMIT:
        cache.clear()
    cache[key] = prefix
    return prefix


def _array_items(value: Iterable[Any]) -> Iterable[tuple[str, Any]]:
    seq = value if isinstance(value, list | tuple) else list(value)
    if len(seq) <= _INDEX_COUNT:
        return zip(_INDEX_KEYS, seq, strict=False)
    return ((str(i), v) for i, v in enumerate(seq))


# -- the element loop --


def encode_document(
    buf: bytearray, items: Iterable[tuple[Any, Any]], opts: CodecOptions, depth: int
) -> None:
    """Append one BSON document (length, elements, NUL) made of ``items`` to ``buf``."""
    if depth > MAX_NESTING_DEPTH:
        raise InvalidDocument(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    str_keys = _STR_KEYS.get
    int32_keys = _INT32_KEYS.get
    pack_i32 = _PACK_I32
    start = len(buf)
    buf += b"\x00\x00\x00\x00"
    for key, value in items:
        t = type(value)
        if t is str:
            raw = value.encode()
            buf += str_keys(key) or _typed_key(_STR_KEYS, b"\x02", key)
            buf += pack_i32(len(raw) + 1)
            buf += raw
            buf += b"\x00"
        elif t is int:
            try:
                packed = pack_i32(value)
            except struct.error:  # beyond int32: int64, else the fallback encoder or an error
                if _INT64_MIN <= value <= _INT64_MAX or not opts.type_registry._fallback_encoder:
                    buf += _INT64_KEYS.get(key) or _typed_key(_INT64_KEYS, b"\x12", key)
                    buf += _pack_int64(key, value)
                else:
                    _enc_big_int(buf, key, value, opts, depth, value)
            else:
                buf += int32_keys(key) or _typed_key(_INT32_KEYS, b"\x10", key)
                buf += packed
        elif t is float:
            buf += _DOUBLE_KEYS.get(key) or _typed_key(_DOUBLE_KEYS, b"\x01", key)
            buf += _PACK_F64(value)
        elif t is bool:
            buf += _BOOL_KEYS.get(key) or _typed_key(_BOOL_KEYS, b"\x08", key)
            buf += b"\x01" if value else b"\x00"
        elif t is Int64:
            try:
                packed = _PACK_I64(value)
            except struct.error:
                _enc_big_int(buf, key, value, opts, depth, value)
                continue
            buf += _INT64_KEYS.get(key) or _typed_key(_INT64_KEYS, b"\x12", key)
            buf += packed
        elif t is dict:
            buf += _DOC_KEYS.get(key) or _typed_key(_DOC_KEYS, b"\x03", key)
            encode_document(buf, value.items(), opts, depth + 1)
        elif t is list:
            buf += _ARRAY_KEYS.get(key) or _typed_key(_ARRAY_KEYS, b"\x04", key)
            if len(value) <= _INDEX_COUNT:
                encode_document(buf, zip(_INDEX_KEYS, value, strict=False), opts, depth + 1)
            else:
                encode_document(buf, _array_items(value), opts, depth + 1)
        elif value is None:
            buf += _NULL_KEYS.get(key) or _typed_key(_NULL_KEYS, b"\x0a", key)
        elif t is ObjectId:
            buf += _OID_KEYS.get(key) or _typed_key(_OID_KEYS, b"\x07", key)
            buf += value._binary
        elif t is datetime:
            buf += _DATE_KEYS.get(key) or _typed_key(_DATE_KEYS, b"\x09", key)
            if value.tzinfo is None:
                delta = value - _EPOCH_NAIVE
                ms = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
                buf += _PACK_I64(ms)
            else:
                buf += _PACK_I64(datetime_to_ms(value))
        elif t is bytes:
            buf += _BINARY_KEYS.get(key) or _typed_key(_BINARY_KEYS, b"\x05", key)
            buf += pack_i32(len(value))
            buf += b"\x00"
            buf += value
        else:
            encoder = _ENCODERS.get(t) or _fallback_encoder(key, value, opts)
            encoder(buf, key, value, opts, depth)
    buf += b"\x00"
    _PACK_INTO_I32(buf, start, len(buf) - start)


def _pack_int64(key: str, value: int) -> bytes:
    """``value`` as int64 bytes, or InvalidDocument naming the key if it does not fit."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidDocument(f"key {key!r}: int {value} does not fit in a BSON int64")
    return _PACK_I64(value)


# -- the other types: (buf, key, value, opts, depth) -> None --


def _prefix(cache: dict[str, bytes], type_byte: bytes, key: Any) -> bytes:
    return cache.get(key) or _typed_key(cache, type_byte, key)


def _string_body(value: str) -> bytes:
    raw = value.encode()
    return _PACK_I32(len(raw) + 1) + raw + b"\x00"


def _cstring(value: str, what: str) -> bytes:
    raw = value.encode()
    if b"\x00" in raw:
        raise InvalidDocument(f"{what} {value!r} must not contain a NUL character")
    return raw + b"\x00"


def _enc_datetime(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DATE_KEYS.get(key) or _typed_key(_DATE_KEYS, b"\x09", key)
    buf += _PACK_I64(datetime_to_ms(value))


def _enc_datetime_ms(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DATE_KEYS.get(key) or _typed_key(_DATE_KEYS, b"\x09", key)
    buf += _PACK_I64(int(value))


def _enc_int64(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    number = int(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        _enc_big_int(buf, key, value, opts, depth, number)
        return
    buf += _INT64_KEYS.get(key) or _typed_key(_INT64_KEYS, b"\x12", key)
    buf += _PACK_I64(number)


def _enc_int(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    number = int(value)
    if _INT32_MIN <= number <= _INT32_MAX:
        buf += _INT32_KEYS.get(key) or _typed_key(_INT32_KEYS, b"\x10", key)
        buf += _PACK_I32(number)
    else:
        _enc_int64(buf, key, value, opts, depth)


def _enc_big_int(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int, shown: Any
) -> None:
    """An int beyond int64: the fallback encoder's value (as PyMongo), else InvalidDocument
    (showing ``shown``)."""
    fallback = opts.type_registry._fallback_encoder
    if fallback is None:
        raise InvalidDocument(f"key {key!r}: int {shown} does not fit in a BSON int64")
    _encode_element(buf, key, fallback(value), opts, depth, False, True)


def _enc_float(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DOUBLE_KEYS.get(key) or _typed_key(_DOUBLE_KEYS, b"\x01", key)
    buf += _PACK_F64(float(value))


def _enc_bool(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _BOOL_KEYS.get(key) or _typed_key(_BOOL_KEYS, b"\x08", key)
    buf += b"\x01" if value else b"\x00"


def _enc_str(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _STR_KEYS.get(key) or _typed_key(_STR_KEYS, b"\x02", key)
    # The string's own characters, as PyMongo writes them: a str subclass's __str__ (a
    # str-mixin Enum's "Color.RED") is not what it holds.
    buf += _string_body(value)


def _enc_bytes(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _BINARY_KEYS.get(key) or _typed_key(_BINARY_KEYS, b"\x05", key)
    buf += _PACK_I32(len(value))
    buf += b"\x00"
    buf += value


def _enc_binary(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    subtype = value._subtype
    buf += _BINARY_KEYS.get(key) or _typed_key(_BINARY_KEYS, b"\x05", key)
    if subtype == OLD_BINARY_SUBTYPE:
        # The old binary subtype repeats the length inside the payload.
        buf += _PACK_I32(len(value) + 4)
        buf += b"\x02"
        buf += _PACK_I32(len(value))
    else:
        buf += _PACK_I32(len(value))
        buf += _SUBTYPE_BYTES[subtype]
    buf += value


_SUBTYPE_BYTES: Final = tuple(bytes((i,)) for i in range(256))


def _enc_uuid(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    if opts.uuid_representation == UuidRepresentation.UNSPECIFIED:
        raise InvalidDocument(
            f"key {key!r}: cannot encode a native uuid.UUID with "
            "UuidRepresentation.UNSPECIFIED; set CodecOptions(uuid_representation=...) "
            "(STANDARD for new applications) or pass Binary.from_uuid(value)"
        )
    _enc_binary(buf, key, Binary.from_uuid(value, opts.uuid_representation), opts, depth)


def _enc_code(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    raw = value.encode()
    scope = value.scope
    if scope is None:
        buf += _CODE_KEYS.get(key) or _typed_key(_CODE_KEYS, b"\x0d", key)
        buf += _PACK_I32(len(raw) + 1)
        buf += raw
        buf += b"\x00"
        return
    buf += _CODE_W_SCOPE_KEYS.get(key) or _typed_key(_CODE_W_SCOPE_KEYS, b"\x0f", key)
    start = len(buf)
    buf += b"\x00\x00\x00\x00"
    buf += _PACK_I32(len(raw) + 1)
    buf += raw
    buf += b"\x00"
    encode_document(buf, scope.items(), opts, depth + 1)
    _PACK_INTO_I32(buf, start, len(buf) - start)


def _enc_symbol(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _prefix(_SYMBOL_KEYS, b"\x0e", key)
    buf += _string_body(value)


def _enc_regex(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    pattern = _cstring(value.pattern, "regex pattern")
    flags = _cstring("".join(sorted(value.flags)), "regex flags")
    buf += _REGEX_KEYS.get(key) or _typed_key(_REGEX_KEYS, b"\x0b", key)
    buf += pattern
    buf += flags


def _enc_pattern(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    if not isinstance(value.pattern, str):
        raise InvalidDocument(f"key {key!r}: only str regex patterns can be encoded")
    _enc_regex(buf, key, Regex(value.pattern, flags_from_re(value.flags)), opts, depth)


def _enc_timestamp(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _TIMESTAMP_KEYS.get(key) or _typed_key(_TIMESTAMP_KEYS, b"\x11", key)
    buf += _PACK_U32_PAIR(value.inc, value.time)


def _enc_decimal128(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _prefix(_DECIMAL_KEYS, b"\x13", key)
    buf += value.bid


def _enc_object_id(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _OID_KEYS.get(key) or _typed_key(_OID_KEYS, b"\x07", key)
    buf += value.binary


def _enc_dbpointer(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _prefix(_DBPOINTER_KEYS, b"\x0c", key)
    buf += _string_body(value.namespace)
    buf += ObjectId(value.id).binary


def _enc_dbref(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DOC_KEYS.get(key) or _typed_key(_DOC_KEYS, b"\x03", key)
    encode_document(buf, value.as_doc().items(), opts, depth + 1)


def _enc_raw(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DOC_KEYS.get(key) or _typed_key(_DOC_KEYS, b"\x03", key)
    buf += value.raw


def _enc_document(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _DOC_KEYS.get(key) or _typed_key(_DOC_KEYS, b"\x03", key)
    encode_document(buf, value.items(), opts, depth + 1)


def _enc_array(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _ARRAY_KEYS.get(key) or _typed_key(_ARRAY_KEYS, b"\x04", key)
    encode_document(buf, _array_items(value), opts, depth + 1)


def _enc_min_key(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _MIN_KEY_KEYS.get(key) or _typed_key(_MIN_KEY_KEYS, b"\xff", key)


def _enc_max_key(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _MAX_KEY_KEYS.get(key) or _typed_key(_MAX_KEY_KEYS, b"\x7f", key)


def _enc_undefined(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _prefix(_UNDEFINED_KEYS, b"\x06", key)


# -- PyMongo's bson values, known by their class attribute ``_type_marker`` --


def _marked_bytes(key: Any, value: Any, field: str, size: int) -> bytes:
    """``value.<field>``, which must be ``size`` bytes, or InvalidDocument naming the key."""
    raw = getattr(value, field, None)
    if type(raw) is not bytes or len(raw) != size:
        raise InvalidDocument(
            f"key {key!r}: {type(value).__name__}.{field} must be {size} bytes, not {raw!r}"
        )
    return raw


def _enc_marked_object_id(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    raw = _marked_bytes(key, value, "binary", 12)
    buf += _OID_KEYS.get(key) or _typed_key(_OID_KEYS, b"\x07", key)
    buf += raw


def _enc_marked_decimal128(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    raw = _marked_bytes(key, value, "bid", 16)
    buf += _prefix(_DECIMAL_KEYS, b"\x13", key)
    buf += raw


def _enc_marked_binary(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    subtype = getattr(value, "subtype", None)
    if not isinstance(value, bytes) or type(subtype) is not int or not 0 <= subtype <= 255:
        raise InvalidDocument(
            f"key {key!r}: cannot encode {value!r} as BSON binary "
            "(a bytes subclass with an int subtype in 0..255 is needed)"
        )
    buf += _BINARY_KEYS.get(key) or _typed_key(_BINARY_KEYS, b"\x05", key)
    if subtype == OLD_BINARY_SUBTYPE:  # the length repeated inside, as in _enc_binary
        buf += _PACK_I32(len(value) + 4)
        buf += b"\x02"
        buf += _PACK_I32(len(value))
    else:
        buf += _PACK_I32(len(value))
        buf += _SUBTYPE_BYTES[subtype]
    buf += value


def _enc_marked_regex(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    pattern, flags = getattr(value, "pattern", None), getattr(value, "flags", None)
    if isinstance(pattern, bytes):
        try:
            pattern = pattern.decode()
        except UnicodeDecodeError:
            raise InvalidStringData(
                f"key {key!r}: regex pattern {pattern!r} is not UTF-8"
            ) from None
    if not isinstance(pattern, str) or not isinstance(flags, int):
        raise InvalidDocument(
            f"key {key!r}: cannot encode {value!r} as a BSON regex "
            "(a str or bytes pattern and int flags are needed)"
        )
    raw_pattern = _cstring(pattern, "regex pattern")
    buf += _REGEX_KEYS.get(key) or _typed_key(_REGEX_KEYS, b"\x0b", key)
    buf += raw_pattern
    buf += flags_from_re(flags, unicode=True).encode()
    buf += b"\x00"


def _enc_marked_datetime_ms(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    ms = int(value)
    if not _INT64_MIN <= ms <= _INT64_MAX:
        raise InvalidDocument(f"key {key!r}: int {ms} does not fit in a BSON int64")
    packed = _PACK_I64(ms)
    buf += _DATE_KEYS.get(key) or _typed_key(_DATE_KEYS, b"\x09", key)
    buf += packed


_Encoder = Callable[[bytearray, Any, Any, CodecOptions, int], None]

# PyMongo's bson types carry a class attribute ``_type_marker`` (its value for each type, and
# the BSON type it is written as). A marker wins over the base classes (bson.Int64 is an int,
# bson.Binary bytes, bson.Code a str, bson.RawBSONDocument a Mapping).
_MARKED_ENCODERS: Final[dict[int, _Encoder]] = {
    5: _enc_marked_binary,  # binary, with its .subtype
    7: _enc_marked_object_id,  # ObjectId, .binary
    9: _enc_marked_datetime_ms,  # datetime, int(value) milliseconds
    11: _enc_marked_regex,  # regex, .pattern and int .flags
    13: _enc_code,  # JavaScript code (with scope when .scope is not None)
    17: _enc_timestamp,  # timestamp, .inc and .time
    18: _enc_int64,  # int64, whatever the value
    19: _enc_marked_decimal128,  # decimal128, .bid
    100: _enc_dbref,  # a document made by .as_doc()
    101: _enc_raw,  # RawBSONDocument: a document, .raw verbatim
    127: _enc_max_key,
    255: _enc_min_key,
}

# Exact-type dispatch for what the element loop does not inline; subclasses resolved by
# _fallback_encoder are added (bounded), so each type pays the isinstance search once.
_ENCODER_CACHE_LIMIT: Final = 512
_ENCODERS: Final[dict[type, _Encoder]] = {
    bytes: _enc_bytes,
    Binary: _enc_binary,
    uuid.UUID: _enc_uuid,
    Code: _enc_code,
    Regex: _enc_regex,
    re.Pattern: _enc_pattern,
    Timestamp: _enc_timestamp,
    Decimal128: _enc_decimal128,
    DatetimeMS: _enc_datetime_ms,
    MinKey: _enc_min_key,
    MaxKey: _enc_max_key,
    Undefined: _enc_undefined,
    Symbol: _enc_symbol,
    DBPointer: _enc_dbpointer,
    DBRef: _enc_dbref,
    RawBSONDocument: _enc_raw,
    tuple: _enc_array,
}

# Subclasses of these encode like them; order matters (the BSON types before their bases).
_FALLBACKS: Final[tuple[tuple[type, _Encoder], ...]] = (
    (RawBSONDocument, _enc_raw),
    (Mapping, _enc_document),
    (Binary, _enc_binary),
    (bytes, _enc_bytes),
    (Code, _enc_code),
    (Symbol, _enc_symbol),
    (str, _enc_str),
    (bool, _enc_bool),
    (Int64, _enc_int64),
    (DatetimeMS, _enc_datetime_ms),
    (int, _enc_int),
    (float, _enc_float),
    (list, _enc_array),
    (tuple, _enc_array),
    (datetime, _enc_datetime),
    (uuid.UUID, _enc_uuid),
    (DBRef, _enc_dbref),
    (Regex, _enc_regex),
    (Timestamp, _enc_timestamp),
    (Decimal128, _enc_decimal128),
    (ObjectId, _enc_object_id),
)


def _fallback_encoder(key: Any, value: Any, opts: CodecOptions) -> _Encoder:
    """The encoder for a type that is not in the exact-type table (a type with a
    ``_type_marker``, a custom type of the type registry, a subclass, a value for the
    registry's fallback encoder), or InvalidDocument naming the key."""
    return _lookup_encoder(key, value, opts, False, False)


def _lookup_encoder(
    key: Any, value: Any, opts: CodecOptions, in_custom: bool, in_fallback: bool
) -> _Encoder:
    """PyMongo's order: the _type_marker; the registry's encoder of the exact type (not
    for a value a custom encoder returned); the built-in types by isinstance; the
    registry's fallback encoder (not for a value it returned). Only built-in answers are
    cached, as the registry belongs to the call."""
    marker = getattr(value, "_type_marker", None)
    encoder = _MARKED_ENCODERS.get(marker) if type(marker) is int else None
    registry = opts.type_registry
    if encoder is None and not in_custom and registry._encoder_map:
        transform = registry._encoder_map.get(type(value))
        if transform is not None:
            return functools.partial(_enc_transformed, transform, True, False)
    if encoder is None:
        encoder = next((enc for base, enc in _FALLBACKS if isinstance(value, base)), None)
    if encoder is not None:
        if len(_ENCODERS) < _ENCODER_CACHE_LIMIT:
            _ENCODERS[type(value)] = encoder  # next time: one dict lookup
        return encoder
    fallback = registry._fallback_encoder
    if not in_fallback and fallback is not None:
        return functools.partial(_enc_transformed, fallback, False, True)
    raise InvalidDocument(
        f"key {key!r}: cannot encode object {value!r} of type {type(value).__name__}"
    )


def _enc_transformed(
    transform: Callable[[Any], Any],
    in_custom: bool,
    in_fallback: bool,
    buf: bytearray,
    key: Any,
    value: Any,
    opts: CodecOptions,
    depth: int,
) -> None:
    """The element for ``transform(value)`` (a TypeEncoder's or the fallback encoder)."""
    _encode_element(buf, key, transform(value), opts, depth, in_custom, in_fallback)


def _enc_none(buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += _NULL_KEYS.get(key) or _typed_key(_NULL_KEYS, b"\x0a", key)


def _enc_datetime_naive_or_aware(
    buf: bytearray, key: Any, value: Any, opts: CodecOptions, depth: int
) -> None:
    buf += _DATE_KEYS.get(key) or _typed_key(_DATE_KEYS, b"\x09", key)
    if value.tzinfo is None:
        delta = value - _EPOCH_NAIVE
        buf += _PACK_I64((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)
    else:
        buf += _PACK_I64(datetime_to_ms(value))


# The types encode_document inlines, for elements encoded one at a time.
_INLINED: Final[dict[type, _Encoder]] = {
    str: _enc_str,
    int: _enc_int,
    float: _enc_float,
    bool: _enc_bool,
    Int64: _enc_int64,
    dict: _enc_document,
    list: _enc_array,
    type(None): _enc_none,
    ObjectId: _enc_object_id,
    datetime: _enc_datetime_naive_or_aware,
    bytes: _enc_bytes,
}


def _encode_element(
    buf: bytearray,
    key: Any,
    value: Any,
    opts: CodecOptions,
    depth: int,
    in_custom: bool,
    in_fallback: bool,
) -> None:
    """One element, as the loop of encode_document writes it, for a transformed value."""
    t = type(value)
    encoder = _INLINED.get(t) or _ENCODERS.get(t)
    if encoder is None:
        encoder = _lookup_encoder(key, value, opts, in_custom, in_fallback)
    encoder(buf, key, value, opts, depth)
