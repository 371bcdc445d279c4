"""Custom type codecs: how types BSON does not know encode, and how BSON values decode.

The same API as PyMongo's ``bson.codec_options``: a :class:`TypeEncoder` turns values of its
``python_type`` (matched by exact type) into something BSON can encode; a
:class:`TypeDecoder` turns decoded values of its ``bson_type`` (matched by exact type, per
element) into something else; a :class:`TypeCodec` is both. A :class:`TypeRegistry` holds
codecs and a ``fallback_encoder``, called for values nothing else can encode. Set it as
``CodecOptions(type_registry=...)``; both codec implementations honour it.
"""

from __future__ import annotations

import abc
import datetime
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

__all__ = [
    "EMPTY_TYPE_REGISTRY",
    "TypeCodec",
    "TypeDecoder",
    "TypeEncoder",
    "TypeRegistry",
    "as_type_registry",
]

_Fallback = Callable[[Any], Any]


class TypeEncoder(abc.ABC):
    """Encodes values of type ``python_type`` as ``transform_python(value)``."""

    @property
    @abc.abstractmethod
    def python_type(self) -> Any:
        """The Python type to be converted into something BSON can encode."""

    @abc.abstractmethod
    def transform_python(self, value: Any) -> Any:
        """The value to encode in place of ``value``."""


class TypeDecoder(abc.ABC):
    """Decodes BSON values of Python type ``bson_type`` as ``transform_bson(value)``."""

    @property
    @abc.abstractmethod
    def bson_type(self) -> Any:
        """The type of decoded values to convert."""

    @abc.abstractmethod
    def transform_bson(self, value: Any) -> Any:
        """The value to return in place of the decoded ``value``."""


class TypeCodec(TypeEncoder, TypeDecoder):
    """Both a :class:`TypeEncoder` and a :class:`TypeDecoder`."""


_Codec = TypeEncoder | TypeDecoder


def _is_encoder(codec: Any) -> bool:
    """A TypeEncoder, ours or PyMongo's (both have python_type and transform_python)."""
    return isinstance(codec, TypeEncoder) or _is_foreign(codec, "TypeEncoder")


def _is_decoder(codec: Any) -> bool:
    return isinstance(codec, TypeDecoder) or _is_foreign(codec, "TypeDecoder")


def _is_foreign(codec: Any, base_name: str) -> bool:
    """Whether ``codec`` derives from PyMongo's ``bson.codec_options.<base_name>`` (known by
    name and module, without importing PyMongo)."""
    return any(
        cls.__name__ == base_name and cls.__module__ == "bson.codec_options"
        for cls in type(codec).__mro__
    )


class TypeRegistry:
    """Type codecs and a fallback encoder, fixed at construction (as PyMongo's).

    When several codecs transform the same type, the last one wins. Raises TypeError for a
    codec that is not a TypeEncoder/TypeDecoder/TypeCodec, an encoder of a type BSON already
    encodes (or a subclass of one), or a fallback_encoder that is not callable.
    """

    __slots__ = ("__type_codecs", "_decoder_map", "_encoder_map", "_fallback_encoder")

    def __init__(
        self,
        type_codecs: Iterable[_Codec] | None = None,
        fallback_encoder: _Fallback | None = None,
    ) -> None:
        self.__type_codecs: list[Any] = list(type_codecs or [])
        self._fallback_encoder = fallback_encoder
        self._encoder_map: dict[Any, Callable[[Any], Any]] = {}
        self._decoder_map: dict[Any, Callable[[Any], Any]] = {}
        if fallback_encoder is not None and not callable(fallback_encoder):
            raise TypeError(f"fallback_encoder {fallback_encoder!r} is not a callable")
        for codec in self.__type_codecs:
            valid = False
            if _is_encoder(codec):
                _check_encoder(codec)
                valid = True
                self._encoder_map[codec.python_type] = codec.transform_python
            if _is_decoder(codec):
                valid = True
                self._decoder_map[codec.bson_type] = codec.transform_bson
            if not valid:
                raise TypeError(
                    "Expected an instance of TypeEncoder, TypeDecoder, or TypeCodec, "
                    f"got {codec!r} instead"
                )

    @property
    def codecs(self) -> list[Any]:
        """The type codecs of this registry."""
        return self.__type_codecs

    @property
    def fallback_encoder(self) -> _Fallback | None:
        """The fallback encoder of this registry."""
        return self._fallback_encoder

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(type_codecs={self.__type_codecs!r}, "
            f"fallback_encoder={self._fallback_encoder!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeRegistry):
            return NotImplemented
        return (
            self._decoder_map == other._decoder_map
            and self._encoder_map == other._encoder_map
            and self._fallback_encoder == other._fallback_encoder
        )

    def __hash__(self) -> int:
        # Equal registries hash alike; CodecOptions (a frozen dataclass) hashes its fields.
        return hash(
            (
                frozenset(self._encoder_map.items()),
                frozenset(self._decoder_map.items()),
                self._fallback_encoder,
            )
        )


def _check_encoder(codec: Any) -> None:
    """TypeEncoders cannot change how the built-in BSON types encode (PyMongo's rule)."""
    python_type = codec.python_type
    for pytype in _STDLIB_TYPES:
        if issubclass(python_type, pytype):
            raise TypeError(
                "TypeEncoders cannot change how built-in types are encoded "
                f"(encoder {codec} transforms type {pytype})"
            )
    for base in python_type.__mro__:
        # asyncmongo's bson classes, and PyMongo's (by their marker, without an import).
        if base.__module__.startswith("asyncmongo.bson.") or isinstance(
            vars(base).get("_type_marker"), int
        ):
            raise TypeError(
                "TypeEncoders cannot change how built-in types are encoded "
                f"(encoder {codec} transforms type {base})"
            )


# The standard types the encoder writes itself (PyMongo's _BUILT_IN_TYPES, less its own
# bson classes, which _check_encoder knows by module or marker).
_STDLIB_TYPES: Final = (
    bool,
    bytes,
    datetime.datetime,
    dict,
    float,
    int,
    list,
    str,
    tuple,
    type(None),
    uuid.UUID,
    re.Pattern,
    Mapping,
)


EMPTY_TYPE_REGISTRY: Final = TypeRegistry()
"""The registry of the default CodecOptions: no codecs, no fallback encoder."""


def as_type_registry(registry: Any) -> TypeRegistry:
    """``registry`` as a TypeRegistry: ours as is, None as the empty one, PyMongo's
    ``bson.codec_options.TypeRegistry`` (known by duck typing) converted with its codecs
    and fallback encoder. Raises TypeError for anything else."""
    if isinstance(registry, TypeRegistry):
        return registry
    if registry is None:
        return EMPTY_TYPE_REGISTRY
    codecs = getattr(registry, "codecs", None)
    if isinstance(codecs, list) and hasattr(registry, "_decoder_map"):
        return TypeRegistry(codecs, getattr(registry, "fallback_encoder", None))
    raise TypeError(f"type_registry must be a TypeRegistry, not {registry!r}")
