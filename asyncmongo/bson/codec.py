"""The BSON codec: Python mappings to BSON bytes and back (bsonspec.org, specs/bson-corpus).

This is a hot path of the whole driver (every command and reply passes through it), so the
code trades a little repetition for speed: the common types are handled inline in the element
loops (dispatch on ``type(value)`` / the type byte, most frequent first), rarer ones go through
dispatch tables, encoded keys are cached, and struct objects are precompiled.

Decoding untrusted bytes raises only :class:`InvalidBSON`: every length is checked against
the bytes that remain, strings must be valid UTF-8 and NUL-terminated, nested documents must
end exactly where their length says, unknown type bytes are rejected, and nesting depth is
bounded by :data:`MAX_NESTING_DEPTH`. Encoding raises :class:`InvalidDocument` (or its
subclass :class:`InvalidStringData`) for values BSON cannot hold.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from asyncmongo.bson.binary import OLD_BINARY_SUBTYPE, OLD_UUID_SUBTYPE, UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import InvalidBSON, InvalidDocument, InvalidStringData
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.types import (
    Code,
    DatetimeConversion,
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

__all__ = ["MAX_NESTING_DEPTH", "decode", "decode_all", "decode_iter", "encode"]

MAX_NESTING_DEPTH: Final = 400
"""Documents and arrays nested deeper than this are refused (InvalidBSON / InvalidDocument).
The server itself refuses user documents deeper than 100 levels (200 for commands)."""

_INT32: Final = struct.Struct("<i")
_INT64: Final = struct.Struct("<q")
_DOUBLE: Final = struct.Struct("<d")
_UINT32_PAIR: Final = struct.Struct("<II")
_PACK_I32: Final = _INT32.pack
_PACK_I64: Final = _INT64.pack
_PACK_F64: Final = _DOUBLE.pack
_PACK_INTO_I32: Final = _INT32.pack_into
_UNPACK_I32: Final = _INT32.unpack_from
_UNPACK_I64: Final = _INT64.unpack_from
_UNPACK_F64: Final = _DOUBLE.unpack_from
_UNPACK_U32_PAIR: Final = _UINT32_PAIR.unpack_from

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1

_EPOCH_NAIVE: Final = datetime(1970, 1, 1)
_EPOCH_AWARE: Final = datetime(1970, 1, 1, tzinfo=UTC)

_RAW_MARKER: Final = RawBSONDocument._type_marker

# ---------------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------------

# Array keys "0".."N-1" and their encoded form stay in the key cache for good.
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


def _key_name(kb: bytes) -> str:
    return kb[:-1].decode("utf-8", "replace")


def _array_items(value: Iterable[Any]) -> Iterable[tuple[str, Any]]:
    seq = value if isinstance(value, list | tuple) else list(value)
    if len(seq) <= _INDEX_COUNT:
        return zip(_INDEX_KEYS, seq, strict=False)
    return ((str(i), v) for i, v in enumerate(seq))


def _encode_elements(
    buf: bytearray, items: Iterable[tuple[Any, Any]], opts: CodecOptions, depth: int
) -> None:
    """Append one BSON document (length, elements, NUL) made of ``items`` to ``buf``."""
    if depth > MAX_NESTING_DEPTH:
        raise InvalidDocument(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    cache_get = _key_cache.get
    pack_i32 = _PACK_I32
    start = len(buf)
    buf += b"\x00\x00\x00\x00"
    for key, value in items:
        kb = cache_get(key)
        if kb is None:
            kb = _encode_key(key)
        t = type(value)
        if t is str:
            raw = value.encode()
            buf += b"\x02"
            buf += kb
            buf += pack_i32(len(raw) + 1)
            buf += raw
            buf += b"\x00"
        elif t is int:
            if _INT32_MIN <= value <= _INT32_MAX:
                buf += b"\x10"
                buf += kb
                buf += pack_i32(value)
            else:
                _encode_int64(buf, kb, value)
        elif t is float:
            buf += b"\x01"
            buf += kb
            buf += _PACK_F64(value)
        elif t is dict:
            buf += b"\x03"
            buf += kb
            _encode_elements(buf, value.items(), opts, depth + 1)
        elif t is list:
            buf += b"\x04"
            buf += kb
            _encode_elements(buf, _array_items(value), opts, depth + 1)
        elif t is bool:
            buf += b"\x08"
            buf += kb
            buf += b"\x01" if value else b"\x00"
        elif value is None:
            buf += b"\x0a"
            buf += kb
        elif t is ObjectId:
            buf += b"\x07"
            buf += kb
            buf += value.binary
        else:
            _encode_other(buf, kb, value, opts, depth)
    buf += b"\x00"
    _PACK_INTO_I32(buf, start, len(buf) - start)


def _encode_int64(buf: bytearray, kb: bytes, value: int) -> None:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidDocument(f"key {_key_name(kb)!r}: int {value} does not fit in a BSON int64")
    buf += b"\x12"
    buf += kb
    buf += _PACK_I64(value)


def _encode_cstring(value: str, what: str) -> bytes:
    raw = value.encode()
    if b"\x00" in raw:
        raise InvalidDocument(f"{what} {value!r} must not contain a NUL character")
    return raw + b"\x00"


def _encode_string_body(value: str) -> bytes:
    raw = value.encode()
    return _PACK_I32(len(raw) + 1) + raw + b"\x00"


def _enc_datetime(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x09"
    buf += kb
    buf += _PACK_I64(datetime_to_ms(value))


def _enc_datetime_ms(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x09"
    buf += kb
    buf += _PACK_I64(int(value))


def _enc_int64(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    _encode_int64(buf, kb, int(value))


def _enc_bytes(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x05"
    buf += kb
    buf += _PACK_I32(len(value))
    buf += b"\x00"
    buf += value


def _enc_binary(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    subtype = value.subtype
    buf += b"\x05"
    buf += kb
    if subtype == OLD_BINARY_SUBTYPE:
        # The old binary subtype repeats the length inside the payload.
        buf += _PACK_I32(len(value) + 4)
        buf += b"\x02"
        buf += _PACK_I32(len(value))
    else:
        buf += _PACK_I32(len(value))
        buf += bytes((subtype,))
    buf += value


def _enc_uuid(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    if opts.uuid_representation == UuidRepresentation.UNSPECIFIED:
        raise InvalidDocument(
            f"key {_key_name(kb)!r}: cannot encode a native uuid.UUID with "
            "UuidRepresentation.UNSPECIFIED; set CodecOptions(uuid_representation=...) "
            "(STANDARD for new applications) or pass Binary.from_uuid(value)"
        )
    _enc_binary(buf, kb, Binary.from_uuid(value, opts.uuid_representation), opts, depth)


def _enc_code(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    if value.scope is None:
        buf += b"\x0d"
        buf += kb
        buf += _encode_string_body(value)
        return
    buf += b"\x0f"
    buf += kb
    start = len(buf)
    buf += b"\x00\x00\x00\x00"
    buf += _encode_string_body(value)
    _encode_elements(buf, value.scope.items(), opts, depth + 1)
    _PACK_INTO_I32(buf, start, len(buf) - start)


def _enc_symbol(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x0e"
    buf += kb
    buf += _encode_string_body(value)


def _enc_regex(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x0b"
    buf += kb
    buf += _encode_cstring(value.pattern, "regex pattern")
    buf += _encode_cstring("".join(sorted(value.flags)), "regex flags")


def _enc_pattern(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    if not isinstance(value.pattern, str):
        raise InvalidDocument(f"key {_key_name(kb)!r}: only str regex patterns can be encoded")
    _enc_regex(buf, kb, Regex(value.pattern, flags_from_re(value.flags)), opts, depth)


def _enc_timestamp(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x11"
    buf += kb
    buf += _UINT32_PAIR.pack(value.inc, value.time)


def _enc_decimal128(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x13"
    buf += kb
    buf += value.bid


def _enc_dbpointer(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x0c"
    buf += kb
    buf += _encode_string_body(value.namespace)
    buf += ObjectId(value.id).binary


def _enc_dbref(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x03"
    buf += kb
    _encode_elements(buf, value.as_doc().items(), opts, depth + 1)


def _enc_raw(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x03"
    buf += kb
    buf += value.raw


def _enc_min_key(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\xff"
    buf += kb


def _enc_max_key(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x7f"
    buf += kb


def _enc_undefined(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x06"
    buf += kb


def _enc_document(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x03"
    buf += kb
    _encode_elements(buf, value.items(), opts, depth + 1)


def _enc_array(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x04"
    buf += kb
    _encode_elements(buf, _array_items(value), opts, depth + 1)


def _enc_str(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x02"
    buf += kb
    buf += _encode_string_body(str(value))


def _enc_int(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    value = int(value)
    if _INT32_MIN <= value <= _INT32_MAX:
        buf += b"\x10"
        buf += kb
        buf += _PACK_I32(value)
    else:
        _encode_int64(buf, kb, value)


def _enc_float(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x01"
    buf += kb
    buf += _PACK_F64(float(value))


_Encoder = Callable[[bytearray, bytes, Any, CodecOptions, int], None]

# Exact-type dispatch for everything the element loop does not inline.
_ENCODERS: Final[dict[type, _Encoder]] = {
    datetime: _enc_datetime,
    DatetimeMS: _enc_datetime_ms,
    Int64: _enc_int64,
    bytes: _enc_bytes,
    Binary: _enc_binary,
    uuid.UUID: _enc_uuid,
    Code: _enc_code,
    Symbol: _enc_symbol,
    Regex: _enc_regex,
    re.Pattern: _enc_pattern,
    Timestamp: _enc_timestamp,
    Decimal128: _enc_decimal128,
    DBPointer: _enc_dbpointer,
    DBRef: _enc_dbref,
    RawBSONDocument: _enc_raw,
    MinKey: _enc_min_key,
    MaxKey: _enc_max_key,
    Undefined: _enc_undefined,
    tuple: _enc_array,
    # The inlined types again, for callers of _encode_other (subclass fallbacks below).
    str: _enc_str,
    int: _enc_int,
    float: _enc_float,
    dict: _enc_document,
    list: _enc_array,
}

# Subclasses of these (in this order: bool before int, the BSON types before their bases)
# encode like them.
_FALLBACKS: Final[tuple[tuple[type, _Encoder], ...]] = (
    (RawBSONDocument, _enc_raw),
    (Mapping, _enc_document),
    (Binary, _enc_binary),
    (bytes, _enc_bytes),
    (Code, _enc_code),
    (Symbol, _enc_symbol),
    (str, _enc_str),
    (Int64, _enc_int64),
    (DatetimeMS, _enc_datetime_ms),
    (int, _enc_int),
    (float, _enc_float),
    (list, _enc_array),
    (tuple, _enc_array),
    (datetime, _enc_datetime),
    (uuid.UUID, _enc_uuid),
    (DBRef, _enc_dbref),
)


def _encode_other(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    encoder = _ENCODERS.get(type(value))
    if encoder is None:
        if isinstance(value, bool):
            encoder = _enc_bool
        else:
            for base, candidate in _FALLBACKS:
                if isinstance(value, base):
                    encoder = candidate
                    break
            else:
                raise InvalidDocument(
                    f"key {_key_name(kb)!r}: cannot encode object {value!r} "
                    f"of type {type(value).__name__}"
                )
    encoder(buf, kb, value, opts, depth)


def _enc_bool(buf: bytearray, kb: bytes, value: Any, opts: CodecOptions, depth: int) -> None:
    buf += b"\x08"
    buf += kb
    buf += b"\x01" if value else b"\x00"


def _check_top_level_keys(document: Mapping[str, Any]) -> None:
    for key in document:
        if isinstance(key, str) and (key.startswith("$") or "." in key):
            raise InvalidDocument(f"key {key!r} must not start with '$' or contain '.'")


def encode(
    document: Mapping[str, Any],
    check_keys: bool = False,
    codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS,
) -> bytes:
    """Encode a mapping as one BSON document.

    Key order is kept. ``check_keys`` refuses top-level keys that start with ``$`` or contain
    ``.`` (for documents that will be stored). Raises :class:`InvalidDocument` for values BSON
    cannot hold (naming the key), :class:`InvalidStringData` for strings that are not UTF-8.
    """
    if type(document) is RawBSONDocument:
        return document.raw
    if not isinstance(document, Mapping):
        raise TypeError(f"encode() takes a mapping, not {type(document).__name__}")
    if check_keys:
        _check_top_level_keys(document)
    buf = bytearray()
    try:
        _encode_elements(buf, document.items(), codec_options, 0)
    except UnicodeEncodeError as exc:
        raise InvalidStringData(f"strings must be valid UTF-8: {exc}") from None
    except RecursionError:
        raise InvalidDocument("document nested too deeply for the Python stack") from None
    return bytes(buf)


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


def _bad(message: str) -> InvalidBSON:
    return InvalidBSON(message)


def _read_string(data: bytes, pos: int, errors: str) -> tuple[str, int]:
    """A BSON string (int32 length incl. NUL, UTF-8, NUL) at ``pos``; returns (str, new pos)."""
    n = _UNPACK_I32(data, pos)[0]
    pos += 4
    if n < 1 or data[pos + n - 1]:
        raise _bad("invalid string length or missing NUL terminator")
    return data[pos : pos + n - 1].decode("utf-8", errors), pos + n


def _read_cstring(data: bytes, pos: int, end: int, errors: str) -> tuple[str, int]:
    nul = data.index(0, pos, end)
    return data[pos:nul].decode("utf-8", errors), nul + 1


def _datetime_from_ms(ms: int, opts: CodecOptions) -> Any:
    """A BSON datetime per the codec options' datetime_conversion, tz_aware and tzinfo."""
    conversion = opts.datetime_conversion
    if conversion == DatetimeConversion.DATETIME_MS:
        return DatetimeMS(ms)
    try:
        aware = _EPOCH_AWARE + timedelta(milliseconds=ms)
    except OverflowError:
        if conversion == DatetimeConversion.DATETIME_AUTO:
            return DatetimeMS(ms)
        if conversion == DatetimeConversion.DATETIME_CLAMP:
            return DatetimeMS(ms).to_datetime(opts)
        raise _bad(
            f"datetime {ms} ms since the epoch is outside Python's datetime range; decode "
            "with CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO) "
            "(or DATETIME_MS / DATETIME_CLAMP)"
        ) from None
    if not opts.tz_aware:
        return aware.replace(tzinfo=None)
    if opts.tzinfo is not None:
        try:
            return aware.astimezone(opts.tzinfo)
        except OverflowError:
            if conversion == DatetimeConversion.DATETIME_AUTO:
                return DatetimeMS(ms)
            raise _bad(f"datetime {ms} ms does not fit in {opts.tzinfo!r}") from None
    return aware


