"""examples/fastapi_app against a simulated replica set: CRUD, a transaction, server-sent
change events, and a primary step-down in the middle of requests that yields no 500."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("fastapi", reason="the example needs fastapi (the test extra has it)")
httpx = pytest.importorskip("httpx", reason="the example's tests need httpx (the test extra)")

from asyncmongo.testing import ReplicaSet  # noqa: E402
from examples.fastapi_app.app import create_app  # noqa: E402


@pytest.fixture
async def replica_set() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(members=3) as rs:
        yield rs


@pytest.fixture
async def http(replica_set: ReplicaSet) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(replica_set.uri, database="shop_test")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            yield client


async def test_crud(http: httpx.AsyncClient) -> None:
    created = await http.post("/items", json={"name": "pen", "stock": 3})
    assert created.status_code == 201
    item = created.json()
    assert (await http.post("/items", json={"name": "pen"})).status_code == 409
    assert (await http.get(f"/items/{item['id']}")).json() == item
    replaced = await http.put(f"/items/{item['id']}", json={"name": "pen", "stock": 5})
    assert replaced.json()["stock"] == 5
    assert [i["name"] for i in (await http.get("/items")).json()] == ["pen"]
    assert (await http.delete(f"/items/{item['id']}")).status_code == 204
    assert (await http.get(f"/items/{item['id']}")).status_code == 404
    assert (await http.get("/items/not-an-id")).status_code == 404


async def test_transfer_is_one_transaction(http: httpx.AsyncClient) -> None:
    a = (await http.post("/items", json={"name": "a", "stock": 5})).json()
    b = (await http.post("/items", json={"name": "b", "stock": 0})).json()
    moved = await http.post("/transfers", json={"source": a["id"], "target": b["id"],
                                                 "quantity": 2})
    assert moved.status_code == 200
    refused = await http.post("/transfers", json={"source": a["id"], "target": b["id"],
                                                   "quantity": 9})
    assert refused.status_code == 409
    missing_target = "0" * 24
    failed = await http.post("/transfers", json={"source": a["id"], "target": missing_target,
                                                  "quantity": 1})
    assert failed.status_code == 404  # the source's decrement was rolled back
    stocks = {i["name"]: i["stock"] for i in (await http.get("/items")).json()}
    assert stocks == {"a": 3, "b": 2}


async def test_change_stream_as_server_sent_events(http: httpx.AsyncClient) -> None:
    listening = asyncio.create_task(http.get("/events", params={"limit": 2}))
    names = iter(f"item-{n}" for n in range(1000))
    while not listening.done():  # the stream opens at some point: write until it saw two
        await http.post("/items", json={"name": next(names)})
        await asyncio.sleep(0.02)
    response = await listening
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [block for block in response.text.split("\n\n") if block.startswith("event:")]
    assert len(events) == 2
    change = json.loads(events[0].split("data: ", 1)[1])
    assert change["operationType"] == "insert"
    assert change["fullDocument"]["name"].startswith("item-")


async def test_a_step_down_during_requests_produces_no_500(
    http: httpx.AsyncClient, replica_set: ReplicaSet
) -> None:
    a = (await http.post("/items", json={"name": "a", "stock": 1000})).json()
    b = (await http.post("/items", json={"name": "b", "stock": 0})).json()
    statuses: list[int] = []

    async def traffic(worker: int) -> None:
        for n in range(15):
            responses = [
                await http.post("/items", json={"name": f"w{worker}-{n}"}),
                await http.get("/items", params={"limit": 5}),
                await http.post("/transfers", json={"source": a["id"], "target": b["id"],
                                                    "quantity": 1}),
            ]
            statuses.extend(r.status_code for r in responses)

    async def fail_over() -> None:
        await asyncio.sleep(0.05)
        await replica_set.step_down()
        await asyncio.sleep(0.1)
        await replica_set.step_down()

    await asyncio.gather(*(traffic(w) for w in range(4)), fail_over())
    assert len(statuses) == 4 * 15 * 3
    assert all(status < 500 for status in statuses), sorted(set(statuses))
    assert set(statuses) <= {200, 201}
    stocks = {i["name"]: i["stock"] for i in (await http.get("/items")).json()
              if i["name"] in ("a", "b")}
    assert stocks == {"a": 1000 - 60, "b": 60}
