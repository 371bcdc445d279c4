"""A FastAPI application on asyncmongo.

- one client for the application, opened and closed by the lifespan;
- a dependency handing each request the database;
- CRUD on ``/items``;
- ``POST /transfers``: moves stock between two items in one transaction;
- ``GET /events``: the items collection's change stream as server-sent events;
- driver errors that mean "the deployment is unavailable right now" become 503 with
  ``Retry-After``, never a 500. A primary stepping down does not even get that far: the
  driver retries the read or write once on the new primary.

Run it: ``MONGODB_URI=mongodb://... uvicorn examples.fastapi_app.app:app``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from asyncmongo import AsyncMongoClient, ReturnDocument
from asyncmongo.bson.errors import InvalidId
from asyncmongo.bson.json_util import dumps
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.database import AsyncDatabase
from asyncmongo.errors import ConnectionFailure, DuplicateKeyError, OperationFailure
from asyncmongo.sessions import AsyncClientSession

DEFAULT_URI = "mongodb://localhost:27017"


class ItemIn(BaseModel):
    name: str = Field(min_length=1)
    stock: int = Field(ge=0, default=0)


class Transfer(BaseModel):
    source: str
    target: str
    quantity: int = Field(gt=0)


class OutOfStock(Exception):
    """A transfer asked for more than the source holds."""


def create_app(uri: str | None = None, database: str = "shop") -> FastAPI:
    """The application; ``uri`` defaults to ``$MONGODB_URI``."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = AsyncMongoClient(uri or os.environ.get("MONGODB_URI", DEFAULT_URI))
        async with client:
            app.state.client = client
            app.state.db = client[database]
            await app.state.db.items.create_index("name", unique=True)
            yield

    app = FastAPI(title="asyncmongo example", lifespan=lifespan)
    app.add_exception_handler(ConnectionFailure, _unavailable)
    _routes(app)
    return app


def get_db(request: Request) -> AsyncDatabase:
    """The dependency: the application's database (its client is the lifespan's)."""
    db: AsyncDatabase = request.app.state.db
    return db


def get_client(request: Request) -> AsyncMongoClient:
    """The dependency for what needs the client itself (sessions, transactions)."""
    client: AsyncMongoClient = request.app.state.client
    return client


Db = Annotated[AsyncDatabase, Depends(get_db)]
Client = Annotated[AsyncMongoClient, Depends(get_client)]


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The deployment could not be reached in time: tell the caller to come back."""
    return JSONResponse(
        {"detail": f"database unavailable: {type(exc).__name__}"},
        status_code=503,
        headers={"Retry-After": "1"},
    )


def _object_id(text: str) -> ObjectId:
    try:
        return ObjectId(text)
    except (InvalidId, TypeError):
        raise HTTPException(404, "no such item") from None


def _public(doc: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(doc["_id"]), "name": doc["name"], "stock": doc["stock"]}


def _routes(app: FastAPI) -> None:
    @app.post("/items", status_code=201)
    async def create_item(item: ItemIn, db: Db) -> dict[str, Any]:
        doc = item.model_dump()
        try:
            result = await db.items.insert_one(doc)
        except DuplicateKeyError:
            raise HTTPException(409, f"an item named {item.name!r} exists") from None
        return _public({**doc, "_id": result.inserted_id})

    @app.get("/items")
    async def list_items(db: Db, limit: int = 100) -> list[dict[str, Any]]:
        return [_public(doc) async for doc in db.items.find().sort("name").limit(limit)]

    @app.get("/items/{item_id}")
    async def read_item(item_id: str, db: Db) -> dict[str, Any]:
        doc = await db.items.find_one({"_id": _object_id(item_id)})
        if doc is None:
            raise HTTPException(404, "no such item")
        return _public(doc)

    @app.put("/items/{item_id}")
    async def replace_item(item_id: str, item: ItemIn, db: Db) -> dict[str, Any]:
        doc = await db.items.find_one_and_update(
            {"_id": _object_id(item_id)},
            {"$set": item.model_dump()},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            raise HTTPException(404, "no such item")
        return _public(doc)

    @app.delete("/items/{item_id}", status_code=204)
    async def delete_item(item_id: str, db: Db) -> None:
        result = await db.items.delete_one({"_id": _object_id(item_id)})
        if result.deleted_count == 0:
            raise HTTPException(404, "no such item")

    @app.post("/transfers")
    async def transfer(move: Transfer, db: Db, client: Client) -> dict[str, Any]:
        source, target = _object_id(move.source), _object_id(move.target)

        async def callback(session: AsyncClientSession) -> None:
            # Runs again as a whole on TransientTransactionError: keep it idempotent.
            taken = await db.items.update_one(
                {"_id": source, "stock": {"$gte": move.quantity}},
                {"$inc": {"stock": -move.quantity}},
                session=session,
            )
            if taken.matched_count == 0:
                raise OutOfStock
            given = await db.items.update_one(
                {"_id": target}, {"$inc": {"stock": move.quantity}}, session=session
            )
            if given.matched_count == 0:
                raise HTTPException(404, "no such target item")

        try:
            async with client.start_session() as session:
                await session.with_transaction(callback)
        except OutOfStock:
            raise HTTPException(409, "not enough stock") from None
        except OperationFailure as exc:
            raise HTTPException(409, f"transfer failed: {exc}") from None
        return {"moved": move.quantity}

    @app.get("/events")
    async def events(request: Request, db: Db, limit: int | None = None) -> StreamingResponse:
        """The items' changes as server-sent events; ``limit`` ends after that many."""
        stream = await db.items.watch(full_document="updateLookup")

        async def body() -> AsyncIterator[str]:
            sent = 0
            async with stream:
                yield ": watching\n\n"
                async for change in stream:
                    payload = {
                        "operationType": change["operationType"],
                        "documentKey": change.get("documentKey"),
                        "fullDocument": change.get("fullDocument"),
                    }
                    yield f"event: change\ndata: {dumps(payload)}\n\n"
                    sent += 1
                    if (limit is not None and sent >= limit) or await request.is_disconnected():
                        return

        return StreamingResponse(body(), media_type="text/event-stream")


app = create_app()