def _binary_value(data: bytes, pos: int, opts: CodecOptions) -> tuple[Any, int]:
    n = _UNPACK_I32(data, pos)[0]
    if n < 0:
        raise _bad("negative binary length")
    subtype = data[pos + 4]
    pos += 5
    if subtype == 0:
        value: Any = data[pos : pos + n]
    elif subtype == OLD_BINARY_SUBTYPE:
        inner = _UNPACK_I32(data, pos)[0]
        if inner != n - 4:
            raise _bad("binary subtype 2: inner length does not match the outer length")
        value = Binary(data[pos + 4 : pos + n], OLD_BINARY_SUBTYPE)
    else:
        value = Binary(data[pos : pos + n], subtype)
        rep = opts.uuid_representation
        if n == 16 and rep != UuidRepresentation.UNSPECIFIED:
            standard = rep == UuidRepresentation.STANDARD
            if (subtype == UUID_SUBTYPE and standard) or (
                subtype == OLD_UUID_SUBTYPE and not standard
            ):
                value = value.as_uuid(rep)
    if pos + n > len(data):
        raise _bad("binary data runs past the end of the document")
    return value, pos + n


def _decode_rare(
    t: int, data: bytes, pos: int, end: int, opts: CodecOptions, depth: int
) -> tuple[Any, int]:
    """Decode one value of a type the element loops do not inline; returns (value, new pos)."""
    errors = opts.unicode_decode_error_handler
    if t == 0x05:
        return _binary_value(data, pos, opts)
    if t == 0x13:
        if pos + 16 > end:
            raise _bad("truncated decimal128")
        return Decimal128.from_bid(data[pos : pos + 16]), pos + 16
    if t == 0x11:
        inc, time = _UNPACK_U32_PAIR(data, pos)
        return Timestamp(time, inc), pos + 8
    if t == 0x0B:
        pattern, pos = _read_cstring(data, pos, end, errors)
        flags, pos = _read_cstring(data, pos, end, errors)
        return Regex(pattern, flags), pos
    if t == 0x0D:
        code, pos = _read_string(data, pos, errors)
        return Code(code), pos
    if t == 0x0E:
        symbol, pos = _read_string(data, pos, errors)
        return Symbol(symbol), pos
    if t == 0x0F:
        return _code_with_scope(data, pos, end, opts, depth)
    if t == 0x0C:
        namespace, pos = _read_string(data, pos, errors)
        if pos + 12 > end:
            raise _bad("truncated DBPointer ObjectId")
        return DBPointer(namespace, ObjectId(data[pos : pos + 12])), pos + 12
    if t == 0x06:
        return Undefined(), pos
    if t == 0xFF:
        return MinKey(), pos
    if t == 0x7F:
        return MaxKey(), pos
    raise _bad(f"unknown BSON type 0x{t:02x}")


