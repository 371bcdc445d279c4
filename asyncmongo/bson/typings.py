"""The type variables of documents, as PyMongo's ``bson.typings`` names them.

``_DocumentType`` is what a client, database, collection, cursor or change stream decodes
documents into: a ``Mapping[str, Any]`` (a TypedDict, dict, SON, RawBSONDocument, ...),
``dict[str, Any]`` when nothing says otherwise (``AsyncMongoClient()``, a bare
``AsyncCollection`` annotation). ``_DocumentTypeArg`` is a second one for the methods that
take another document type than their object's (``with_options(codec_options=...)``).
``_CodecDocumentType`` is CodecOptions' own: covariant (the options are frozen), and Any
when not given, so that code that passes codec options along without looking at their
document class accepts every ``CodecOptions[...]``.

Type checkers read the variables with their defaults (PEP 696) from typing_extensions' stub;
at run time the standard library's TypeVar, which has no defaults before Python 3.13, makes
the classes subscriptable, and nothing outside the standard library is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

__all__ = ["_CodecDocumentType", "_DocumentType", "_DocumentTypeArg"]

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    _DocumentType = TypeVar("_DocumentType", bound=Mapping[str, Any], default=dict[str, Any])
    _DocumentTypeArg = TypeVar("_DocumentTypeArg", bound=Mapping[str, Any])
    _CodecDocumentType = TypeVar(
        "_CodecDocumentType", bound=Mapping[str, Any], default=Any, covariant=True
    )
else:
    from typing import TypeVar

    _DocumentType = TypeVar("_DocumentType", bound=Mapping[str, Any])
    _DocumentTypeArg = TypeVar("_DocumentTypeArg", bound=Mapping[str, Any])
    _CodecDocumentType = TypeVar("_CodecDocumentType", bound=Mapping[str, Any], covariant=True)
