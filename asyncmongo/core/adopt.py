"""PyMongo's settings objects taken as asyncmongo's own, in every client.

Code written for PyMongo hands the driver PyMongo's objects: a
``WriteConcern(w="majority")``, a ``DriverInfo``.
Each function here returns asyncmongo's equivalent of such an object and returns
asyncmongo's own objects (and None) unchanged. PyMongo's are recognised by the module their
class comes from, so nothing here imports PyMongo, and a value that merely has the same
attributes is not mistaken for one. Read preferences are adopted the same way in
``asyncmongo.core.selection.read_preference``, write and index models in ``asyncmongo._adopt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.wire.handshake import DriverInfo, ServerApi
from asyncmongo.errors import InvalidArgument

__all__ = [
    "adopt_driver_info",
    "adopt_read_concern",
    "adopt_server_api",
    "adopt_write_concern",
    "is_pymongo_object",
]


def is_pymongo_object(value: object, module: str) -> bool:
    """Whether ``value``'s class is defined in PyMongo's ``module`` (e.g.
    "pymongo.operations"), a subclass's base counting: libraries subclass PyMongo's models."""
    return any(cls.__module__ == module for cls in type(value).__mro__)


def adopt_write_concern(value: Any) -> Any:
    """PyMongo's WriteConcern as asyncmongo's (w, wtimeout, j; fsync has no equivalent)."""
    if value is None or type(value) is WriteConcern:
        return value
    if is_pymongo_object(value, "pymongo.write_concern"):
        document: Mapping[str, Any] = value.document
        if document.get("fsync"):
            raise InvalidArgument("WriteConcern(fsync=True) is not supported; use j=True")
        return WriteConcern(
            w=document.get("w"), wtimeout_ms=document.get("wtimeout"), journal=document.get("j")
        )
    return value


def adopt_read_concern(value: Any) -> Any:
    """PyMongo's ReadConcern as asyncmongo's."""
    if value is None or type(value) is ReadConcern:
        return value
    if is_pymongo_object(value, "pymongo.read_concern"):
        return ReadConcern(value.level)
    return value


def adopt_driver_info(value: Any) -> Any:
    """PyMongo's DriverInfo (a namedtuple of name, version, platform) as asyncmongo's."""
    if type(value) is DriverInfo:
        return value
    if is_pymongo_object(value, "pymongo.driver_info"):
        return DriverInfo(value.name, value.version, value.platform)
    return value


def adopt_server_api(value: Any) -> Any:
    """PyMongo's ServerApi as asyncmongo's."""
    if value is None or type(value) is ServerApi:
        return value
    if is_pymongo_object(value, "pymongo.server_api"):
        return ServerApi(value.version, value.strict, value.deprecation_errors)
    return value
