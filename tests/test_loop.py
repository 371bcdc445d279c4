"""The loop selection of conftest.py is in force."""

from __future__ import annotations

import asyncio
import os


async def test_runs_on_the_chosen_loop() -> None:
    loop = asyncio.get_running_loop()
    wanted = os.environ.get("ASYNCMONGO_TEST_LOOP", "asyncio")
    assert ("uvloop" in type(loop).__module__) == (wanted == "uvloop")
