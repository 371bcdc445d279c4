"""Typed stub of the compiled BSON decoder (asyncmongo/bson/_cdecode.c).

The pure-Python reference is :mod:`asyncmongo.bson._decode` (through
:func:`asyncmongo.bson.codec._py_decode` and ``_py_decode_all``); this module gives the same
values of the same types and raises the same errors for every input.
"""

from typing import Any

from asyncmongo.bson.codec_options import CodecOptions

def decode(data: bytes | bytearray | memoryview, codec_options: CodecOptions, /) -> Any:
    """Exactly one BSON document (trailing bytes are InvalidBSON) as ``document_class``."""

def decode_all(data: bytes | bytearray | memoryview, codec_options: CodecOptions, /) -> list[Any]:
    """Concatenated BSON documents as a list."""

def decode_document_at(data: bytes, pos: int, codec_options: CodecOptions, /) -> tuple[Any, int]:
    """The document starting at ``pos`` and the position just after it."""
