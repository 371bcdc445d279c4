"""asyncmongo's errors made catchable as PyMongo's.

For each asyncmongo error class there is one compatible class deriving from it and from the
PyMongo class of the same name (``pymongo.errors``, ``bson.errors`` or
``gridfs.errors``), or, where PyMongo
has no such class, from the PyMongo class of its nearest ancestor: asyncmongo's
PoolClearedError becomes an AutoReconnect, its InvalidArgument a PyMongoError. An error
raised through the compatible client has its class switched to that class, keeping its
message, attributes, labels and traceback, so ``except pymongo.errors.DuplicateKeyError``
and ``except asyncmongo.errors.DuplicateKeyError`` both catch it.
"""

from __future__ import annotations

import bson.errors as pymongo_bson_errors
import gridfs.errors as pymongo_gridfs_errors
import pymongo.errors as pymongo_errors

from asyncmongo.bson.errors import BSONError
from asyncmongo.errors import MongoError, OperationFailure

__all__ = ["as_pymongo_error", "compatible_error_class"]

#: asyncmongo's names that PyMongo spells differently.
_RENAMED = {"MongoError": "PyMongoError"}

_classes: dict[type[BaseException], type[BaseException]] = {}


def _pymongo_class(cls: type[BaseException]) -> type[BaseException] | None:
    """PyMongo's class for ``cls``: the same name, else that of its nearest ancestor."""
    for ancestor in cls.__mro__:
        name = _RENAMED.get(ancestor.__name__, ancestor.__name__)
        for module in (pymongo_errors, pymongo_bson_errors, pymongo_gridfs_errors):
            found = getattr(module, name, None)
            if isinstance(found, type) and issubclass(found, BaseException):
                return found
    return None


def compatible_error_class(cls: type[BaseException]) -> type[BaseException]:
    """The class deriving from asyncmongo's ``cls`` and PyMongo's counterpart (made once)."""
    compatible = _classes.get(cls)
    if compatible is None:
        pymongo_cls = _pymongo_class(cls)
        if pymongo_cls is None or issubclass(cls, pymongo_cls):
            compatible = cls
        else:
            compatible = type(
                cls.__name__,
                (cls, pymongo_cls),
                {"__module__": __name__, "__qualname__": cls.__name__, "__doc__": cls.__doc__},
            )
        _classes[cls] = compatible
        _classes[compatible] = compatible
    return compatible


def as_pymongo_error(exc: BaseException) -> BaseException:
    """``exc`` itself, now also an instance of PyMongo's class for it.

    PyMongo's OperationFailure keeps its code and details in private attributes its own
    properties may read; they are filled in too.
    """
    cls = type(exc)
    if isinstance(exc, MongoError | BSONError):
        compatible = _classes.get(cls) or compatible_error_class(cls)
        if compatible is not cls:
            setattr(exc, "__class__", compatible)  # noqa: B010 - same layout, a subclass
            if isinstance(exc, OperationFailure):
                exc.__dict__.update(
                    _OperationFailure__code=exc.code,
                    _OperationFailure__details=exc.details,
                    _OperationFailure__max_wire_version=None,
                )
    return exc
