"""The compatible API classes: asyncmongo's, with PyMongo's errors and results at the edge.

:func:`compatible_class` derives, from an asyncmongo API class (AsyncDatabase,
AsyncCollection, the cursors, the session, ...), a subclass whose every public method (and
the protocol methods of item access, attribute access, async iteration and async context)
does what the base method does, then:

- an error raised (asyncmongo's, see ``_errors``) is made an instance of PyMongo's class too;
- a result that is an asyncmongo API object (a database from ``client["db"]``, a cursor from
  ``find()``) gets its compatible class, so everything reached from the compatible client is
  compatible; a write result becomes PyMongo's result class.

The subclasses add no state (``__slots__ = ()``), so an object switches class in place: no
copy, no proxy, and every ``isinstance`` against asyncmongo's classes still holds. The cost is
one frame and one dict lookup per call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from asyncmongo.bson.errors import BSONError
from asyncmongo.compat._errors import as_pymongo_error
from asyncmongo.compat._results import RESULT_CONVERTERS
from asyncmongo.errors import MongoError

__all__ = ["compatible", "compatible_class", "register"]

C = TypeVar("C", bound=type)

#: asyncmongo API class -> its compatible subclass.
_COMPATIBLE: dict[type, type] = {}

#: Protocol methods wrapped besides the public ones.
_PROTOCOL_METHODS = frozenset(
    {"__getitem__", "__getattr__", "__anext__", "__aenter__", "__aexit__", "__call__"}
)


def compatible(result: Any) -> Any:
    """``result`` as the compatible client hands it back (see the module doc)."""
    cls = type(result)
    compatible_cls = _COMPATIBLE.get(cls)
    if compatible_cls is not None:
        result.__class__ = compatible_cls
        return result
    convert = RESULT_CONVERTERS.get(cls)
    return convert(result) if convert is not None else result


def _wrap(function: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def async_method(*args: Any, **kwargs: Any) -> Any:
            try:
                result = await function(*args, **kwargs)
            except (MongoError, BSONError) as exc:
                as_pymongo_error(exc)
                raise
            return compatible(result)

        return async_method

    @functools.wraps(function)
    def method(*args: Any, **kwargs: Any) -> Any:
        try:
            result = function(*args, **kwargs)
        except (MongoError, BSONError) as exc:
            as_pymongo_error(exc)
            raise
        return compatible(result)

    return method


def _wrapped_members(base: type) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for cls in reversed(base.__mro__[:-1]):  # object's methods are never wrapped
        for name, value in vars(cls).items():
            if name.startswith("_") and name not in _PROTOCOL_METHODS:
                continue
            if inspect.isfunction(value) and not inspect.isasyncgenfunction(value):
                members[name] = _wrap(value)
            elif name in members and not inspect.isfunction(value):
                del members[name]  # a subclass replaced the method with something else
    return members


def compatible_class(base: C, namespace: dict[str, Any] | None = None) -> C:
    """The compatible subclass of ``base`` (``namespace`` adds or overrides members)."""
    members = _wrapped_members(base)
    members.update(namespace or {})
    members.setdefault("__slots__", ())
    members.setdefault("__doc__", base.__doc__)
    members["__module__"] = "asyncmongo.compat"
    members["__qualname__"] = base.__name__
    cls: C = type(base)(base.__name__, (base,), members)
    register(base, cls)
    return cls


def register(base: type, compatible_cls: type) -> None:
    """Hand ``compatible_cls`` back wherever an API method returns a ``base``."""
    _COMPATIBLE[base] = compatible_cls
