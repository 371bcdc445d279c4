"""The BSON codec: Python mappings to BSON bytes and back (bsonspec.org, specs/bson-corpus).

This is a hot path of the whole driver (every command and reply passes through it). Two
implementations do the work, with the same behaviour, byte for byte and error for error:

- ``python``: :mod:`asyncmongo.bson._encode` and :mod:`asyncmongo.bson._decode`, the
  reference, which runs everywhere;
- ``c``: the optional compiled accelerators ``_cencode`` and ``_cdecode`` (built by
  ``pip install`` when a C compiler is present), used by default when importable. They handle
  the common types themselves and hand every other value to the reference code.

``ASYNCMONGO_BSON_IMPL=python`` in the environment (read at import) or
:func:`use_implementation` selects the reference codec; :func:`implementation` says which
one runs.

Decoding untrusted bytes raises only :class:`InvalidBSON`; encoding raises
:class:`InvalidDocument` (or its subclass :class:`InvalidStringData`) for values BSON cannot
hold. Python types: dict/Mapping -> document, list/tuple -> array, str, bytes -> binary 0,
int -> int32 if it fits else int64, float, bool, None, datetime (naive = UTC), uuid.UUID per
``uuid_representation``, re.Pattern -> regex, and the types of :mod:`asyncmongo.bson`.
PyMongo's bson values (known by their ``_type_marker``, without importing PyMongo) are
written as PyMongo writes them: ``bson.Int64`` as int64, ``bson.Binary`` with its subtype, a
``bson.RawBSONDocument`` as its bytes, and so on.

Two options change the classes involved, in both implementations alike:
``CodecOptions.type_registry`` (custom type codecs and a fallback encoder, as PyMongo's
TypeRegistry) and ``CodecOptions.value_classes`` (the classes BSON values decode to, e.g.
PyMongo's for the compatible client). Left at their defaults they cost nothing.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, Final

from asyncmongo.bson._decode import MAX_NESTING_DEPTH, decode_document_at
from asyncmongo.bson._encode import encode_document
from asyncmongo.bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    as_codec_options,
    is_raw_document_class,
)
from asyncmongo.bson.errors import InvalidBSON, InvalidDocument, InvalidStringData

__all__ = [
    "MAX_NESTING_DEPTH",
    "available_implementations",
    "decode",
    "decode_all",
    "decode_iter",
    "encode",
    "implementation",
    "use_implementation",
]

_EncodeFn = Callable[[Any, bool, CodecOptions], bytes]
_DecodeFn = Callable[[Any, CodecOptions], Any]
_DecodeAllFn = Callable[[Any, CodecOptions], list[Any]]
_DecodeAtFn = Callable[[bytes, int, CodecOptions], tuple[Any, int]]


# -- the reference implementation --


def _check_top_level_keys(document: Mapping[str, Any]) -> None:
    for key in document:
        if isinstance(key, str) and (key.startswith("$") or "." in key):
            raise InvalidDocument(f"key {key!r} must not start with '$' or contain '.'")


def _py_encode(document: Any, check_keys: bool, codec_options: CodecOptions) -> bytes:
    if type(codec_options) is not CodecOptions:
        codec_options = as_codec_options(codec_options)  # PyMongo's, converted
    if type(document) is not dict:
        if is_raw_document_class(type(document)):
            raw: bytes = document.raw
            return raw
        if not isinstance(document, Mapping):
            raise TypeError(f"encode() takes a mapping, not {type(document).__name__}")
    if check_keys:
        _check_top_level_keys(document)
    buf = bytearray()
    try:
        encode_document(buf, document.items(), codec_options, 0)
    except UnicodeEncodeError as exc:
        raise InvalidStringData(f"strings must be valid UTF-8: {exc}") from None
    except struct.error as exc:  # a length beyond int32: a value or document over 2 GiB
        raise InvalidDocument(f"value too large for BSON: {exc}") from None
    except RecursionError:
        raise InvalidDocument("document nested too deeply for the Python stack") from None
    return bytes(buf)


def _as_bytes(data: Any) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"BSON data must be bytes-like, not {type(data).__name__}")


def _py_decode(data: Any, codec_options: CodecOptions) -> Any:
    raw = _as_bytes(data)
    doc, stop = decode_document_at(raw, 0, codec_options)
    if stop != len(raw):
        raise InvalidBSON(f"{len(raw) - stop} bytes after the end of the BSON document")
    return doc


def _py_decode_all(data: Any, codec_options: CodecOptions) -> list[Any]:
    raw = _as_bytes(data)
    docs = []
    pos = 0
    while pos < len(raw):
        doc, pos = decode_document_at(raw, pos, codec_options)
        docs.append(doc)
    return docs


# -- choosing the implementation --


def _accelerator(name: str) -> ModuleType | None:
    try:
        return __import__(f"asyncmongo.bson.{name}", fromlist=["_"])
    except ImportError:
        return None


_CENCODE: Final = _accelerator("_cencode")
_CDECODE: Final = _accelerator("_cdecode")

_encode: _EncodeFn = _py_encode
_decode: _DecodeFn = _py_decode
_decode_all: _DecodeAllFn = _py_decode_all
_decode_at: _DecodeAtFn = decode_document_at
_implementation = "python"


def available_implementations() -> tuple[str, ...]:
    """The implementations this installation can run: ``("python", "c")`` when both
    accelerators were built, else ``("python",)``."""
    return ("python", "c") if _CENCODE is not None and _CDECODE is not None else ("python",)


def implementation() -> str:
    """The implementation in use: ``"c"`` or ``"python"``."""
    return _implementation


def use_implementation(name: str) -> None:
    """Select the codec for the whole process: ``"c"`` (the accelerators) or ``"python"``.

    Raises ValueError for an unknown name or ``"c"`` when the accelerators are not built.
    """
    global _encode, _decode, _decode_all, _decode_at, _implementation
    if name not in available_implementations():
        raise ValueError(
            f"BSON implementation {name!r} is not available here "
            f"(available: {', '.join(available_implementations())})"
        )
    if name == "c":
        assert _CENCODE is not None and _CDECODE is not None
        _encode = _CENCODE.encode
        _decode, _decode_all = _CDECODE.decode, _CDECODE.decode_all
        _decode_at = _CDECODE.decode_document_at
    else:
        _encode, _decode, _decode_all = _py_encode, _py_decode, _py_decode_all
        _decode_at = decode_document_at
    _implementation = name


if os.environ.get("ASYNCMONGO_BSON_IMPL", "") != "python" and "c" in available_implementations():
    use_implementation("c")


# -- the public functions --


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
    return _encode(document, check_keys, codec_options)


def decode(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Any:
    """Decode exactly one BSON document (trailing bytes are an error) to ``document_class``."""
    return _decode(data, codec_options)


def decode_iter(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Iterator[Any]:
    """Decode concatenated BSON documents one by one."""
    raw = _as_bytes(data)
    pos = 0
    while pos < len(raw):
        doc, pos = _decode_at(raw, pos, codec_options)
        yield doc


def decode_all(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> list[Any]:
    """Decode concatenated BSON documents into a list."""
    return _decode_all(data, codec_options)
