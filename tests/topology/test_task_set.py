"""TaskSet: clean contexts, close() cancels and awaits everything, nothing starts after."""

from __future__ import annotations

import asyncio
import contextvars
import logging

import pytest

from asyncmongo.errors import InvalidOperation
from asyncmongo.runtime.tasks import TaskSet

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")


async def test_tasks_start_in_a_clean_context() -> None:
    tasks = TaskSet(asyncio.get_running_loop())
    REQUEST.set("request-42")
    seen: list[str] = []

    async def background() -> None:
        seen.append(REQUEST.get())

    await tasks.spawn(background(), "bg")
    assert seen == ["none"]  # the request's context does not leak into the client's tasks
    await tasks.close()


async def test_close_cancels_and_awaits_every_task() -> None:
    tasks = TaskSet(asyncio.get_running_loop())
    cleaned: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits
            cleaned.append(name)

    for name in "abc":
        tasks.spawn(forever(name), name)
    await asyncio.sleep(0)
    assert len(tasks) == 3
    await tasks.close()
    assert sorted(cleaned) == ["a", "b", "c"] and len(tasks) == 0
    with pytest.raises(InvalidOperation):
        tasks.spawn(forever("late"))
    assert tasks.spawn_unless_closed(forever("late")) is None


async def test_a_failing_task_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    tasks = TaskSet(asyncio.get_running_loop())

    async def boom() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="asyncmongo.tasks"):
        task = tasks.spawn(boom(), "boom")
        with pytest.raises(RuntimeError):
            await task
    assert any("boom" in r.getMessage() for r in caplog.records)
    await tasks.close()
