"""A typed program written against asyncmongo's generics, as a PyMongo user would write it.

``tests/typing/test_generics.py`` runs mypy --strict and pyright over this file and checks
every ``reveal_type`` below against the type named in its ``# revealed:`` comment (the same
spelling for both checkers after normalisation). The file must also type-check with no
error: documents are TypedDicts, so a wrong key or value is caught (see ``bad_*.py``).
It is never run by pytest; ``python sample_program.py`` runs it on the simulated deployment
of asyncmongo.testing.
"""

# pyright: strict
from __future__ import annotations

import asyncio
from collections.abc import Mapping, MutableMapping
from typing import Any, TypedDict, reveal_type

from asyncmongo import (
    AsyncChangeStream,
    AsyncCollection,
    AsyncCommandCursor,
    AsyncCursor,
    AsyncDatabase,
    AsyncMongoClient,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateOne,
)
from asyncmongo.bson import CodecOptions, RawBSONDocument
from asyncmongo.change_stream import AsyncCollectionChangeStream


class Movie(TypedDict):
    name: str
    year: int


class MovieSummary(TypedDict):
    name: str


async def untyped_client(uri: str) -> None:
    client = AsyncMongoClient(uri)
    reveal_type(client)  # revealed: AsyncMongoClient[dict[str, Any]]
    db = client.test
    reveal_type(db)  # revealed: AsyncDatabase[dict[str, Any]]
    coll = db.movies
    reveal_type(coll)  # revealed: AsyncCollection[dict[str, Any]]
    doc = await coll.find_one({})
    reveal_type(doc)  # revealed: dict[str, Any] | None
    if doc is not None:
        doc["anything"] = 1  # a dict[str, Any]: any key goes
    await client.close()


async def typed_client(uri: str) -> None:
    client: AsyncMongoClient[Movie] = AsyncMongoClient(uri)
    reveal_type(client)  # revealed: AsyncMongoClient[Movie]
    db = client["test"]
    reveal_type(db)  # revealed: AsyncDatabase[Movie]
    reveal_type(client.get_database("test"))  # revealed: AsyncDatabase[Movie]
    reveal_type(client.test)  # revealed: AsyncDatabase[Movie]
    coll = db["movies"]
    reveal_type(coll)  # revealed: AsyncCollection[Movie]
    reveal_type(db.get_collection("movies"))  # revealed: AsyncCollection[Movie]
    reveal_type(db.movies)  # revealed: AsyncCollection[Movie]
    reveal_type(coll["sub"])  # revealed: AsyncCollection[Movie]
    reveal_type(coll.with_options())  # revealed: AsyncCollection[Movie]

    await coll.insert_one({"name": "Jaws", "year": 1975})
    await coll.insert_many([Movie(name="Alien", year=1979)])
    await coll.replace_one({"name": "Jaws"}, {"name": "Jaws", "year": 1975})

    movie = await coll.find_one({"name": "Jaws"})
    reveal_type(movie)  # revealed: Movie | None
    assert movie is not None
    reveal_type(movie["year"])  # revealed: int
    name: str = movie["name"]
    print(name)

    cursor = coll.find({"year": {"$gt": 1970}}).sort("year").limit(10)
    reveal_type(cursor)  # revealed: AsyncCursor[Movie]
    async for found in cursor:
        reveal_type(found)  # revealed: Movie
    reveal_type(await coll.find().to_list())  # revealed: list[Movie]
    reveal_type(await coll.find().next())  # revealed: Movie
    reveal_type(await coll.find().try_next())  # revealed: Movie | None

    pipeline: list[Mapping[str, Any]] = [{"$match": {}}]
    aggregated = await coll.aggregate(pipeline)
    reveal_type(aggregated)  # revealed: AsyncCommandCursor[Movie]
    reveal_type(await aggregated.to_list())  # revealed: list[Movie]
    documents = [{"$documents": [{"name": "x", "year": 1}]}]
    reveal_type(await db.aggregate(documents))  # revealed: AsyncCommandCursor[Movie]

    reveal_type(await coll.find_one_and_delete({}))  # revealed: Movie | None
    reveal_type(await coll.find_one_and_update({}, {"$set": {"year": 1}}))  # revealed: Movie | None
    replacement = Movie(name="x", year=1)
    reveal_type(await coll.find_one_and_replace({}, replacement))  # revealed: Movie | None

    reveal_type(await coll.list_indexes())  # revealed: AsyncCommandCursor[MutableMapping[str, Any]]
    collections = await db.list_collections()
    reveal_type(collections)  # revealed: AsyncCommandCursor[MutableMapping[str, Any]]
    reveal_type(await client.list_databases())  # revealed: AsyncCommandCursor[dict[str, Any]]

    requests: list[InsertOne[Movie] | ReplaceOne[Movie] | UpdateOne | DeleteOne] = [
        InsertOne(Movie(name="Heat", year=1995)),
        ReplaceOne({"name": "Heat"}, Movie(name="Heat", year=1995)),
        UpdateOne({"name": "Heat"}, {"$inc": {"year": 0}}),
        DeleteOne({"name": "Heat"}),
    ]
    await coll.bulk_write(requests)
    untyped: InsertOne[Mapping[str, Any]] = InsertOne({"any": "document"})
    print(untyped)
    await client.close()


