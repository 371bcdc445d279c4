"""RawBSONDocument: a read-only mapping over BSON bytes, decoded lazily.

Useful to pass documents through without paying for a full decode (a proxy, a cache, a
change stream resume token), and for large replies read field by field. Encoding it gives
back its bytes unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from asyncmongo.bson._decode import inflate_raw
from asyncmongo.bson.codec_options import (
    _RAW_BSON_DOCUMENT_MARKER,
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
)
from asyncmongo.bson.errors import InvalidBSON

__all__ = ["RawBSONDocument"]

_INT32_MIN_DOC: Final = 5


class RawBSONDocument(Mapping[str, Any]):
    """A mapping that keeps ``raw`` BSON bytes and decodes them on first access.

    Embedded documents come back as RawBSONDocument too. The size header and terminator are
    checked at construction; the rest when first read (raising :class:`InvalidBSON`).
    """

    __slots__ = ("__codec_options", "__inflated", "__raw")

    # The codec and CodecOptions recognise the class by this marker (PyMongo's value).
    _type_marker: Final = _RAW_BSON_DOCUMENT_MARKER

    def __init__(
        self,
        bson_bytes: bytes | bytearray | memoryview,
        codec_options: CodecOptions | None = None,
    ) -> None:
        raw = bytes(bson_bytes)
        if len(raw) < _INT32_MIN_DOC or int.from_bytes(raw[:4], "little") != len(raw):
            raise InvalidBSON("RawBSONDocument: the length header does not match the bytes")
        if raw[-1] != 0:
            raise InvalidBSON("RawBSONDocument: the document is not terminated by NUL")
        if codec_options is None:
            codec_options = DEFAULT_CODEC_OPTIONS
        if codec_options.document_class is not RawBSONDocument:
            codec_options = codec_options.with_options(document_class=RawBSONDocument)
        self.__raw = raw
        self.__codec_options = codec_options
        self.__inflated: dict[str, Any] | None = None

    @property
    def raw(self) -> bytes:
        """The BSON bytes of this document."""
        return self.__raw

    @property
    def codec_options(self) -> CodecOptions:
        """The options used to decode the fields."""
        return self.__codec_options

    def _inflated(self) -> dict[str, Any]:
        inflated = self.__inflated
        if inflated is None:
            inflated = self.__inflated = inflate_raw(self.__raw, self.__codec_options)
        return inflated

    def __getitem__(self, key: str) -> Any:
        return self._inflated()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._inflated())

    def __len__(self) -> int:
        return len(self._inflated())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawBSONDocument):
            return self.__raw == other.raw
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.__raw)

    def __repr__(self) -> str:
        return f"RawBSONDocument({self.__raw!r})"
