"""Every public method and property of the API classes has a docstring (the API reference is
generated from them)."""

from __future__ import annotations

import inspect

import pytest

from asyncmongo import (
    AsyncChangeStream,
    AsyncCollection,
    AsyncCommandCursor,
    AsyncCursor,
    AsyncDatabase,
    AsyncMongoClient,
)
from asyncmongo.gridfs import AsyncGridFSBucket, AsyncGridIn, AsyncGridOut
from asyncmongo.sessions import AsyncClientSession

API_CLASSES = (
    AsyncMongoClient,
    AsyncDatabase,
    AsyncCollection,
    AsyncCursor,
    AsyncCommandCursor,
    AsyncChangeStream,
    AsyncClientSession,
    AsyncGridFSBucket,
    AsyncGridIn,
    AsyncGridOut,
)


def undocumented(cls: type) -> list[str]:
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


def test_every_api_class_has_a_docstring() -> None:
    assert [cls.__name__ for cls in API_CLASSES if not cls.__doc__] == []


@pytest.mark.xfail(
    reason="the API classes' docstrings are written after the generic annotations land",
    strict=False,
)
def test_every_public_method_and_property_has_a_docstring() -> None:
    missing = [name for cls in API_CLASSES for name in undocumented(cls)]
    assert missing == [], f"{len(missing)} without a docstring: {', '.join(missing)}"