async def change_streams(coll: AsyncCollection[Movie]) -> None:
    stream = await coll.watch()
    reveal_type(stream)  # revealed: AsyncChangeStream[Movie]
    pymongo_named: AsyncCollectionChangeStream[Movie] = stream
    reveal_type(pymongo_named)  # revealed: AsyncChangeStream[Movie]
    async with stream:
        reveal_type(await stream.try_next())  # revealed: Movie | None
        async for change in stream:
            reveal_type(change)  # revealed: Movie
            break


def document_class_inference(uri: str) -> None:
    raw_client = AsyncMongoClient(uri, document_class=RawBSONDocument)
    reveal_type(raw_client)  # revealed: AsyncMongoClient[RawBSONDocument]
    reveal_type(raw_client.test.test)  # revealed: AsyncCollection[RawBSONDocument]
    movie_client = AsyncMongoClient(uri, document_class=Movie)
    reveal_type(movie_client)  # revealed: AsyncMongoClient[Movie]
    options = CodecOptions(document_class=Movie)
    reveal_type(options)  # revealed: CodecOptions[Movie]
    reveal_type(options.document_class)  # revealed: type[Movie]
    reveal_type(CodecOptions(tz_aware=True))  # revealed: CodecOptions[Any]
    annotated: CodecOptions[Movie] = CodecOptions(document_class=Movie, tz_aware=True)
    reveal_type(annotated.with_options(tz_aware=False))  # revealed: CodecOptions[Any]
    movies = movie_client.test.get_collection("movies")
    reveal_type(movies)  # revealed: AsyncCollection[Movie]
    summaries = movies.with_options(codec_options=CodecOptions(document_class=MovieSummary))
    reveal_type(summaries)  # revealed: AsyncCollection[MovieSummary]
    raw_db = movie_client.test.with_options(CodecOptions(document_class=RawBSONDocument))
    reveal_type(raw_db)  # revealed: AsyncDatabase[RawBSONDocument]
    reveal_type(movies.with_options(read_preference=None))  # revealed: AsyncCollection[Movie]


async def explicit_parameters(
    client: AsyncMongoClient[dict[str, Any]],
    movie_client: AsyncMongoClient[Movie],
    db: AsyncDatabase[Movie],
    cursor: AsyncCursor[Movie],
    command_cursor: AsyncCommandCursor[MutableMapping[str, Any]],
    stream: AsyncChangeStream[Movie],
) -> None:
    reveal_type(client.test.test)  # revealed: AsyncCollection[dict[str, Any]]
    reveal_type(db.test)  # revealed: AsyncCollection[Movie]
    reveal_type(cursor.clone())  # revealed: AsyncCursor[Movie]
    reveal_type(await command_cursor.next())  # revealed: MutableMapping[str, Any]
    reveal_type(await stream.next())  # revealed: Movie
    reveal_type(await movie_client.watch())  # revealed: AsyncChangeStream[Movie]
    reveal_type(await movie_client.test.watch())  # revealed: AsyncChangeStream[Movie]


async def main() -> None:
    from asyncmongo.testing import Standalone

    async with Standalone() as deployment:
        await untyped_client(deployment.uri)
        await typed_client(deployment.uri)
        document_class_inference(deployment.uri)


if __name__ == "__main__":
    asyncio.run(main())