def _code_with_scope(
    data: bytes, pos: int, end: int, opts: CodecOptions, depth: int
) -> tuple[Any, int]:
    total = _UNPACK_I32(data, pos)[0]
    stop = pos + total
    if total < 14 or stop > end:
        raise _bad("invalid code-with-scope length")
    code, scope_pos = _read_string(data, pos + 4, opts.unicode_decode_error_handler)
    if scope_pos + 5 > stop:
        raise _bad("code-with-scope string runs into its scope")
    scope_len = _UNPACK_I32(data, scope_pos)[0]
    if scope_len < 5 or scope_pos + scope_len != stop or data[stop - 1]:
        raise _bad("code-with-scope lengths do not match")
    scope = _decode_document(data, scope_pos + 4, stop - 1, opts, depth + 1)
    return Code(code, scope), stop


def _embedded_document(data: bytes, pos: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    """An embedded document at ``pos`` (its length first): DBRef, raw, or document_class."""
    n = _UNPACK_I32(data, pos)[0]
    stop = pos + n - 1
    if n < 5 or data[stop]:
        raise _bad("invalid embedded document length or terminator")
    doc_class = opts.document_class
    if getattr(doc_class, "_type_marker", None) == _RAW_MARKER:
        return RawBSONDocument(data[pos : stop + 1], opts), stop + 1
    doc = _decode_document(data, pos + 4, stop, opts, depth + 1)
    if "$ref" in doc:
        ref = _as_dbref(doc)
        if ref is not None:
            return ref, stop + 1
    if doc_class is not dict:
        return _to_document_class(doc, doc_class), stop + 1
    return doc, stop + 1


def _as_dbref(doc: dict[str, Any]) -> DBRef | None:
    """specs/dbref: $ref (str) and $id present, $db a str if present; else not a DBRef."""
    ref = doc["$ref"]
    if not isinstance(ref, str) or "$id" not in doc:
        return None
    db = doc.get("$db")
    if db is not None and not isinstance(db, str):
        return None
    if "$db" in doc and db is None:
        return None
    extra = {k: v for k, v in doc.items() if k not in ("$ref", "$id", "$db")}
    return DBRef(ref, doc["$id"], db, extra)


def _to_document_class(doc: dict[str, Any], doc_class: type[Any]) -> Any:
    out = doc_class()
    for key, value in doc.items():
        out[key] = value
    return out


def _decode_document(
    data: bytes, pos: int, end: int, opts: CodecOptions, depth: int
) -> dict[str, Any]:
    """The elements in ``data[pos:end]`` (``end`` is the document's NUL) as a dict."""
    if depth > MAX_NESTING_DEPTH:
        raise _bad(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    errors = opts.unicode_decode_error_handler
    unpack_i32 = _UNPACK_I32
    index = data.index
    doc: dict[str, Any] = {}
    while pos < end:
        t = data[pos]
        kend = index(0, pos + 1, end)
        key = data[pos + 1 : kend].decode("utf-8", errors)
        pos = kend + 1
        if t == 0x02:
            n = unpack_i32(data, pos)[0]
            pos += 4
            if n < 1 or data[pos + n - 1]:
                raise _bad(f"invalid string length or terminator for key {key!r}")
            doc[key] = data[pos : pos + n - 1].decode("utf-8", errors)
            pos += n
        elif t == 0x10:
            doc[key] = unpack_i32(data, pos)[0]
            pos += 4
        elif t == 0x01:
            doc[key] = _UNPACK_F64(data, pos)[0]
            pos += 8
        elif t == 0x03:
            doc[key], pos = _embedded_document(data, pos, opts, depth)
        elif t == 0x04:
            doc[key], pos = _array(data, pos, opts, depth)
        elif t == 0x08:
            b = data[pos]
            if b > 1:
                raise _bad(f"invalid boolean value {b} for key {key!r}")
            doc[key] = b == 1
            pos += 1
        elif t == 0x0A:
            doc[key] = None
        elif t == 0x07:
            doc[key] = ObjectId._from_bytes(data[pos : pos + 12])
            pos += 12
        elif t == 0x12:
            doc[key] = Int64(_UNPACK_I64(data, pos)[0])
            pos += 8
        elif t == 0x09:
            doc[key] = _datetime_from_ms(_UNPACK_I64(data, pos)[0], opts)
            pos += 8
        else:
            doc[key], pos = _decode_rare(t, data, pos, end, opts, depth)
    if pos != end:
        raise _bad("document elements do not end where the document length says")
    return doc


def _array(data: bytes, pos: int, opts: CodecOptions, depth: int) -> tuple[list[Any], int]:
    """An array at ``pos`` (its length first); the keys are skipped, not decoded."""
    n = _UNPACK_I32(data, pos)[0]
    end = pos + n - 1
    if n < 5 or data[end]:
        raise _bad("invalid array length or terminator")
    depth += 1
    if depth > MAX_NESTING_DEPTH:
        raise _bad(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    errors = opts.unicode_decode_error_handler
    unpack_i32 = _UNPACK_I32
    index = data.index
    out: list[Any] = []
    append = out.append
    pos += 4
    while pos < end:
        t = data[pos]
        pos = index(0, pos + 1, end) + 1
        if t == 0x02:
            n = unpack_i32(data, pos)[0]
            pos += 4
            if n < 1 or data[pos + n - 1]:
                raise _bad("invalid string length or terminator in array")
            append(data[pos : pos + n - 1].decode("utf-8", errors))
            pos += n
        elif t == 0x10:
            append(unpack_i32(data, pos)[0])
            pos += 4
        elif t == 0x01:
            append(_UNPACK_F64(data, pos)[0])
            pos += 8
        elif t == 0x03:
            value, pos = _embedded_document(data, pos, opts, depth)
            append(value)
        elif t == 0x04:
            value, pos = _array(data, pos, opts, depth)
            append(value)
        elif t == 0x08:
            b = data[pos]
            if b > 1:
                raise _bad(f"invalid boolean value {b} in array")
            append(b == 1)
            pos += 1
        elif t == 0x0A:
            append(None)
        elif t == 0x07:
            append(ObjectId._from_bytes(data[pos : pos + 12]))
            pos += 12
        elif t == 0x12:
            append(Int64(_UNPACK_I64(data, pos)[0]))
            pos += 8
        elif t == 0x09:
            append(_datetime_from_ms(_UNPACK_I64(data, pos)[0], opts))
            pos += 8
        else:
            value, pos = _decode_rare(t, data, pos, end, opts, depth)
            append(value)
    if pos != end:
        raise _bad("array elements do not end where the array length says")
    return out, end + 1


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"BSON data must be bytes-like, not {type(data).__name__}")


def _document_at(data: bytes, pos: int, opts: CodecOptions) -> tuple[Any, int]:
    """The top-level document starting at ``pos``; returns (document, position after it)."""
    try:
        if len(data) - pos < 5:
            raise _bad(f"not enough bytes for a BSON document ({len(data) - pos})")
        size = _UNPACK_I32(data, pos)[0]
        stop = pos + size
        if size < 5 or stop > len(data):
            raise _bad(f"BSON document length {size} does not match the data")
        if data[stop - 1]:
            raise _bad("BSON document is not terminated by a NUL byte")
        doc_class = opts.document_class
        if doc_class is dict:
            return _decode_document(data, pos + 4, stop - 1, opts, 0), stop
        if getattr(doc_class, "_type_marker", None) == _RAW_MARKER:
            return RawBSONDocument(data[pos:stop], opts), stop
        doc = _decode_document(data, pos + 4, stop - 1, opts, 0)
        return _to_document_class(doc, doc_class), stop
    except InvalidBSON:
        raise
    except (struct.error, ValueError, IndexError, OverflowError) as exc:
        # ValueError covers UnicodeDecodeError and bytes.index not finding a NUL.
        raise InvalidBSON(f"invalid BSON: {exc}") from None
    except RecursionError:
        raise InvalidBSON("BSON nested too deeply for the Python stack") from None


def decode(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Any:
    """Decode exactly one BSON document (trailing bytes are an error) to ``document_class``."""
    raw = _as_bytes(data)
    doc, stop = _document_at(raw, 0, codec_options)
    if stop != len(raw):
        raise InvalidBSON(f"{len(raw) - stop} bytes after the end of the BSON document")
    return doc


def decode_iter(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Iterator[Any]:
    """Decode concatenated BSON documents one by one."""
    raw = _as_bytes(data)
    pos = 0
    while pos < len(raw):
        doc, pos = _document_at(raw, pos, codec_options)
        yield doc


def decode_all(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> list[Any]:
    """Decode concatenated BSON documents into a list."""
    raw = _as_bytes(data)
    docs = []
    pos = 0
    while pos < len(raw):
        doc, pos = _document_at(raw, pos, codec_options)
        docs.append(doc)
    return docs


def _inflate_raw(raw: bytes, opts: CodecOptions) -> dict[str, Any]:
    """The elements of a RawBSONDocument (its embedded documents stay raw)."""
    try:
        return _decode_document(raw, 4, len(raw) - 1, opts, 0)
    except InvalidBSON:
        raise
    except (struct.error, ValueError, IndexError, OverflowError) as exc:
        raise InvalidBSON(f"invalid BSON: {exc}") from None
    except RecursionError:
        raise InvalidBSON("BSON nested too deeply for the Python stack") from None
