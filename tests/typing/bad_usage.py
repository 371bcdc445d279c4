"""Misuses that mypy --strict and pyright must refuse, one per line, each marked with the
error both report: ``# expect: <mypy error code> <pyright rule>``.

``tests/typing/test_generics.py`` checks that exactly these lines fail, with these codes.
"""

from __future__ import annotations

from typing import Any, TypedDict

from asyncmongo import AsyncChangeStream, AsyncCollection, AsyncMongoClient, InsertOne
from asyncmongo.bson import RawBSONDocument


class Movie(TypedDict):
    name: str
    year: int


class Actor(TypedDict):
    name: str


async def misuse(coll: AsyncCollection[Movie], stream: AsyncChangeStream[Movie]) -> None:
    movie = await coll.find_one({})
    print(movie["name"])  # expect: index reportOptionalSubscript
    if movie is not None:
        print(movie["nope"])  # expect: typeddict-item reportGeneralTypeIssues
        year: str = movie["year"]  # expect: assignment reportAssignmentType
        print(year)
    await coll.insert_one({"name": "Jaws", "year": "1975"})  # expect: arg-type reportArgumentType
    roy = Actor(name="Roy Scheider")
    await coll.bulk_write([InsertOne(roy)])  # expect: arg-type reportArgumentType
    actors: AsyncCollection[Actor] = coll  # expect: assignment reportAssignmentType
    print(actors)
    async for found in coll.find():
        print(found["title"])  # expect: typeddict-item reportGeneralTypeIssues
    first: int | None = await coll.find().try_next()  # expect: assignment reportAssignmentType
    print(first)
    change = await stream.next()
    print(change["nope"])  # expect: typeddict-item reportGeneralTypeIssues


def bad_type_arguments(
    numbers: AsyncMongoClient[int],  # expect: type-var reportInvalidTypeArguments
    uri: str,
) -> None:
    raw = AsyncMongoClient(uri, document_class=RawBSONDocument)
    raw_coll = raw.test.test
    plain: AsyncCollection[dict[str, Any]] = raw_coll  # expect: assignment reportAssignmentType
    print(numbers, plain)
