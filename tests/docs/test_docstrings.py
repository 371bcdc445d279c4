"""Every public method and property of the API classes has a docstring (the API reference is
generated from them).

The API classes are the ones named below, which a user reaches from the client (cursors,
sessions, change streams and GridFS streams are not all exported at the top level), plus
every class exported by ``asyncmongo``, ``asyncmongo.gridfs`` and ``asyncmongo.errors``, so
that a class added to those modules is checked without being listed here.
"""

from __future__ import annotations

import inspect
import types

import pytest

import asyncmongo
import asyncmongo.errors
import asyncmongo.gridfs
from asyncmongo import (
    AsyncChangeStream,
    AsyncCollection,
    AsyncCommandCursor,
    AsyncCursor,
    AsyncDatabase,
    AsyncMongoClient,
    BulkWriteResult,
    ClientBulkWriteResult,
    DeleteMany,
    DeleteOne,
    DeleteResult,
    IndexModel,
    InsertManyResult,
    InsertOne,
    InsertOneResult,
    ReadConcern,
    ReplaceOne,
    SearchIndexModel,
    SessionOptions,
    TransactionOptions,
    UpdateMany,
    UpdateOne,
    UpdateResult,
    WriteConcern,
)
from asyncmongo.errors import MongoError, OperationFailure
from asyncmongo.gridfs import AsyncGridFSBucket, AsyncGridIn, AsyncGridOut
from asyncmongo.operations import WriteModel
from asyncmongo.sessions import AsyncClientSession

API_CLASSES: tuple[type, ...] = (
    # client, database, collection
    AsyncMongoClient,
    AsyncDatabase,
    AsyncCollection,
    # cursors, sessions, change streams
    AsyncCursor,
    AsyncCommandCursor,
    AsyncClientSession,
    SessionOptions,
    TransactionOptions,
    AsyncChangeStream,
    # GridFS
    AsyncGridFSBucket,
    AsyncGridIn,
    AsyncGridOut,
    # write models and index models
    WriteModel,
    InsertOne,
    DeleteOne,
    DeleteMany,
    ReplaceOne,
    UpdateOne,
    UpdateMany,
    IndexModel,
    SearchIndexModel,
    # results
    InsertOneResult,
    InsertManyResult,
    UpdateResult,
    DeleteResult,
    BulkWriteResult,
    ClientBulkWriteResult,
    # settings and errors
    ReadConcern,
    WriteConcern,
    MongoError,
    OperationFailure,
)

PUBLIC_MODULES: tuple[types.ModuleType, ...] = (asyncmongo, asyncmongo.gridfs, asyncmongo.errors)


def exported_classes() -> list[type]:
    """The driver's own classes in the public modules' ``__all__``."""
    classes = []
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and value.__module__.startswith("asyncmongo"):
                classes.append(value)
    return classes


def checked_classes() -> list[type]:
    return list(dict.fromkeys([*API_CLASSES, *exported_classes()]))


def undocumented(cls: type) -> list[str]:
    """The public methods and properties of ``cls`` (inherited ones included, when defined by
    asyncmongo) without a docstring."""
    missing = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("asyncmongo"):
            continue
        raw = vars(owner)[name]
        if not (inspect.isfunction(raw) or isinstance(raw, property | classmethod | staticmethod)):
            continue
        if not inspect.getdoc(member):
            missing.append(f"{cls.__name__}.{name}")
    return missing


def test_the_check_covers_what_users_reach() -> None:
    checked = checked_classes()
    # well over the hand-listed classes: the exported ones (events, errors, ...) join them
    assert len(checked) > len(API_CLASSES)
    for cls in (AsyncCursor, AsyncCommandCursor, AsyncClientSession, AsyncGridIn, AsyncGridOut):
        assert cls in checked


def test_every_api_class_has_a_docstring() -> None:
    assert [cls.__name__ for cls in checked_classes() if not cls.__doc__] == []


@pytest.mark.parametrize("cls", checked_classes(), ids=lambda cls: cls.__name__)
def test_every_public_method_and_property_has_a_docstring(cls: type) -> None:
    missing = undocumented(cls)
    assert missing == [], f"{len(missing)} without a docstring: {', '.join(missing)}"


def test_the_check_finds_a_missing_docstring() -> None:
    class Documented:
        """A class."""

        __module__ = "asyncmongo.example"

        def documented(self) -> None:
            """Documented."""

        def bare(self) -> None:
            pass

        @property
        def bare_property(self) -> int:
            return 1

        def _private(self) -> None:
            pass

    assert undocumented(Documented) == ["Documented.bare", "Documented.bare_property"]
