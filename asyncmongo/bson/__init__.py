"""BSON: the binary document format of MongoDB, pure Python, no asyncio.

The public names of the codec and its types; see the submodules for details.
"""

from __future__ import annotations

from asyncmongo.bson.binary import (
    BINARY_SUBTYPE,
    FUNCTION_SUBTYPE,
    MD5_SUBTYPE,
    OLD_BINARY_SUBTYPE,
    OLD_UUID_SUBTYPE,
    USER_DEFINED_SUBTYPE,
    UUID_SUBTYPE,
    VECTOR_SUBTYPE,
    Binary,
    BinaryVector,
    BinaryVectorDtype,
)
from asyncmongo.bson.codec import (
    MAX_NESTING_DEPTH,
    decode,
    decode_all,
    decode_iter,
    encode,
)
from asyncmongo.bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    ValueClasses,
    as_codec_options,
)
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import (
    BSONError,
    InvalidBinary,
    InvalidBSON,
    InvalidDecimal128,
    InvalidDocument,
    InvalidExtendedJSON,
    InvalidId,
    InvalidStringData,
)
from asyncmongo.bson.json_util import (
    CANONICAL_JSON_OPTIONS,
    RELAXED_JSON_OPTIONS,
    JSONMode,
    JSONOptions,
    dumps,
    loads,
    object_hook,
)
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.type_codecs import TypeCodec, TypeDecoder, TypeEncoder, TypeRegistry
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
)

__all__ = [
    "BINARY_SUBTYPE",
    "CANONICAL_JSON_OPTIONS",
    "DEFAULT_CODEC_OPTIONS",
    "FUNCTION_SUBTYPE",
    "MAX_NESTING_DEPTH",
    "MD5_SUBTYPE",
    "OLD_BINARY_SUBTYPE",
    "OLD_UUID_SUBTYPE",
    "RELAXED_JSON_OPTIONS",
    "USER_DEFINED_SUBTYPE",
    "UUID_SUBTYPE",
    "VECTOR_SUBTYPE",
    "BSONError",
    "Binary",
    "BinaryVector",
    "BinaryVectorDtype",
    "Code",
    "CodecOptions",
    "DBPointer",
    "DBRef",
    "DatetimeConversion",
    "DatetimeMS",
    "Decimal128",
    "Int64",
    "InvalidBSON",
    "InvalidBinary",
    "InvalidDecimal128",
    "InvalidDocument",
    "InvalidExtendedJSON",
    "InvalidId",
    "InvalidStringData",
    "JSONMode",
    "JSONOptions",
    "MaxKey",
    "MinKey",
    "ObjectId",
    "RawBSONDocument",
    "Regex",
    "Symbol",
    "Timestamp",
    "TypeCodec",
    "TypeDecoder",
    "TypeEncoder",
    "TypeRegistry",
    "Undefined",
    "UuidRepresentation",
    "ValueClasses",
    "as_codec_options",
    "decode",
    "decode_all",
    "decode_iter",
    "dumps",
    "encode",
    "loads",
    "object_hook",
]
