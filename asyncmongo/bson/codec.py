"""The BSON codec: Python mappings to BSON bytes and back (bsonspec.org, specs/bson-corpus).

This is a hot path of the whole driver (every command and reply passes through it); the
work is done by :mod:`asyncmongo.bson._encode` and :mod:`asyncmongo.bson._decode`, written
for speed. Decoding untrusted bytes raises only :class:`InvalidBSON`; encoding raises
:class:`InvalidDocument` (or its subclass :class:`InvalidStringData`) for values BSON cannot
hold. Python types: dict/Mapping -> document, list/tuple -> array, str, bytes -> binary 0,
int -> int32 if it fits else int64, float, bool, None, datetime (naive = UTC), uuid.UUID per
``uuid_representation``, re.Pattern -> regex, and the types of :mod:`asyncmongo.bson`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import Any

from asyncmongo.bson._decode import MAX_NESTING_DEPTH, decode_document_at
from asyncmongo.bson._encode import encode_document
from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from asyncmongo.bson.errors import InvalidBSON, InvalidDocument, InvalidStringData
from asyncmongo.bson.raw import RawBSONDocument

__all__ = ["MAX_NESTING_DEPTH", "decode", "decode_all", "decode_iter", "encode"]


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
    if type(document) is not dict:
        if type(document) is RawBSONDocument:
            return document.raw
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


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"BSON data must be bytes-like, not {type(data).__name__}")


def decode(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> Any:
    """Decode exactly one BSON document (trailing bytes are an error) to ``document_class``."""
    raw = _as_bytes(data)
    doc, stop = decode_document_at(raw, 0, codec_options)
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
        doc, pos = decode_document_at(raw, pos, codec_options)
        yield doc


def decode_all(
    data: bytes | bytearray | memoryview, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS
) -> list[Any]:
    """Decode concatenated BSON documents into a list."""
    raw = _as_bytes(data)
    docs = []
    pos = 0
    while pos < len(raw):
        doc, pos = decode_document_at(raw, pos, codec_options)
        docs.append(doc)
    return docs
