"""Typed stub of the compiled BSON encoder (asyncmongo/bson/_cencode.c).

The pure-Python reference is :func:`asyncmongo.bson.codec._py_encode`; this module behaves
the same, byte for byte and error for error.
"""

from typing import Any

from asyncmongo.bson.codec_options import CodecOptions

def encode(document: Any, check_keys: bool, codec_options: CodecOptions, /) -> bytes:
    """Encode a mapping as one BSON document (a RawBSONDocument gives back its bytes)."""

def seconds() -> int:
    """Whole seconds since the epoch (``time(2)``): the clock of ObjectId generation."""
