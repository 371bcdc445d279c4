"""DBRef: a conventional reference to a document in another collection (specs/dbref).

Not a BSON type of its own: a document ``{"$ref": str, "$id": any, "$db"?: str, ...}``. The
decoder turns exactly that shape into a :class:`DBRef`; anything else stays a document.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DBRef"]


class DBRef:
    """A reference to the document with ``_id`` ``id`` in ``collection`` (of ``database``).

    Extra fields (``**extra``) are kept in order after ``$ref``/``$id``/``$db`` and readable as
    attributes, so decoding and re-encoding a DBRef document is lossless.
    """

    __slots__ = ("__collection", "__database", "__extra", "__id")

    def __init__(
        self,
        collection: str,
        id: Any,
        database: str | None = None,
        _extra: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        if not isinstance(collection, str):
            raise TypeError(f"collection must be a str, not {type(collection).__name__}")
        if database is not None and not isinstance(database, str):
            raise TypeError(f"database must be a str or None, not {type(database).__name__}")
        self.__collection = collection
        self.__id = id
        self.__database = database
        merged = dict(_extra or {})
        merged.update(extra)
        self.__extra = merged

    @property
    def collection(self) -> str:
        """The name of the referenced collection ($ref)."""
        return self.__collection

    @property
    def id(self) -> Any:
        """The referenced document's _id ($id)."""
        return self.__id

    @property
    def database(self) -> str | None:
        """The referenced database ($db), or None for the current one."""
        return self.__database

    @property
    def extra(self) -> dict[str, Any]:
        """A copy of the extra fields, in order."""
        return dict(self.__extra)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__extra[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_doc(self) -> dict[str, Any]:
        """The document form: $ref, $id, then $db if set, then the extra fields."""
        doc: dict[str, Any] = {"$ref": self.__collection, "$id": self.__id}
        if self.__database is not None:
            doc["$db"] = self.__database
        doc.update(self.__extra)
        return doc

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.__extra.items())
        if self.__database is None:
            return f"DBRef({self.__collection!r}, {self.__id!r}{extra})"
        return f"DBRef({self.__collection!r}, {self.__id!r}, {self.__database!r}{extra})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBRef):
            return self._key() == other._key()
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, DBRef):
            return self._key() != other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(
            (
                self.__collection,
                repr(self.__id),
                self.__database,
                tuple(sorted((k, repr(v)) for k, v in self.__extra.items())),
            )
        )

    def _key(self) -> tuple[Any, ...]:
        return (self.__collection, self.__id, self.__database, self.__extra)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.__collection, self.__id, self.__database, self.__extra))


def _rebuild(collection: str, id: Any, database: str | None, extra: dict[str, Any]) -> DBRef:
    return DBRef(collection, id, database, extra)
